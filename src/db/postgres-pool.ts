// A pool on the Postgres of DATABASE_URL, as the main thread and every actor thread open it. Every
// statement has a deadline: Postgres cancels one that runs past DATABASE_STATEMENT_TIMEOUT_MS (a lock
// held elsewhere, a slow disk), and a connection that stays silent for SILENT_GRACE_MS beyond it (a
// network partition, a half-open socket: nothing would ever answer) is given up by the client, which
// drops it from the pool; opening a connection has a deadline too. Any of these reads as the database unavailable (unavailable.ts), so a run
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

/** How long opening a connection may take, with deadlines on. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A pool's Client whose connect has a deadline. Not the pool's own `connectionTimeoutMillis`: that also
 * times out callers queued for a free client, which under load is back-pressure, not a fault. Without it,
 * a connection opened through a partition (the pool replaces the one a failed query dropped) waits for
 * good, and with it every query queued behind it.
 */
class ConnectDeadlineClient extends pg.Client {
  constructor(config: pg.ClientConfig) {
    super({ ...config, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  }
}

export function postgresPool(url: string, o: PostgresPoolOptions): pg.Pool {
  const deadlines =
    o.statementTimeoutMs > 0
      ? { statement_timeout: o.statementTimeoutMs, query_timeout: o.statementTimeoutMs + SILENT_GRACE_MS, Client: ConnectDeadlineClient as unknown as new () => pg.ClientBase }
      : {};
  const pool = new pg.Pool({ connectionString: url, max: o.max, keepAlive: true, keepAliveInitialDelayMillis: 10_000, ...deadlines });
  if (o.preparedStatements) usePreparedStatements(pool);
  return pool;
}
