// Forward-only migrations: sql/NNN_name.sql applied in name order, each in its own transaction,
// recorded in schema_migrations. A transaction-level advisory lock serialises processes that start at
// the same time against one database: the second waits, then finds each file applied.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

/** Fixed key for pg_advisory_xact_lock (advisory keys are per database, so test databases don't contend). */
export const MIGRATION_LOCK_KEY = 720_431_901;

export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));

const FILE_PATTERN = /^(\d{3,})_[\w.-]+\.sql$/;

export interface MigrationFile {
  name: string;
  sql: string;
}

/** The migration files of `dir`, in the order they must run. Throws on two files with one number. */
export async function readMigrations(dir = DEFAULT_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((n) => FILE_PATTERN.test(n)).sort();
  const seen = new Map<string, string>();
  for (const name of names) {
    const num = FILE_PATTERN.exec(name)![1]!;
    const other = seen.get(num);
    if (other) throw new Error(`migrations ${other} and ${name} share the number ${num}`);
    seen.set(num, name);
  }
  return Promise.all(names.map(async (name) => ({ name, sql: await readFile(path.join(dir, name), 'utf8') })));
}

/** A client-side deadline no migration reaches (0 would mean the pool's own). */
const UNBOUNDED_MS = 24 * 3600_000;

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  name       text PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * Applies every migration not yet recorded. Returns the names applied by this call (empty when the
 * schema was already current, e.g. another process got the lock first).
 */
export async function migrate(pool: pg.Pool, dir = DEFAULT_MIGRATIONS_DIR): Promise<string[]> {
  const files = await readMigrations(dir);
  const client = await pool.connect();
  // (`query_timeout` per query is read by pg but missing from its types.)
  const query = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> =>
    client.query<R>({ text, values, query_timeout: UNBOUNDED_MS } as pg.QueryConfig);
  // Everything happens in transactions holding a transaction-level lock: behind a transaction-mode
  // pooler (PgBouncer) each transaction may run on another server connection, so a session lock and
  // a session SET would stay on one of them, the lock held for good (every later start waiting for it).
  const locked = async <T>(work: () => Promise<T>): Promise<T> => {
    await query('BEGIN');
    try {
      // A migration may rewrite a large table, and waits for another instance's: no statement deadline
      // (postgres-pool.ts) applies to it.
      await query('SET LOCAL statement_timeout = 0');
      await query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const result = await work();
      await query('COMMIT');
      return result;
    } catch (err) {
      await query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  };
  let broken: Error | undefined;
  try {
    // On a direct connection every statement here (each BEGIN, the reads between transactions) is free of
    // the pool's deadline too, as before the per-file lock: one statement exposed to it, not two per file.
    // Behind a pooler this may land on any server connection, whose statement_timeout the pooler does not
    // set (it refuses or ignores that startup parameter: pool.ts); SET LOCAL above covers each transaction.
    await query('SET statement_timeout = 0');
    await locked(() => query(CREATE_TABLE));
    const done = new Set((await query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file.name)) continue;
      const ran = await locked(async () => {
        // Another instance may have applied it while this one waited for the lock.
        if ((await query('SELECT 1 FROM schema_migrations WHERE name = $1', [file.name])).rowCount) return false;
        // No parameters: sent with the simple protocol, so a file may hold many statements.
        await query(file.sql);
        await query('INSERT INTO schema_migrations (name) VALUES ($1)', [file.name]);
        return true;
      }).catch((err: Error) => {
        throw new Error(`migration ${file.name} failed: ${err.message}`, { cause: err });
      });
      if (ran) applied.push(file.name);
    }
    await query('RESET statement_timeout');
    return applied;
  } catch (err) {
    broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}
