// Chats: list, create, get, patch, star, delete, append a message. Each handler reads like the
// spec's table and rules for it.
import { storedToolNames } from '../chat/tools.ts';
import { toStoredMessage } from '../chat/transcript.ts';
import type { AppContext } from '../service/context.ts';
import { readJson } from '../http/body.ts';
import { CHAT_NOT_FOUND, notFound } from '../http/errors.ts';
import { CHAT_DELETED } from '../base/messages.ts';
import { endRunOfDeleted } from '../service/run-owners.ts';
import type { Route } from '../http/router.ts';
import { appendMessageSchema, createChatSchema, normalizePrompt, patchChatSchema, starSchema } from '../domain/schemas.ts';
import { createChat, deleteChat, getChatDetail, listChats, updateChat } from '../store/chats.ts';
import { appendMessages } from '../store/messages.ts';
import { starChat } from '../store/stars.ts';

export const MESSAGE_BODY_LIMIT = 32 * 1024 * 1024;

export function chatRoutes(app: AppContext): Route[] {
  const { pool } = app;
  return [
    {
      method: 'GET',
      path: '/v1/chats',
      handler: async (req, reply) => reply.json(200, { chats: await listChats(pool, { owner: req.caller.userId }) }),
    },
    {
      method: 'POST',
      path: '/v1/chats',
      bodyLimit: MESSAGE_BODY_LIMIT,
      handler: async (req, reply) => {
        const body = await readJson(req, createChatSchema);
        const title = body.title?.trim();
        const chat = await createChat(pool, {
          title: title ? title : undefined,
          provider: body.provider,
          model: body.model,
          additionalSystemPrompt: normalizePrompt(body.additionalSystemPrompt),
          enabledTools: storedToolNames(body.enabledTools, app.tools),
          messages: body.messages?.map(toStoredMessage),
          owner: req.caller.userId,
        });
        reply.json(200, { chat });
      },
    },
    {
      method: 'GET',
      path: '/v1/chats/:chatId',
      handler: async (req, reply) => {
        const chat = await getChatDetail(pool, req.params.chatId!, req.caller.userId);
        if (!chat) throw notFound(CHAT_NOT_FOUND);
        reply.json(200, { chat });
      },
    },
    {
      method: 'PATCH',
      path: '/v1/chats/:chatId',
      handler: async (req, reply) => {
        const body = await readJson(req, patchChatSchema);
        const chat = await updateChat(
          pool,
          req.params.chatId!,
          {
            title: body.title,
            additionalSystemPrompt: body.additionalSystemPrompt === undefined ? undefined : normalizePrompt(body.additionalSystemPrompt),
            enabledTools: body.enabledTools === undefined ? undefined : storedToolNames(body.enabledTools, app.tools),
          },
          req.caller.userId,
        );
        if (!chat) throw notFound(CHAT_NOT_FOUND);
        reply.json(200, { chat });
      },
    },
    {
      method: 'PATCH',
      path: '/v1/chats/:chatId/star',
      handler: async (req, reply) => {
        const { starred } = await readJson(req, starSchema);
        const id = req.params.chatId!;
        const chat = await starChat(pool, id, starred, req.caller.userId);
        if (!chat) throw notFound(CHAT_NOT_FOUND);
        reply.json(200, { chat });
      },
    },
    {
      method: 'DELETE',
      path: '/v1/chats/:chatId',
      handler: async (req, reply) => {
        const id = req.params.chatId!;
        if (!(await deleteChat(pool, id, req.caller.userId))) throw notFound(CHAT_NOT_FOUND);
        await endRunOfDeleted(app, 'chat', id, CHAT_DELETED);
        reply.json(200, { deleted: true });
      },
    },
    {
      method: 'POST',
      path: '/v1/chats/:chatId/messages',
      bodyLimit: MESSAGE_BODY_LIMIT,
      handler: async (req, reply) => {
        const body = await readJson(req, appendMessageSchema);
        const id = req.params.chatId!;
        let metadata = body.metadata ?? null;
        if (body.attachments && body.attachments.length > 0) {
          // An array or absent: appendMessageSchema refuses anything else beside attachments to merge.
          const existing = (metadata?.attachments as unknown[] | undefined) ?? [];
          metadata = { ...(metadata ?? {}), attachments: [...existing, ...body.attachments] };
        }
        const stored = await appendMessages(pool, id, [{ role: body.role, content: body.content, name: body.name ?? null, metadata }], req.caller.userId);
        if (!stored) throw notFound(CHAT_NOT_FOUND);
        reply.json(200, { message: stored[0] });
      },
    },
  ];
}
