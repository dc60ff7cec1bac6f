// POST /v1/chats/title/suggest: a short title for an untitled chat, from TITLE_MODEL on provider_a.
// A chat that already has a title is returned as it is, without a model call, even while new runs are
// refused (draining, overload): so the route is not refused from its headers. The call itself is a
// title run (actors/title-run.ts): it counts against the run limit and ends with the service.
import type { AppContext } from '../service/context.ts';
import { readJson } from '../http/body.ts';
import { badRequest, notFound, CHAT_NOT_FOUND, TITLE_PROVIDER_MISSING } from '../http/errors.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Route } from '../http/router.ts';
import { providerKeyVariable } from '../providers/index.ts';
import { suggestTitleSchema } from '../domain/schemas.ts';
import { getChat } from '../store/chats.ts';

export function titleRoutes(app: AppContext): Route[] {
  const { pool, runs } = app;
  return [
    {
      method: 'POST',
      path: '/v1/chats/title/suggest',
      handler: async (req, reply) => {
        const body = await readJson(req, suggestTitleSchema);
        const chat = await getChat(pool, body.chatId, req.caller.userId);
        if (!chat) throw notFound(CHAT_NOT_FOUND);
        if (chat.title?.trim()) return reply.json(200, { chat });
        if (!body.content.trim()) throw badRequest('content must not be blank: the title is made from it');
        if (!app.providers.has('provider_a')) throw TITLE_PROVIDER_MISSING(providerKeyVariable('provider_a'));

        await app.limits.checkBudgets(req.caller);
        const owner = req.caller.userId;
        const request = { chatId: chat.id, content: body.content, owner };
        // Not counted among the user's active runs (chat streams, completions and search runs are).
        const started = await runs.start({ kind: 'title', key: chat.id, request, ifRunning: 'join', label: 'provider_a', owner });
        if (!started.ok) throw outcomeError(started);
        const result = await started.handle.result;
        if (!result.ok) throw outcomeError(result);
        reply.json(200, { chat: result.value.chat });
      },
    },
  ];
}
