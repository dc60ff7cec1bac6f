// Chat completions, whole and streamed, and re-attaching to a running stream. The supervisor
// registers a persisted run synchronously, before the first await, so a second start for the same
// chat gets 409 however close together the two requests arrive.
import { randomUUID } from 'node:crypto';
import type { ChatRunRequest, ChatRunValue } from '../../actors/chat-run.ts';
import type { RunEntry } from '../../actors/supervisor.ts';
import type { AppContext } from '../context.ts';
import { readJson } from '../http/body.ts';
import { HttpError, notFound, ACTIVE_CHAT_STREAM_NOT_FOUND, CHAT_NOT_FOUND } from '../http/errors.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { openSse } from '../http/sse.ts';
import { providerKeyVariable } from '../providers/index.ts';
import type { ProviderName } from '../providers/types.ts';
import { completionSchema, streamCompletionSchema, type CompletionBody } from '../schemas.ts';
import { getChat } from '../store/chats.ts';
import { MESSAGE_BODY_LIMIT } from './chats.ts';

function requireProvider(app: AppContext, provider: ProviderName): void {
  if (!app.providers.has(provider)) {
    throw new HttpError(400, `${provider} is not configured: set ${providerKeyVariable(provider)}`);
  }
}

type RunFields = Pick<ChatRunRequest, 'mode' | 'chatId' | 'createChat' | 'storeChat' | 'stored'>;

/** The run's request; `storeCall` gives it an LlmCall id now, so `meta` needs no database. */
function runRequest(body: CompletionBody, fields: RunFields, storeCall: boolean): ChatRunRequest {
  return {
    ...fields,
    callId: storeCall ? randomUUID() : null,
    provider: body.provider,
    model: body.model,
    messages: body.messages,
    additionalSystemPrompt: body.additionalSystemPrompt,
    enabledTools: body.enabledTools,
    temperature: body.temperature,
    maxTokens: body.maxTokens,
  };
}

export function completionRoutes(app: AppContext): Route[] {
  const { supervisor, pool } = app;

  /**
   * Registers the run under `key` synchronously (409 on a second run for the chat), then checks that
   * `existing` names a stored chat; a 404 drops the registration.
   */
  async function reserveChat(key: string | null, existing: string | null): Promise<{ entry: RunEntry; stored?: ChatRunRequest['stored'] }> {
    const entry = supervisor.reserve('chat', key);
    try {
      if (!existing) return { entry };
      const chat = await getChat(pool, existing);
      if (!chat) throw notFound(CHAT_NOT_FOUND);
      return { entry, stored: { additionalSystemPrompt: chat.additionalSystemPrompt, enabledTools: chat.enabledTools } };
    } catch (err) {
      supervisor.abandon(entry);
      throw err;
    }
  }

  async function complete(req: Req, reply: Reply) {
    const body = await readJson(req, completionSchema);
    requireProvider(app, body.provider);
    const chatId = body.chatId ?? null;
    const { entry, stored } = await reserveChat(chatId, chatId);
    supervisor.launch(entry, runRequest(body, { mode: 'whole', chatId, createChat: false, storeChat: chatId !== null, stored }, true), undefined, body.provider);
    const result = await entry.result;
    if (!result.ok) throw new HttpError(result.status, result.message);
    const v = result.value as ChatRunValue;
    reply.json(200, {
      chatId: v.chatId,
      provider: v.provider,
      model: v.model,
      message: { role: 'assistant', content: v.text },
      usage: v.usage,
      raw: v.raw ?? {},
    });
  }

  async function stream(req: Req, reply: Reply) {
    const body = await readJson(req, streamCompletionSchema);
    requireProvider(app, body.provider);
    const persist = body.persist;
    const existing = body.chatId ?? null;
    const chatId = persist ? (existing ?? randomUUID()) : null;
    const { entry, stored } = await reserveChat(chatId, existing);
    const sink = openSse(reply, app.config.SSE_MAX_QUEUED_BYTES);
    supervisor.launch(
      entry,
      runRequest(body, { mode: 'stream', chatId, createChat: persist && !existing, storeChat: persist, stored }, persist),
      sink,
      body.provider,
      // An unpersisted stream cannot be re-attached: when its client goes, stop paying for it.
      { cancelWhenAlone: !persist },
    );
  }

  async function attach(req: Req, reply: Reply) {
    const entry = supervisor.find('chat', req.params.chatId!);
    if (!entry) throw notFound(ACTIVE_CHAT_STREAM_NOT_FOUND);
    supervisor.attach(entry, openSse(reply, app.config.SSE_MAX_QUEUED_BYTES));
  }

  return [
    { method: 'POST', path: '/v1/chat-completions', bodyLimit: MESSAGE_BODY_LIMIT, handler: complete },
    { method: 'POST', path: '/v1/chat-completions/stream', bodyLimit: MESSAGE_BODY_LIMIT, handler: stream },
    { method: 'POST', path: '/v1/chats/:chatId/stream/attach', handler: attach },
  ];
}
