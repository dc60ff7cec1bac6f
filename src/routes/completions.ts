// Chat completions, whole and streamed, and re-attaching to a running stream. The supervisor
// registers a persisted run synchronously, before the first await, so a second start for the same
// chat gets 409 however close together the two requests arrive.
import { randomUUID } from 'node:crypto';
import type { ChatRunRequest } from '../../actors/chat-run.ts';
import type { AppContext } from '../context.ts';
import { readJson } from '../http/body.ts';
import { HttpError, notFound, ACTIVE_CHAT_STREAM_NOT_FOUND, CHAT_NOT_FOUND } from '../http/errors.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { createSse } from '../http/sse.ts';
import { ACTIVE_CHAT_STREAM_EXISTS } from '../messages.ts';
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
  const { runs, pool } = app;

  /**
   * The stored settings of an existing chat (404 when it does not exist); none for a new one. `meta`
   * goes out before the run's first write, so a chat not stored yet may still be held by the run that
   * creates it: that is the 409 a second start for the chat gets, not a 404.
   */
  async function storedSettings(chatId: string | null): Promise<ChatRunRequest['stored']> {
    if (!chatId) return undefined;
    const chat = await getChat(pool, chatId);
    if (!chat) throw (await runs.find('chat', chatId)) ? refused({ outcome: 'busy', message: ACTIVE_CHAT_STREAM_EXISTS }) : notFound(CHAT_NOT_FOUND);
    return { additionalSystemPrompt: chat.additionalSystemPrompt, enabledTools: chat.enabledTools };
  }

  const refused = (outcome: Parameters<typeof outcomeError>[0]) => {
    if (outcome.outcome !== 'busy') return outcomeError(outcome);
    app.metrics.startConflicts.inc({ kind: 'chat' });
    return outcomeError(outcome, ACTIVE_CHAT_STREAM_EXISTS);
  };

  async function complete(req: Req, reply: Reply) {
    const body = await readJson(req, completionSchema);
    requireProvider(app, body.provider);
    const chatId = body.chatId ?? null;
    const stored = await storedSettings(chatId);
    const request = runRequest(body, { mode: 'whole', chatId, createChat: false, storeChat: chatId !== null, stored }, true);
    const started = await runs.start({ kind: 'chat', key: chatId, request, ifRunning: 'reject', label: body.provider });
    if (!started.ok) throw refused(started);
    const result = await started.handle.result;
    if (!result.ok) throw outcomeError(result);
    const v = result.value;
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
    const stored = await storedSettings(existing);
    const request = runRequest(body, { mode: 'stream', chatId, createChat: persist && !existing, storeChat: persist, stored }, persist);
    // Refusals are decided before the stream opens, so they answer with a status, not an event.
    const sink = createSse(reply, app.config.SSE_MAX_QUEUED_BYTES);
    const started = await runs.start({
      kind: 'chat',
      key: chatId,
      request,
      ifRunning: 'reject',
      label: body.provider,
      subscriber: sink,
      // An unpersisted stream cannot be re-attached: when its client goes, stop paying for it.
      cancelWhenAlone: !persist,
    });
    if (!started.ok) throw refused(started);
    sink.open();
  }

  async function attach(req: Req, reply: Reply) {
    const chatId = req.params.chatId!;
    const sink = createSse(reply, app.config.SSE_MAX_QUEUED_BYTES);
    if ((await runs.attach('chat', chatId, sink)) === 'not_found') throw notFound(ACTIVE_CHAT_STREAM_NOT_FOUND);
    sink.open();
  }

  async function stop(req: Req, reply: Reply) {
    if (!(await runs.stop('chat', req.params.chatId!))) throw notFound(ACTIVE_CHAT_STREAM_NOT_FOUND);
    app.metrics.runsStopped.inc({ kind: 'chat' });
    reply.json(200, { stopped: true });
  }

  return [
    { method: 'POST', path: '/v1/chat-completions', bodyLimit: MESSAGE_BODY_LIMIT, handler: complete },
    { method: 'POST', path: '/v1/chat-completions/stream', bodyLimit: MESSAGE_BODY_LIMIT, handler: stream },
    { method: 'POST', path: '/v1/chats/:chatId/stream/attach', handler: attach },
    { method: 'POST', path: '/v1/chats/:chatId/stream/stop', handler: stop },
  ];
}
