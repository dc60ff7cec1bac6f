// GET /v1/usage: one user's LlmCalls per UTC day, provider and model, read through the owner's
// (owner_id, started_at) index.
import type { Queryable } from '../db/types.ts';

export interface UsageRow {
  day: string;
  provider: string;
  model: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Of inputTokens, read from or written to the provider's prompt cache. */
  cachedInputTokens: number;
  /** USD; null when a call with usage had no price (its model is not in MODEL_PRICES). */
  cost: number | null;
}

/** The last `days` UTC days (today included), newest day first, then provider and model. */
export async function usageByDay(db: Queryable, owner: string, days: number): Promise<UsageRow[]> {
  // The sums are bigints (a busy day of one model passes 2^31 tokens, as the daily budget's sum does),
  // which pg hands over as strings; they stay exact as numbers up to 2^53.
  const { rows } = await db.query<Record<keyof UsageRow, string | null>>(
    `SELECT to_char((started_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, provider, model,
            count(*)::int AS calls,
            COALESCE(sum(input_tokens), 0)::bigint AS "inputTokens",
            COALESCE(sum(output_tokens), 0)::bigint AS "outputTokens",
            COALESCE(sum(total_tokens), 0)::bigint AS "totalTokens",
            COALESCE(sum(COALESCE(cache_read_tokens, 0) + COALESCE(cache_write_tokens, 0)), 0)::bigint AS "cachedInputTokens",
            CASE WHEN bool_and(cost IS NOT NULL OR total_tokens IS NULL) THEN COALESCE(sum(cost), 0) END AS cost
       FROM llm_calls
      WHERE owner_id = $1
        AND started_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::int - 1)) AT TIME ZONE 'UTC'
      GROUP BY 1, 2, 3
      ORDER BY 1 DESC, 2, 3`,
    [owner, days],
  );
  return rows.map((r) => ({
    day: r.day!,
    provider: r.provider!,
    model: r.model!,
    calls: Number(r.calls),
    inputTokens: Number(r.inputTokens),
    outputTokens: Number(r.outputTokens),
    totalTokens: Number(r.totalTokens),
    cachedInputTokens: Number(r.cachedInputTokens),
    cost: r.cost === null ? null : Number(r.cost),
  }));
}
