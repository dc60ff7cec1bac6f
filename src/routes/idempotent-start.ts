// Idempotent starts of a completion (ARCHITECTURE.md, "Run control: idempotent start"). A request
// with an Idempotency-Key either claims the key and starts the run, or finds the key already used:
// with another request → 422; with this request → attach to the run while it is active (the stream)
// or wait for it (the whole completion), and once it has ended replay its recorded outcome without
// calling the provider. The record lives in Postgres, so this holds across instances and restarts.
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { AppContext } from '../context.ts';
import { HttpError } from '../http/errors.ts';
import { KEY_REUSED, REPLAYED_HEADERS, requestHash } from '../http/idempotency.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Reply } from '../http/reply.ts';
import { createSse } from '../http/sse.ts';
import {
  claimIdempotencyKey,
  finishIdempotencyKey,
  readIdempotencyKey,
  releaseIdempotencyKey,
  type IdempotencyMode,
  type IdempotencyRecord,
} from '../store/idempotency.ts';
import type { ChatRunValue } from '../../actors/chat-run.ts';

/** How often a retry looks at a run it waits for (whole completions, or a stream not attachable yet). */
const POLL_MS = 100;

export interface KeyedRequest {
  key: string;
  mode: IdempotencyMode;
  /** The request's fingerprint: its endpoint and canonical body. */
  hash: string;
  /** The ids the run will have if this request starts it. */
  chatId: string | null;
  callId: string;
}

/** What a keyed whole completion answered (replayed as is). */
interface WholeOutcome {
  status: number;
  body: unknown;
}

/** What a keyed stream ended with (replayed as meta, one delta, done; or meta, error). */
interface StreamOutcome {
  meta: { type: 'meta'; chatId: string | null; callId: string | null; provider: string; model: string };
  done?: { type: 'done'; text: string; usage?: unknown; stopped?: true };
  error?: { type: 'error'; message: string };
}

export const keyedRequest = (key: string, mode: IdempotencyMode, endpoint: string, body: unknown, ids: { chatId: string | null; callId: string }): KeyedRequest => ({
  key,
  mode,
  hash: requestHash(endpoint, body),
  ...ids,
});

/** `start`: this request owns the key and starts the run; otherwise the record of the first request. */
export async function claimKey(app: AppContext, k: KeyedRequest): Promise<{ start: true } | { start: false; record: IdempotencyRecord }> {
  // Twice: a record can expire (and be taken over) between a failed claim and the read.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (await claimIdempotencyKey(app.pool, { key: k.key, requestHash: k.hash, mode: k.mode, chatId: k.chatId, callId: k.callId })) return { start: true };
    const record = await readIdempotencyKey(app.pool, k.key);
    if (!record) continue;
    if (record.requestHash !== k.hash) throw new HttpError(422, KEY_REUSED);
    app.metrics.idempotentReplays.inc({ mode: k.mode });
    return { start: false, record };
  }
  throw new HttpError(503, 'Idempotency-Key could not be claimed: try again');
}

/** A claim whose run never started (refused, invalid): the key is free for the next try. */
export const releaseKey = (app: AppContext, k: KeyedRequest) => releaseIdempotencyKey(app.pool, k.key, k.callId);

/** Records the run's outcome on its key when it ends, wherever its client is by then. */
export function recordOutcome(app: AppContext, k: KeyedRequest, result: Promise<RunResult<ChatRunValue>>, meta: StreamOutcome['meta']): void {
  void result.then(async (r) => {
    const status = r.ok ? (r.value.stopped ? 'stopped' : 'succeeded') : 'failed';
    const response = k.mode === 'whole' ? wholeOutcome(r) : streamOutcome(r, meta);
    try {
      await finishIdempotencyKey(app.pool, { key: k.key, callId: k.callId, status, response });
    } catch (err) {
      app.log.error({ err, key: k.key }, 'the outcome of a keyed run could not be recorded');
    }
  });
}

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

function streamOutcome(r: RunResult<ChatRunValue>, meta: StreamOutcome['meta']): StreamOutcome {
  if (!r.ok) return { meta, error: { type: 'error', message: r.message } };
  const done: NonNullable<StreamOutcome['done']> = { type: 'done', text: r.value.text };
  if (r.value.usage) done.usage = r.value.usage;
  if (r.value.stopped) done.stopped = true;
  return { meta, done };
}

/** The record's outcome once its run has ended, or null while it runs. A run cut by a crash reads failed. */
function ended(record: IdempotencyRecord): WholeOutcome | StreamOutcome | null {
  if (record.status !== 'running' && record.response !== null) return record.response as WholeOutcome | StreamOutcome;
  if (record.callStatus === 'failed' && record.status === 'running') {
    // The instance that ran it died before recording: the sweeper's failure is the outcome.
    const message = record.callError ?? 'the run failed';
    return record.mode === 'whole'
      ? { status: 502, body: { message } }
      : { meta: { type: 'meta', chatId: record.chatId, callId: record.callId, provider: '', model: '' }, error: { type: 'error', message } };
  }
  return null;
}

/** Waits until the key's run has ended (polling the record); null when the client left first. */
async function waitEnded(app: AppContext, key: string, reply: Reply): Promise<WholeOutcome | StreamOutcome | null> {
  for (;;) {
    if (reply.aborted) return null;
    const record = await readIdempotencyKey(app.pool, key);
    if (!record) throw new HttpError(409, 'the Idempotency-Key expired while its run was going: send a new key');
    const out = ended(record);
    if (out) return out;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** A retry of a whole completion: the first request's answer, once there is one. */
export async function replayWhole(app: AppContext, record: IdempotencyRecord, reply: Reply): Promise<void> {
  const out = (ended(record) ?? (await waitEnded(app, record.key, reply))) as WholeOutcome | null;
  if (out) reply.json(out.status, out.body, REPLAYED_HEADERS);
}

/** A retry of a stream: attach while the run is active, else its recorded outcome as one replay. */
export async function replayStream(app: AppContext, record: IdempotencyRecord, reply: Reply): Promise<void> {
  reply.shared = [...(reply.shared ?? []), 'idempotent-replayed', 'true'];
  const sink = createSse(reply, app.config.SSE_MAX_QUEUED_BYTES);
  for (;;) {
    const out = ended(record) as StreamOutcome | null;
    if (out) {
      sink.write(sseFrame('meta', out.meta) + (out.done ? (out.done.text ? deltaFrame(out.done.text) : '') + sseFrame('done', out.done) : sseFrame('error', out.error)));
      sink.end();
      return;
    }
    // The first request may not have registered its run yet, or it has just ended: look again.
    if (record.chatId && (await app.runs.attach('chat', record.chatId, sink)) !== 'not_found') return sink.open();
    if (reply.aborted) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
    const next = await readIdempotencyKey(app.pool, record.key);
    if (!next) throw new HttpError(409, 'the Idempotency-Key expired while its run was going: send a new key');
    record = next;
  }
}
