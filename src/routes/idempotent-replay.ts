// The HTTP side of idempotent starts (the service is src/service/idempotent-start.ts): what a keyed run
// records as its answer, and how a retry of the same request replays it: a whole completion gets the
// first request's answer once there is one; a stream attaches while the run is active, else gets its
// recorded end as one replay.
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';
import type { ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { AppContext } from '../service/context.ts';
import { nextRecord, recordedStream, recordedWhole, type KeyedRequest, type StreamOutcome, type WholeOutcome } from '../service/idempotent-start.ts';
import { REPLAYED_HEADERS, requestHash } from '../http/idempotency.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Reply } from '../http/reply.ts';
import type { Queryable } from '../db/types.ts';
import { finishIdempotencyKey, type IdempotencyMode, type IdempotencyRecord } from '../store/idempotency.ts';
import { keyOfContinuation, type ContinuedRun } from '../store/takeover.ts';

/** `bodyDigest`: the body's fingerprint as the client sent it (readFingerprintedJson). */
export const keyedRequest = (key: string, mode: IdempotencyMode, endpoint: string, bodyDigest: string, ids: { chatId: string | null; callId: string; owner: string }): KeyedRequest => ({
  key,
  mode,
  hash: requestHash(endpoint, bodyDigest),
  ...ids,
});

/** The whole completion's answer for a run result: what the route replies and the key replays. */
export function wholeOutcome(r: RunResult<ChatRunValue>): WholeOutcome {
  if (!r.ok) {
    const err = outcomeError(r);
    return { status: err.status, body: { message: err.message } };
  }
  const v = r.value;
  return {
    status: 200,
    body: { chatId: v.chatId, provider: v.provider, model: v.model, message: { role: 'assistant', content: v.text }, usage: v.usage, raw: v.raw ?? {} },
  };
}

/** What a keyed stream replays: its meta, then one delta and done, or error. */
export function streamOutcome(meta: StreamOutcome['meta']): (r: RunResult<ChatRunValue>) => StreamOutcome {
  return (r) => {
    if (!r.ok) return { meta, error: { type: 'error', message: r.message } };
    const done: NonNullable<StreamOutcome['done']> = { type: 'done', text: r.value.text };
    if (r.value.usage) done.usage = r.value.usage;
    if (r.value.stopped) done.stopped = true;
    return { meta, done };
  };
}

/**
 * Aborts when the client goes: a retry waiting for a run stops waiting then. A signal, not a promise:
 * each wait takes its listener off again, where reactions to a promise would pile up, one per poll,
 * until the client goes.
 */
function clientGone(reply: Reply): AbortSignal {
  const gone = new AbortController();
  reply.onAbort(() => gone.abort());
  return gone.signal;
}

/** A retry of a whole completion: the first request's answer, once there is one. */
export async function replayWhole(app: AppContext, record: IdempotencyRecord, reply: Reply, owner: string): Promise<void> {
  const gone = clientGone(reply);
  let out = recordedWhole(record);
  while (!out) {
    const next = await nextRecord(app, { key: record.key, owner }, gone);
    if (!next) return;
    out = recordedWhole(next);
  }
  reply.json(out.status, out.body, REPLAYED_HEADERS);
}

/** A retry of a stream: attach while the run is active, else its recorded outcome as one replay. */
export async function replayStream(app: AppContext, record: IdempotencyRecord, reply: Reply, owner: string): Promise<void> {
  reply.shared = [...(reply.shared ?? []), 'idempotent-replayed', 'true'];
  const sink = app.sse.create(reply);
  const gone = clientGone(reply);
  for (;;) {
    const out = recordedStream(record);
    if (out) {
      sink.write(sseFrame('meta', out.meta) + (out.done ? (out.done.text ? deltaFrame(out.done.text) : '') + sseFrame('done', out.done) : sseFrame('error', out.error)));
      sink.end();
      return;
    }
    // The first request may not have registered its run yet, or it has just ended: look again when
    // that changes.
    if (record.chatId && (await app.runs.attach('chat', record.chatId, sink)) !== 'not_found') return sink.open();
    const next = await nextRecord(app, { key: record.key, owner }, gone);
    if (!next) return;
    record = next;
  }
}

/**
 * A continued run's outcome (src/service/takeover.ts), recorded on the Idempotency-Key of the start it
 * continues, as that start would have recorded it: its instance died before it could.
 */
export async function recordContinuedOutcome(pool: Queryable, run: ContinuedRun, r: RunResult<ChatRunValue>): Promise<void> {
  const k = await keyOfContinuation(pool, run.newCallId);
  if (!k) return;
  const meta = { type: 'meta' as const, chatId: run.chatId, callId: run.newCallId, provider: run.provider, model: run.model };
  const response = k.mode === 'whole' ? wholeOutcome(r) : streamOutcome(meta)(r);
  const status = r.ok ? (r.value.stopped ? 'stopped' : 'succeeded') : 'failed';
  await finishIdempotencyKey(pool, { key: k.key, callId: run.newCallId, status, response, owner: k.owner });
}
