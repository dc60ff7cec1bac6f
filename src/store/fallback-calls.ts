// A run that fell back (PROVIDER_FALLBACKS) made one model call per model of its chain: each is an LlmCall
// of its own, as a takeover's continuation is (store/takeover.ts), so that GET /v1/usage counts each
// model's tokens under that model and lastRun names the model that answered. The run stores its answer
// on its first call as any run does (llm-calls.ts: the message, the usage and the day's total in one
// statement); this statement then moves the answer and its outcome to a new call on the answering model,
// and leaves the first failed with its error. The chain's calls in between are inserted failed. Each call
// keeps the usage of the rounds it answered (a later round fell back), priced by its model; the answering
// call has the rest. Each call starts where the one before it ended (`continues_call_id` names the first).
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/types.ts';
import { usageLess, type FallbackCalls, type Usage } from '../providers/types.ts';
import { cleanText, toJson } from './values.ts';

// `at`: seconds after the first call's start; `ms`: the call's latency (null: the answer's, what is
// left of the first call's). The first call's row is read before the statement changes it.
const SPLIT = `WITH first AS (
       SELECT * FROM llm_calls WHERE id = $1 AND status <> 'running' AND NOT EXISTS (SELECT 1 FROM llm_calls WHERE continues_call_id = $1)
     ),
     calls AS (
       SELECT * FROM json_to_recordset($2::json) AS x(id text, provider text, model text, error text, at double precision, ms int,
                                                      in_tokens int, out_tokens int, all_tokens int, read_tokens int, write_tokens int, cost double precision)
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
              c.in_tokens, c.out_tokens, c.all_tokens, c.read_tokens, c.write_tokens, c.cost,
              CASE WHEN c.ms IS NULL THEN f.message_id END, f.id
         FROM calls c, first f
     )
     UPDATE llm_calls l
        SET status = 'failed', error = $3, latency_ms = $4::int, finished_at = l.started_at + make_interval(secs => $4::int / 1000.0),
            input_tokens = $5::int, output_tokens = $6::int, total_tokens = $7::int, cache_read_tokens = $8::int,
            cache_write_tokens = $9::int, cost = $10::double precision, message_id = NULL
       FROM first WHERE l.id = first.id`;

/** A call's usage columns, and its cost as `price` has it. */
function usageColumns(usage: Usage | null, cost: number | null) {
  return {
    in_tokens: usage?.inputTokens ?? null,
    out_tokens: usage?.outputTokens ?? null,
    all_tokens: usage?.totalTokens ?? null,
    read_tokens: usage?.cacheReadTokens ?? null,
    write_tokens: usage?.cacheWriteTokens ?? null,
    cost,
  };
}

/** What the split needs of the run: its whole usage (stored on the first call) and how a model prices usage. */
export interface SplitUsage {
  usage: Usage | null;
  price: (model: string, usage: Usage | null) => number | null;
}

/**
 * Splits the ended call `callId` of a run that fell back into one call per model of `calls`. A call
 * already split (this write repeated), or still running, is left as it is.
 */
export async function splitFallbackCall(db: Queryable, callId: string, calls: FallbackCalls, run: SplitUsage): Promise<void> {
  const [first, ...later] = calls.failed;
  if (!first) throw new Error('a fallback without a failed call');
  const priced = (model: string, usage: Usage | null) => usageColumns(usage, run.price(model, usage));
  // A microsecond per call keeps their order (lastRun is the newest) when a call failed at once (a breaker).
  let at = first.ms / 1000;
  const rows = later.map((f, k) => {
    const row = { id: randomUUID(), provider: f.provider, model: f.model, error: cleanText(f.error), at: at + (k + 1) / 1e6, ms: Math.round(f.ms) as number | null, ...priced(f.model, f.usage ?? null) };
    at += f.ms / 1000;
    return row;
  });
  // The answering call: the run's usage less what the failed calls' earlier rounds used.
  const rest = calls.failed.reduce<Usage | null>((u, f) => (u && f.usage ? usageLess(u, f.usage) : u), run.usage);
  rows.push({ id: randomUUID(), provider: calls.provider, model: calls.model, error: '', at: at + (later.length + 1) / 1e6, ms: null, ...priced(calls.model, rest) });
  const own = priced(first.model, first.usage ?? null);
  await db.query(SPLIT, [callId, toJson(rows), cleanText(first.error), Math.round(first.ms), own.in_tokens, own.out_tokens, own.all_tokens, own.read_tokens, own.write_tokens, own.cost]);
}
