// Opens the service's database: the Postgres of DATABASE_URL, or the embedded PGlite under DATA_DIR.
// Either way the result is a `pg` Pool on a migrated schema.
import pg from 'pg';
import type { Config } from '../base/config.ts';
import { survivePoolErrors } from './connection-errors.ts';
import { migrate, DEFAULT_MIGRATIONS_DIR } from './migrate.ts';
import { postgresPool } from './postgres-pool.ts';
import type { Database } from './types.ts';

export type { Database, Queryable } from './types.ts';

export interface OpenDatabaseOptions {
  /** Pool size for DATABASE_URL (ignored for the embedded database, which takes exactly one). */
  poolMax?: number;
  /** How long the start-up connection attempt to DATABASE_URL may take. */
  connectTimeoutMs?: number;
  migrationsDir?: string;
  /** Receives errors of idle pooled connections (e.g. Postgres restarted); they are otherwise dropped. */
  onIdleError?: (err: Error) => void;
}

export const DEFAULT_POOL_MAX = 20;

export async function openDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR'> & Partial<Pick<Config, 'DATABASE_PREPARED_STATEMENTS' | 'DATABASE_STATEMENT_TIMEOUT_MS'>>,
  options: OpenDatabaseOptions = {},
): Promise<Database> {
  const url = config.DATABASE_URL;
  let pool: pg.Pool;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (url) {
    await probe(url, options.connectTimeoutMs ?? 10_000, config.DATABASE_STATEMENT_TIMEOUT_MS ?? 0);
    // No connectionTimeoutMillis on the pool: under load it would also time out callers queued for a
    // free client, which is back-pressure, not a fault.
    pool = postgresPool(url, {
      max: options.poolMax ?? DEFAULT_POOL_MAX,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS ?? 0,
      preparedStatements: config.DATABASE_PREPARED_STATEMENTS !== false,
    });
  } else {
    // Loaded lazily so a DATABASE_URL deployment never loads PGlite.
    const { startEmbedded, EMBEDDED_POOL_MAX } = await import('./embedded.ts');
    const server = await startEmbedded(config.DATA_DIR);
    stopEmbedded = server.close;
    // idleTimeoutMillis 0 keeps the single connection for good instead of re-opening it after idling.
    pool = new pg.Pool({ connectionString: server.connectionString, max: EMBEDDED_POOL_MAX, idleTimeoutMillis: 0 });
  }
  // The pool drops a connection that failed and opens a fresh one on the next query.
  survivePoolErrors(pool, (err) => options.onIdleError?.(err));

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      try {
        await pool.end();
      } finally {
        await stopEmbedded?.();
      }
    })());

  try {
    await migrate(pool, options.migrationsDir ?? DEFAULT_MIGRATIONS_DIR);
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
  return { pool, close, kind: url ? 'postgres' : 'embedded' };
}

/**
 * One connection with a deadline and the pool's startup parameters, so an unreachable DATABASE_URL, or
 * one that refuses those parameters, fails the start with a clear message.
 */
async function probe(url: string, timeoutMs: number, statementTimeoutMs: number): Promise<void> {
  const deadline = statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {};
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, ...deadline });
  client.on('error', () => undefined); // a late socket error after a failed connect must not crash us
  try {
    await client.connect();
  } catch (err) {
    // PgBouncer refuses startup parameters it does not know (ignore_startup_parameters): every
    // connection of the pool would fail with this one line, which names no variable.
    if (statementTimeoutMs > 0 && /unsupported startup parameter: statement_timeout/.test(describeError(err))) {
      throw new Error(
        `the database of DATABASE_URL (${redact(url)}) refuses statement_timeout when a connection opens, as a pooler such as PgBouncer does: ` +
          'add statement_timeout to its ignore_startup_parameters (DATABASE_STATEMENT_TIMEOUT_MS then holds on the client alone; set the server\'s with ALTER ROLE … SET statement_timeout), or set DATABASE_STATEMENT_TIMEOUT_MS=0',
        { cause: err },
      );
    }
    throw new Error(`cannot connect to the database of DATABASE_URL (${redact(url)}): ${describeError(err)}`, {
      cause: err,
    });
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable URL>';
  }
}

/** A connection error as one line. */
export function describeError(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { errors?: unknown[] };
  // Connecting to a name with several addresses fails with an AggregateError whose message is empty.
  if (!e?.message && Array.isArray(e?.errors)) return e.errors.map(describeError).join('; ');
  return e?.message || e?.code || String(err);
}
