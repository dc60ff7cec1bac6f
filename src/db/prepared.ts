// Named (server-side prepared) statements for the statements every run makes. Postgres then parses
// and plans each once per connection instead of once per call: measured with a persisted start's
// two statements (createChat with its LlmCall, finishLlmCallWithMessage), Postgres's own CPU fell
// from ~950–1,130 to ~520 µs per start and the service's from ~170–190 to ~160–170 (bench/load/pg-named.ts, in git at d8cf097). On
// this 2-core machine Postgres shares the cores with the service, so that is time every stream waits.
//
// Only pools marked here use them: a real Postgres, where each connection is its own session. The
// embedded database is one PGlite session shared by every pool client, where one client's prepared
// name would collide with another's, and DATABASE_PREPARED_STATEMENTS=false turns them off for a
// transaction-mode pooler that cannot keep them (PgBouncer before 1.21, or without
// max_prepared_statements).
import type pg from 'pg';
import type { Queryable } from './types.ts';

// Per pool, keyed by the pool itself (a pool belongs to one server, or to one actor thread): which
// pools are marked, each with its names, one per statement text. A pool's connections are the sessions
// that hold its names, so the names need agree only within the pool. Weak, so a closed pool's entry
// goes with it; nothing else is kept here.
const namesByPool = new WeakMap<object, Map<string, { name: string; text: string }>>();

/** Marks `pool` as one whose connections keep named statements. */
export function usePreparedStatements(pool: pg.Pool): void {
  if (!namesByPool.has(pool)) namesByPool.set(pool, new Map());
}

/** Whether `db` is a pool whose connections keep named statements (and so their cached plans). */
export function usesPreparedStatements(db: Queryable): boolean {
  return namesByPool.has(db);
}

/**
 * `text` as a named statement when `db` is a marked pool, else as it is (a pool client inside a
 * transaction, the embedded database). pg copies the config, so the cached object is never changed.
 */
export function prepared(db: Queryable, text: string): string | { name: string; text: string } {
  const names = namesByPool.get(db);
  if (names === undefined) return text;
  let statement = names.get(text);
  if (statement === undefined) {
    statement = { name: `css_${names.size}`, text };
    names.set(text, statement);
  }
  return statement;
}
