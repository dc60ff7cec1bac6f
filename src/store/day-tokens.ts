// Each user's tokens per UTC day (sql/010_users.sql, user_day_tokens): added by the statements that
// store a call's usage, read by a start that has a daily budget to keep.
import type { Queryable } from '../db/types.ts';

/**
 * A CTE adding the usage of the calls that `calls` (a CTE returning owner_id, started_at and
 * total_tokens) ended to their owners' daily totals: written with the usage, in the same statement.
 */
export function spentSql(calls: string): string {
  return `INSERT INTO user_day_tokens AS d (owner_id, day, total_tokens)
          SELECT owner_id, (started_at AT TIME ZONE 'UTC')::date, sum(total_tokens) FROM ${calls}
           WHERE total_tokens IS NOT NULL GROUP BY 1, 2
          ON CONFLICT (owner_id, day) DO UPDATE SET total_tokens = d.total_tokens + EXCLUDED.total_tokens`;
}

/** The tokens `owner`'s LlmCalls started this UTC day have used so far (one primary-key read). */
export async function tokensToday(db: Queryable, owner: string): Promise<number> {
  const { rows } = await db.query<{ total: string }>(
    `SELECT total_tokens AS total FROM user_day_tokens WHERE owner_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`,
    [owner],
  );
  return rows[0] ? Number(rows[0].total) : 0;
}

/**
 * Adds `tokens` to `owner`'s total of this UTC day: the spending of a run that stores no LlmCall (a
 * stream with persist: false), which the statements above never see.
 */
export async function spendToday(db: Queryable, owner: string, tokens: number): Promise<void> {
  await db.query(
    `INSERT INTO user_day_tokens AS d (owner_id, day, total_tokens) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2)
     ON CONFLICT (owner_id, day) DO UPDATE SET total_tokens = d.total_tokens + EXCLUDED.total_tokens`,
    [owner, tokens],
  );
}
