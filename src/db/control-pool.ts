// The connection for control queries: heartbeats and readiness probes. They must answer within a
// short deadline whatever the service's load, so on Postgres they get one connection of their own
// (never queued behind runs' queries, and a stuck connection is dropped at the deadline instead of
// holding the heartbeat). The embedded database takes a single connection, so there they share the
// service's pool and only the wait is bounded.
import pg from 'pg';
import { survivePoolErrors } from './connection-errors.ts';
import type { Database, QueryRunner } from './types.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

export interface ControlDb extends QueryRunner {
  /** Ends its connection (the service's pool is closed by its owner). */
  close(): Promise<void>;
}

export class DeadlineError extends ServiceError {
  constructor(what: string, ms: number) {
    super(ErrorCodes.DB_DEADLINE, `${what} did not answer within ${ms} ms`);
    this.name = 'DeadlineError';
  }
}

export function openControlDb(db: Database, databaseUrl: string | undefined, deadlineMs: number): ControlDb {
  if (db.kind === 'postgres' && databaseUrl) {
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: 1,
      // Bounds both the connect and the wait for the one client; query_timeout bounds the answer,
      // and pg-pool destroys a client whose query failed, so a hung connection is not reused.
      connectionTimeoutMillis: deadlineMs,
      query_timeout: deadlineMs,
      idleTimeoutMillis: 60_000,
    });
    survivePoolErrors(pool); // a connection lost with the server: the next query reconnects
    return { query: pool.query.bind(pool) as QueryRunner['query'], close: () => pool.end() };
  }
  const query = ((text: string, values?: unknown[]) =>
    withDeadline(db.pool.query(text, values), deadlineMs, 'the database')) as QueryRunner['query'];
  return { query, close: async () => {} };
}

/** `promise`, or a DeadlineError after `ms` (the promise itself is left to settle on its own). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(what, ms)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
