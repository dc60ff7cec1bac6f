// A pool on the Postgres of DATABASE_URL, as the main thread and every actor thread open it. Every
// statement has a deadline: Postgres cancels one that runs past DATABASE_STATEMENT_TIMEOUT_MS (a lock
// held elsewhere, a slow disk), and a connection that stays silent for SILENT_GRACE_MS beyond it (a
// network partition, a half-open socket: nothing would ever answer) is given up by the client, which
// drops it from the pool. Either error reads as the database unavailable (unavailable.ts), so a run
// ends with its `error` and a request gets 503 instead of waiting for good. Keep-alive probes find a
// dead peer of an idle connection.
import pg from 'pg';
import { usePreparedStatements } from './prepared.ts';

/** How long past the statement timeout a connection may stay silent before the client gives it up. */
export const SILENT_GRACE_MS = 5_000;

export interface PostgresPoolOptions {
  max: number;
  /** 0: no deadline. */
  statementTimeoutMs: number;
  preparedStatements: boolean;
}

export function postgresPool(url: string, o: PostgresPoolOptions): pg.Pool {
  const deadlines = o.statementTimeoutMs > 0 ? { statement_timeout: o.statementTimeoutMs, query_timeout: o.statementTimeoutMs + SILENT_GRACE_MS } : {};
  const pool = new pg.Pool({ connectionString: url, max: o.max, keepAlive: true, keepAliveInitialDelayMillis: 10_000, ...deadlines });
  if (o.preparedStatements) usePreparedStatements(pool);
  return pool;
}
