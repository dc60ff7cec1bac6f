// Idempotent starts of a completion (docs/api-notes.md, "Retrying a start safely"), as a service
// beside the runs: a request with an Idempotency-Key either claims the key and starts the run, or finds
// the key already used: with another request (IdempotencyKeyError `reused`), or with this request, whose
// retry then waits for the run and replays what it recorded. The record lives in Postgres, so this holds
// across instances and restarts. The HTTP side (what is recorded, how it is replayed) is
// src/routes/idempotent-replay.ts.
import { z } from 'zod';
import { chatRunValue } from '../../actors/results.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { ChatRunValue } from '../../actors/chat-run.ts';
import type { AppContext } from './context.ts';
import {
  claimIdempotencyKey,
  finishIdempotencyKey,
  readIdempotencyKey,
  releaseIdempotencyKey,
  type IdempotencyMode,
  type IdempotencyRecord,
} from '../store/idempotency.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

export interface KeyedRequest {
  key: string;
  mode: IdempotencyMode;
  /** The request's fingerprint: its endpoint and canonical body. */
  hash: string;
  /** The ids the run will have if this request starts it. */
  chatId: string | null;
  callId: string;
  /** The user whose key it is: keys are per user. */
  owner: string;
}

/** Why a keyed request cannot go on; the HTTP layer answers each with its own status. */
const KEY_ERROR_CODES = {
  reused: ErrorCodes.IDEMPOTENCY_KEY_REUSED,
  unclaimed: ErrorCodes.IDEMPOTENCY_KEY_UNCLAIMED,
  expired: ErrorCodes.IDEMPOTENCY_KEY_EXPIRED,
} as const;

export class IdempotencyKeyError extends ServiceError {
  readonly reason: keyof typeof KEY_ERROR_CODES;
  constructor(reason: IdempotencyKeyError['reason']) {
    super(KEY_ERROR_CODES[reason], `Idempotency-Key ${reason}`);
    this.name = 'IdempotencyKeyError';
    this.reason = reason;
  }
}

// What a keyed run recorded, decoded from its jsonb column (written by recordOutcome, maybe by another
// version of the service): a whole completion's answer, or a stream's meta with its done or error.
const wholeOutcome = z.object({ status: z.number().int(), body: z.unknown() });
const streamOutcome = z.object({
  meta: z.object({ type: z.literal('meta'), chatId: z.string().nullable(), callId: z.string().nullable(), provider: z.string(), model: z.string() }),
  done: z.object({ type: z.literal('done'), text: z.string(), usage: chatRunValue.shape.usage.optional(), stopped: z.literal(true).optional() }).optional(),
  error: z.object({ type: z.literal('error'), message: z.string() }).optional(),
});
export type WholeOutcome = z.infer<typeof wholeOutcome>;
export type StreamOutcome = z.infer<typeof streamOutcome>;

/** A key as this process tells keys apart: per user. */
const scoped = (k: Pick<KeyedRequest, 'owner' | 'key'>) => `${k.owner}\n${k.key}`;

// ---- the service -------------------------------------------------------------------------------

/** `start`: this request owns the key and starts the run; otherwise the record of the first request. */
export async function claimKey(app: AppContext, k: KeyedRequest): Promise<{ start: true } | { start: false; record: IdempotencyRecord }> {
  // Twice: a record can expire (and be taken over) between a failed claim and the read.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (await claimIdempotencyKey(app.pool, { key: k.key, requestHash: k.hash, mode: k.mode, chatId: k.chatId, callId: k.callId, owner: k.owner })) {
      app.claimedKeys.watch(scoped(k));
      return { start: true };
    }
    const record = await readIdempotencyKey(app.pool, k.key, k.owner);
    if (!record) continue;
    if (record.requestHash !== k.hash) throw new IdempotencyKeyError('reused');
    app.metrics.idempotentReplays.inc({ mode: k.mode });
    return { start: false, record };
  }
  throw new IdempotencyKeyError('unclaimed');
}

/** A claim whose run never started (refused, invalid): the key is free for the next try. */
export async function releaseKey(app: AppContext, k: KeyedRequest): Promise<void> {
  try {
    await releaseIdempotencyKey(app.pool, k.key, k.callId, k.owner);
  } finally {
    app.claimedKeys.unwatch(scoped(k));
  }
}

/** Records the run's outcome (as `render` makes it) on its key when it ends, wherever its client is by then. */
export function recordOutcome(app: AppContext, k: KeyedRequest, result: Promise<RunResult<ChatRunValue>>, render: (r: RunResult<ChatRunValue>) => WholeOutcome | StreamOutcome): void {
  app.claimedKeys.started(scoped(k));
  void result.then(async (r) => {
    const status = r.ok ? (r.value.stopped ? 'stopped' : 'succeeded') : 'failed';
    try {
      const response = render(r);
      // Retried in the background through a database blip: a key left `running` after its run ended
      // would keep every retry of it waiting for good. A repeat is harmless: only a running key of
      // this call is finished.
      await app.writes.write(`the outcome of the keyed LlmCall ${k.callId}`, () =>
        finishIdempotencyKey(app.pool, { key: k.key, callId: k.callId, status, response, owner: k.owner }),
      );
    } catch (err) {
      app.log.error({ err, key: k.key }, 'the outcome of a keyed run could not be recorded');
    } finally {
      // Also when the write was only queued: retries here then poll the key's row, as retries on other
      // instances do, and see the outcome once the queue lands it. Waiting for the queue instead would
      // hold them (and this entry) for good on a write it gives up.
      app.claimedKeys.unwatch(scoped(k));
    }
  });
}

// The record's outcome once its run has ended, or null while it runs. A run cut by a crash reads
// failed: the instance that ran it died before recording, and the sweeper's failure is the outcome.
const crashed = (record: IdempotencyRecord) => (record.status === 'running' && record.callStatus === 'failed' ? (record.callError ?? 'the run failed') : null);
const recorded = (record: IdempotencyRecord) => record.status !== 'running' && record.response !== null;

/** A whole completion's recorded answer (see above). */
export function recordedWhole(record: IdempotencyRecord): WholeOutcome | null {
  if (recorded(record)) return wholeOutcome.parse(record.response);
  const message = crashed(record);
  return message === null ? null : { status: 502, body: { message } };
}

/** A stream's recorded end (see above). */
export function recordedStream(record: IdempotencyRecord): StreamOutcome | null {
  if (recorded(record)) return streamOutcome.parse(record.response);
  const message = crashed(record);
  if (message === null) return null;
  // The run recorded no meta of its own: the one its stream began with, rebuilt from its LlmCall.
  const meta = { type: 'meta' as const, chatId: record.chatId, callId: record.callId, provider: record.callProvider ?? '', model: record.callModel ?? '' };
  return { meta, error: { type: 'error', message } };
}

/** The key's record after the next change (see nextChange), or null once `gone` aborts (its client left). */
export async function nextRecord(app: AppContext, k: Pick<KeyedRequest, 'owner' | 'key'>, gone: AbortSignal): Promise<IdempotencyRecord | null> {
  // nextChange rejects only when `gone` aborts.
  const left = await app.claimedKeys.nextChange(scoped(k), gone).then(() => false, () => true);
  if (left) return null;
  const record = await readIdempotencyKey(app.pool, k.key, k.owner);
  if (!record) throw new IdempotencyKeyError('expired');
  return record;
}
