// Each user's tokens and cost per UTC day (sql/010_users.sql user_day_tokens, its cost by
// sql/019_cost.sql): added by the statements that store a call's usage, read by a start that has a
// daily budget to keep.
import type { Queryable } from '../db/types.ts';

/**
 * A CTE adding the usage of the calls that `calls` (a CTE returning owner_id, started_at,
 * total_tokens and cost) ended to their owners' daily totals: written with the usage, in the same
 * statement. A call without a price adds no cost.
 */
export function spentSql(calls: string): string {
  return `INSERT INTO user_day_tokens AS d (owner_id, day, total_tokens, cost)
          SELECT owner_id, (started_at AT TIME ZONE 'UTC')::date, sum(total_tokens), COALESCE(sum(cost), 0) FROM ${calls}
           WHERE total_tokens IS NOT NULL GROUP BY 1, 2
          ON CONFLICT (owner_id, day) DO UPDATE SET total_tokens = d.total_tokens + EXCLUDED.total_tokens, cost = d.cost + EXCLUDED.cost`;
}

/** What a user's LlmCalls of one UTC day have spent. */
export interface DaySpent {
  tokens: number;
  /** USD, under MODEL_PRICES at each call's end. */
  cost: number;
}

/** What `owner`'s LlmCalls started this UTC day have spent so far (one primary-key read). */
export async function spentToday(db: Queryable, owner: string): Promise<DaySpent> {
  const { rows } = await db.query<{ total: string; cost: number }>(
    `SELECT total_tokens AS total, cost FROM user_day_tokens WHERE owner_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`,
    [owner],
  );
  return rows[0] ? { tokens: Number(rows[0].total), cost: Number(rows[0].cost) } : { tokens: 0, cost: 0 };
}

/**
 * Adds `tokens` and `cost` to `owner`'s totals of this UTC day: the spending of a run that stores no
 * LlmCall (a stream with persist: false), which the statements above never see.
 */
export async function spendToday(db: Queryable, owner: string, tokens: number, cost = 0): Promise<void> {
  await db.query(
    `INSERT INTO user_day_tokens AS d (owner_id, day, total_tokens, cost) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3)
     ON CONFLICT (owner_id, day) DO UPDATE SET total_tokens = d.total_tokens + EXCLUDED.total_tokens, cost = d.cost + EXCLUDED.cost`,
    [owner, tokens, cost],
  );
}
