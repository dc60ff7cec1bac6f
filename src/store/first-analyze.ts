// The first ANALYZE of a new database's run tables, when autovacuum has not made it yet.
//
// A run's writes (its start and its answer, alone or in a group) are named statements
// (src/db/prepared.ts), and each connection keeps the generic plan it made at their first executions
// until an ANALYZE of their tables invalidates it. On a new database
// those executions see near-empty tables, where reading a table whole is the right plan; the plan stays
// while the tables grow, and autovacuum's first look comes a minute or more after the writes begin. A
// new deployment's first load test would make every answer read `chats` and `llm_calls` whole until then
// (docs/performance.md, sixth round). So once a pool has made FIRST_ANALYZE_AFTER run writes, it checks,
// once, whether the run tables were ever analysed, and analyses them itself if not. A database that
// autovacuum (or anyone) has analysed is left to it.
//
// Why 10,000: analysed at 300, 500 or 1,000 runs the answer's statement is still planned as whole-table
// reads (right at that size, ~0.1 ms), and that plan would be kept as the tables grow; at 3,000 runs it
// is planned by key (EXPLAIN of the generic plan). 10,000 writes are ~5,000 runs, past that point.
import type { Queryable } from '../db/types.ts';
import { usesPreparedStatements } from '../db/prepared.ts';

export const RUN_TABLES = ['chats', 'messages', 'llm_calls'] as const;
/** Run writes (starts and answers, each counted once whether it goes alone or in a group) before the one check. */
export const FIRST_ANALYZE_AFTER = 10_000;

/** Where a pool keeps its count: on the pool itself, so that it lives and dies with its server's pool. */
const RUN_WRITES = Symbol('run writes before the first ANALYZE');
type Counted = Queryable & { [RUN_WRITES]?: number };

/**
 * Counts `n` run writes on `db`; the write that passes FIRST_ANALYZE_AFTER starts the check (not
 * awaited: the run's write does not wait for it). Only pools with named statements keep plans.
 */
export function noteRunWrites(db: Queryable, n: number): void {
  if (!usesPreparedStatements(db)) return;
  const counted = db as Counted;
  const before = counted[RUN_WRITES] ?? 0;
  if (before >= FIRST_ANALYZE_AFTER) return;
  counted[RUN_WRITES] = before + n;
  // A failure (a lost connection, a role that may not analyse) leaves the plans to autovacuum, as before.
  if (before + n >= FIRST_ANALYZE_AFTER) analyzeIfNeverAnalyzed(db).catch(() => {});
}

/** ANALYZE of the run tables when any of them was never analysed; true when it ran. */
export async function analyzeIfNeverAnalyzed(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ never: number }>(
    `SELECT count(*)::int AS never FROM pg_stat_user_tables
      WHERE relname = ANY ($1) AND last_analyze IS NULL AND last_autoanalyze IS NULL`,
    [RUN_TABLES],
  );
  if (!rows[0]?.never) return false;
  await db.query(`ANALYZE ${RUN_TABLES.join(', ')}`);
  return true;
}
