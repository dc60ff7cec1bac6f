// Idempotency-Key records of completion requests: which request a key was first used with (a hash),
// the run it started, and how that run ended. Kept 24 hours; an expired row counts as absent and is
// taken over by the next request with its key, or purged in small batches.
import type { Queryable, QueryRunner } from '../db/types.ts';
import type { RunStatus } from '../base/types.ts';
import { toJson } from './values.ts';

export const IDEMPOTENCY_TTL_HOURS = 24;
const EXPIRED = `created_at < now() - interval '${IDEMPOTENCY_TTL_HOURS} hours'`;

export type IdempotencyMode = 'whole' | 'stream';

export interface NewIdempotencyKey {
  key: string;
  requestHash: string;
  mode: IdempotencyMode;
  chatId: string | null;
  callId: string | null;
  /** Keys are per user: the same key from two users is two keys (the built-in admin when not given). */
  owner: string;
}

export interface IdempotencyRecord {
  key: string;
  requestHash: string;
  mode: IdempotencyMode;
  chatId: string | null;
  callId: string | null;
  status: RunStatus;
  /** The finished answer the route recorded; null while running. */
  response: unknown;
  /** Milliseconds since the key was first used. */
  ageMs: number;
  /** The status of the key's LlmCall (null when the call row does not exist yet). */
  callStatus: RunStatus | null;
  callError: string | null;
  /** The LlmCall's provider and model (null with the call): a replay of a run that recorded nothing names them in its `meta`. */
  callProvider: string | null;
  callModel: string | null;
}

interface Row {
  key: string;
  request_hash: string;
  mode: IdempotencyMode;
  chat_id: string | null;
  call_id: string | null;
  status: RunStatus;
  response: unknown;
  age_ms: number;
  call_status: RunStatus | null;
  call_error: string | null;
  call_provider: string | null;
  call_model: string | null;
}

/**
 * Records `key` for a new run, atomically: true when this request owns the key now (it was unused,
 * or its row had expired), false when another request holds it. Two requests racing with one key
 * meet at the primary key; exactly one gets true.
 */
export async function claimIdempotencyKey(db: Queryable, input: NewIdempotencyKey): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO idempotency_keys AS k (key, request_hash, mode, chat_id, call_id, owner_id)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (owner_id, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, mode = EXCLUDED.mode, chat_id = EXCLUDED.chat_id,
            call_id = EXCLUDED.call_id, status = 'running', response = NULL, created_at = now()
      WHERE k.${EXPIRED}`,
    [input.key, input.requestHash, input.mode, input.chatId, input.callId, input.owner],
  );
  return rowCount === 1;
}

/** The live (unexpired) record of `key` with its LlmCall's status, or null. */
export async function readIdempotencyKey(db: Queryable, key: string, owner: string): Promise<IdempotencyRecord | null> {
  const { rows } = await db.query<Row>(
    `SELECT k.key, k.request_hash, k.mode, k.chat_id, k.call_id, k.status, k.response,
            (extract(epoch FROM now() - k.created_at) * 1000)::float8 AS age_ms,
            c.status AS call_status, c.error AS call_error, c.provider AS call_provider, c.model AS call_model
       FROM idempotency_keys k LEFT JOIN llm_calls c ON c.id = k.call_id
      WHERE k.owner_id = $2 AND k.key = $1 AND NOT k.${EXPIRED}`,
    [key, owner],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    key: r.key,
    requestHash: r.request_hash,
    mode: r.mode,
    chatId: r.chat_id,
    callId: r.call_id,
    status: r.status,
    response: r.response,
    ageMs: r.age_ms,
    callStatus: r.call_status,
    callError: r.call_error,
    callProvider: r.call_provider,
    callModel: r.call_model,
  };
}

/** Records how the key's run ended. Only the owner (same call) can finish it. */
export async function finishIdempotencyKey(
  db: Queryable,
  input: { key: string; callId: string | null; status: Exclude<RunStatus, 'running'>; response: unknown; owner: string },
): Promise<void> {
  await db.query(
    `UPDATE idempotency_keys SET status = $3, response = $4::jsonb
      WHERE owner_id = $5 AND key = $1 AND call_id IS NOT DISTINCT FROM $2 AND status = 'running'`,
    [input.key, input.callId, input.status, toJson(input.response), input.owner],
  );
}

/** Forgets a claim whose run never started (a 4xx/5xx before launch), so the key can be used again. */
export async function releaseIdempotencyKey(db: Queryable, key: string, callId: string | null, owner: string): Promise<void> {
  await db.query(`DELETE FROM idempotency_keys WHERE owner_id = $3 AND key = $1 AND call_id IS NOT DISTINCT FROM $2 AND status = 'running'`, [
    key,
    callId,
    owner,
  ]);
}

/** Deletes up to `limit` expired rows, oldest first (an index range scan). Returns how many. */
export async function purgeExpiredIdempotencyKeys(db: QueryRunner, limit = 1000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys
      WHERE (owner_id, key) IN (SELECT owner_id, key FROM idempotency_keys WHERE ${EXPIRED} ORDER BY created_at LIMIT $1)`,
    [limit],
  );
  return rowCount ?? 0;
}
