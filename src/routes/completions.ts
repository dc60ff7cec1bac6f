// Chat completions, whole and streamed, and re-attaching to a running stream. The supervisor
// registers a persisted run synchronously, before the first await, so a second start for the same
// chat gets 409 however close together the two requests arrive.
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { ChatRunRequest } from '../../actors/chat-run.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { Caller } from '../auth/caller.ts';
import type { AppContext } from '../service/context.ts';
import { readFingerprintedJson, readJson } from '../http/body.ts';
import { badRequest, notFound, PROVIDER_NOT_CONFIGURED, ACTIVE_CHAT_STREAM_NOT_FOUND, CHAT_NOT_FOUND } from '../http/errors.ts';
import { outcomeError } from '../http/outcomes.ts';
import { mayReach } from '../service/run-owners.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf } from '../http/idempotency.ts';
import { withoutIdempotencyKey } from '../http/early-refusal.ts';
import { ACTIVE_CHAT_STREAM_EXISTS } from '../base/messages.ts';
import { providerKeyVariable } from '../providers/index.ts';
import type { ProviderName } from '../providers/types.ts';
import { completionSchema, streamCompletionSchema, type CompletionBody } from '../domain/schemas.ts';
import { getChat } from '../store/chats.ts';
import { MESSAGE_BODY_LIMIT } from './chats.ts';
import { claimKey, recordOutcome, releaseKey, type KeyedRequest } from '../service/idempotent-start.ts';
import { keyedRequest, replayStream, replayWhole, streamOutcome, wholeOutcome } from './idempotent-replay.ts';

function requireProvider(app: AppContext, provider: ProviderName): void {
  if (!app.providers.has(provider)) {
    throw PROVIDER_NOT_CONFIGURED(provider, providerKeyVariable(provider));
  }
}

type RunFields = Pick<ChatRunRequest, 'mode' | 'chatId' | 'createChat' | 'storeChat' | 'stored' | 'owner'>;

/** The run's request; its LlmCall id is chosen now (null: no LlmCall), so `meta` needs no database. */
function runRequest(body: CompletionBody, fields: RunFields, callId: string | null): ChatRunRequest {
  return {
    ...fields,
    callId,
    provider: body.provider,
    model: body.model,
    messages: body.messages,
    additionalSystemPrompt: body.additionalSystemPrompt,
    enabledTools: body.enabledTools,
    temperature: body.temperature,
    maxTokens: body.maxTokens,
  };
}

/**
 * A start's body and, when it is keyed, the fingerprint of the body as sent, which a retry's must match
 * (an unkeyed start skips the hash).
 */
async function readStart<S extends z.ZodType>(req: Req, schema: S, key: string | null): Promise<{ body: z.infer<S>; fingerprint: string }> {
  return key ? readFingerprintedJson(req, schema) : { body: await readJson(req, schema), fingerprint: '' };
}

/** Completion starts read the Idempotency-Key header. */
const KEYED_HEADERS = [IDEMPOTENCY_KEY_HEADER] as const;

export function completionRoutes(app: AppContext): Route[] {
  const { runs, pool } = app;

  /**
   * The stored settings of an existing chat of `owner` (404 when it does not exist or is another
   * user's); none for a new one. `meta` goes out before the run's first write, so a chat not stored yet
   * may still be held by the run that creates it: that is the 409 a second start for the chat gets, not a 404.
   */
  async function storedSettings(chatId: string | null, owner: string): Promise<ChatRunRequest['stored']> {
    if (!chatId) return undefined;
    const chat = await getChat(pool, chatId, owner);
    if (!chat) {
      const starting = (await runs.find('chat', chatId)) !== null && (await mayReach(app, 'chat', chatId, owner));
      throw starting ? refused({ outcome: 'busy', message: ACTIVE_CHAT_STREAM_EXISTS }) : notFound(CHAT_NOT_FOUND);
    }
    return { additionalSystemPrompt: chat.additionalSystemPrompt, enabledTools: chat.enabledTools };
  }

  const refused = (outcome: Parameters<typeof outcomeError>[0]) => {
    if (outcome.outcome !== 'busy') return outcomeError(outcome);
    app.metrics.startConflicts.inc({ kind: 'chat' });
    return outcomeError(outcome, ACTIVE_CHAT_STREAM_EXISTS);
  };

  async function complete(req: Req, reply: Reply) {
    const key = idempotencyKeyOf(req);
    const { body, fingerprint } = await readStart(req, completionSchema, key);
    requireProvider(app, body.provider);
    const chatId = body.chatId ?? null;
    const owner = req.caller.userId;
    const stored = await storedSettings(chatId, owner);
    const callId = randomUUID();
    const keyed = key ? keyedRequest(key, 'whole', 'POST /v1/chat-completions', fingerprint, { chatId, callId, owner }) : null;
    if (keyed) {
      const claim = await claimKey(app, keyed);
      if (!claim.start) return replayWhole(app, claim.record, reply, owner);
    }
    await withinBudget(req.caller, keyed);
    const request = runRequest(body, { mode: 'whole', chatId, createChat: false, storeChat: chatId !== null, stored, owner }, callId);
    // No chat stores its answer and no key replays it: once its client has gone nobody can read it, so
    // stop paying for it (and free its run slots), as for an unpersisted stream.
    const unreadable = chatId === null && keyed === null;
    const started = await startRun(req.caller, keyed, request, body.provider, unreadable ? whileConnected(reply) : undefined, unreadable);
    const result = await started.handle.result;
    if (!result.ok) throw outcomeError(result);
    const out = wholeOutcome(result);
    reply.json(out.status, out.body);
  }

  async function stream(req: Req, reply: Reply) {
    const key = idempotencyKeyOf(req);
    const { body, fingerprint } = await readStart(req, streamCompletionSchema, key);
    requireProvider(app, body.provider);
    const persist = body.persist;
    if (key && !persist) throw badRequest('Idempotency-Key needs a persisted stream: a stream with persist: false cannot be replayed');
    const existing = body.chatId ?? null;
    const chatId = persist ? (existing ?? randomUUID()) : null;
    const owner = req.caller.userId;
    const stored = await storedSettings(existing, owner);
    const callId = persist ? randomUUID() : null;
    const keyed = key ? keyedRequest(key, 'stream', 'POST /v1/chat-completions/stream', fingerprint, { chatId, callId: callId!, owner }) : null;
    if (keyed) {
      const claim = await claimKey(app, keyed);
      if (!claim.start) return replayStream(app, claim.record, reply, owner);
    }
    await withinBudget(req.caller, keyed);
    const request = runRequest(body, { mode: 'stream', chatId, createChat: persist && !existing, storeChat: persist, stored, owner }, callId);
    // Refusals are decided before the stream opens, so they answer with a status, not an event.
    const sink = app.sse.create(reply);
    // An unpersisted stream cannot be re-attached: when its client goes, stop paying for it.
    const started = await startRun(req.caller, keyed, request, body.provider, sink, !persist);
    if (!persist) app.limits.spendUnrecorded(req.caller, started.handle.result.then((r) => (r.ok ? { tokens: r.value.usage?.totalTokens ?? 0, cost: r.value.cost ?? null } : { tokens: 0, cost: null })));
    sink.open();
  }

  /**
   * The caller's daily token and cost budgets, checked once the key is claimed: a retry of a keyed start replays
   * its run's answer even when that run spent the last of the budget. A refusal frees the key.
   */
  async function withinBudget(caller: Caller, keyed: KeyedRequest | null): Promise<void> {
    const budget = app.limits.checkBudgets(caller);
    if (!budget) return;
    await budget.catch(async (err: unknown) => {
      if (keyed) await releaseKey(app, keyed);
      throw err;
    });
  }

  /** Starts the run (a refusal frees the request's key); a keyed run records its outcome on the key. */
  async function startRun(caller: Caller, keyed: KeyedRequest | null, request: ChatRunRequest, provider: string, subscriber?: Subscriber, cancelWhenAlone = false) {
    const limits = app.limits.runOptions(caller);
    const started = await Promise.resolve(runs.start({ kind: 'chat', key: request.chatId, request, ifRunning: 'reject', label: provider, subscriber, cancelWhenAlone, ...limits })).catch(async (err: unknown) => {
      // Nothing started (e.g. the cluster is out of reach): the key is free for the next try.
      if (keyed) await releaseKey(app, keyed);
      throw err;
    });
    if (!started.ok) {
      if (keyed) await releaseKey(app, keyed);
      throw refused(started);
    }
    if (keyed) {
      const meta = { type: 'meta' as const, chatId: request.storeChat ? request.chatId : null, callId: request.callId, provider: request.provider, model: request.model };
      recordOutcome(app, keyed, started.handle.result, keyed.mode === 'whole' ? wholeOutcome : streamOutcome(meta));
    }
    return started;
  }

  async function attach(req: Req, reply: Reply) {
    const chatId = req.params.chatId!;
    if (!(await mayReach(app, 'chat', chatId, req.caller.userId))) throw notFound(ACTIVE_CHAT_STREAM_NOT_FOUND);
    const sink = app.sse.create(reply);
    if ((await runs.attach('chat', chatId, sink)) === 'not_found') throw notFound(ACTIVE_CHAT_STREAM_NOT_FOUND);
    sink.open();
  }

  async function stop(req: Req, reply: Reply) {
    const chatId = req.params.chatId!;
    if (!(await mayReach(app, 'chat', chatId, req.caller.userId)) || !(await runs.stop('chat', chatId))) throw notFound(ACTIVE_CHAT_STREAM_NOT_FOUND);
    app.metrics.runsStopped.inc({ kind: 'chat' });
    reply.json(200, { stopped: true });
  }

  return [
    { method: 'POST', path: '/v1/chat-completions', bodyLimit: MESSAGE_BODY_LIMIT, handler: complete, headers: KEYED_HEADERS, startsRun: withoutIdempotencyKey },
    { method: 'POST', path: '/v1/chat-completions/stream', bodyLimit: MESSAGE_BODY_LIMIT, handler: stream, headers: KEYED_HEADERS, startsRun: withoutIdempotencyKey },
    { method: 'POST', path: '/v1/chats/:chatId/stream/attach', handler: attach },
    { method: 'POST', path: '/v1/chats/:chatId/stream/stop', handler: stop },
  ];
}

/** A subscriber that hears nothing and leaves when the client does: what cancels a run nobody else can read. */
export function whileConnected(reply: Reply): Subscriber {
  let hooks: Array<() => void> | null = [];
  const close = () => {
    const run = hooks;
    hooks = null;
    if (run) for (const h of run) h();
  };
  reply.onAbort(close);
  return { dropped: false, write() {}, end: close, onClose: (fn) => (hooks ? void hooks.push(fn) : fn()) };
}
