// A pooled connection that the server drops (restart, failover, `pg_ctl stop`) emits `error`. pg-pool
// listens only while the connection is idle; one checked out between two statements of a transaction
// (recovery, migrations) has no listener, and Node turns that event into an uncaught exception that
// ends the process. The statement in flight, or the next one, fails with the error anyway, and
// pg-pool drops a connection that failed, so listening here loses nothing.
import type pg from 'pg';

/** Gives every connection of `pool`, idle or checked out, an `error` listener for its whole life. */
export function survivePoolErrors(pool: pg.Pool, onError: (err: Error) => void = ignore): void {
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', ignore));
}

function ignore(): void {}
