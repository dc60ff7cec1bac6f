// A run that fell back (PROVIDER_FALLBACKS) made one model call per model of its chain: each is an LlmCall
// of its own, as a takeover's continuation is (store/takeover.ts), so that GET /v1/usage counts each
// model's tokens under that model and lastRun names the model that answered. The run stores its answer
// on its first call as any run does (llm-calls.ts: the message, the usage and the day's total in one
// statement); this statement then moves the answer, its usage and its outcome to a new call on the
// answering model (its cost priced by that model), and leaves the first failed with its error. The chain's calls in between are
// inserted failed. Each call starts where the one before it ended (`continues_call_id` names the first).
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/types.ts';
import type { FallbackCalls } from '../providers/types.ts';
import { cleanText, toJson } from './values.ts';

// `at`: seconds after the first call's start; `ms`: the call's latency (null: the answer's, what is
// left of the first call's). The first call's row is read before the statement changes it.
const SPLIT = `WITH first AS (
       SELECT * FROM llm_calls WHERE id = $1 AND status <> 'running' AND NOT EXISTS (SELECT 1 FROM llm_calls WHERE continues_call_id = $1)
     ),
     calls AS (
       SELECT * FROM json_to_recordset($2::json) AS x(id text, provider text, model text, error text, at double precision, ms int)
     ),
     later AS (
       INSERT INTO llm_calls (id, chat_id, provider, model, instance_id, owner_id, purpose, status, started_at, finished_at,
                              latency_ms, error, input_tokens, output_tokens, total_tokens, cache_read_tokens, cache_write_tokens,
                              cost, message_id, continues_call_id)
       SELECT c.id, f.chat_id, c.provider, c.model, f.instance_id, f.owner_id, f.purpose,
              CASE WHEN c.ms IS NULL THEN f.status ELSE 'failed' END,
              f.started_at + make_interval(secs => c.at),
              CASE WHEN c.ms IS NULL THEN f.finished_at ELSE f.started_at + make_interval(secs => c.at + c.ms / 1000.0) END,
              COALESCE(c.ms, GREATEST(f.latency_ms - round(c.at * 1000)::int, 0)),
              CASE WHEN c.ms IS NULL THEN f.error ELSE c.error END,
              CASE WHEN c.ms IS NULL THEN f.input_tokens END, CASE WHEN c.ms IS NULL THEN f.output_tokens END,
              CASE WHEN c.ms IS NULL THEN f.total_tokens END, CASE WHEN c.ms IS NULL THEN f.cache_read_tokens END,
              CASE WHEN c.ms IS NULL THEN f.cache_write_tokens END, CASE WHEN c.ms IS NULL THEN f.cost END,
              CASE WHEN c.ms IS NULL THEN f.message_id END, f.id
         FROM calls c, first f
     )
     UPDATE llm_calls l
        SET status = 'failed', error = $3, latency_ms = $4::int, finished_at = l.started_at + make_interval(secs => $4::int / 1000.0),
            input_tokens = NULL, output_tokens = NULL, total_tokens = NULL, cache_read_tokens = NULL, cache_write_tokens = NULL,
            cost = NULL, message_id = NULL
       FROM first WHERE l.id = first.id`;

/**
 * Splits the ended call `callId` of a run that fell back into one call per model of `calls`. A call
 * already split (this write repeated), or still running, is left as it is.
 */
export async function splitFallbackCall(db: Queryable, callId: string, calls: FallbackCalls): Promise<void> {
  const [first, ...later] = calls.failed;
  if (!first) throw new Error('a fallback without a failed call');
  // A microsecond per call keeps their order (lastRun is the newest) when a call failed at once (a breaker).
  let at = first.ms / 1000;
  const rows = later.map((f, k): { id: string; provider: string; model: string; error: string; at: number; ms: number | null } => {
    const row = { id: randomUUID(), provider: f.provider, model: f.model, error: cleanText(f.error), at: at + (k + 1) / 1e6, ms: Math.round(f.ms) };
    at += f.ms / 1000;
    return row;
  });
  rows.push({ id: randomUUID(), provider: calls.provider, model: calls.model, error: '', at: at + (later.length + 1) / 1e6, ms: null });
  await db.query(SPLIT, [callId, toJson(rows), cleanText(first.error), Math.round(first.ms)]);
}
