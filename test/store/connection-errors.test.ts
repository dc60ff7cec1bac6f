// A connection the server drops while it is checked out (between two statements of a transaction)
// must not end the process: its transaction fails, the pool drops it, and the next query is served.
// CI lost a run to this once, when a test stopped Postgres under a service in the middle of a recovery.
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';
import { freshPostgres, realPostgresSkipReason } from '../helpers/pg-cluster.ts';

describe('a checked-out connection dropped by the server', { skip: realPostgresSkipReason() ?? false }, () => {
  let scratch: Awaited<ReturnType<typeof freshPostgres>>;
  let db: Database;
  before(async () => {
    scratch = await freshPostgres();
    db = await openDatabase({ DATABASE_URL: scratch.url, DATA_DIR: os.tmpdir() }, { poolMax: 2 });
  });
  after(async () => {
    await db?.close();
    await scratch?.drop();
  });

  it('fails its transaction, not the process, and the pool serves the next query', async () => {
    const client = await db.pool.connect();
    await client.query('BEGIN');
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // Not events.once: it would listen for `error` too, which is what must be survived without us.
    const ended = new Promise((resolve) => client.once('end', resolve));
    // From another connection, as `pg_ctl stop` or a failover would: the server sends a FATAL error
    // and closes the socket while the client sits idle inside its transaction.
    await db.pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await ended;
    await assert.rejects(client.query('SELECT 1'), /not queryable|terminat/);
    client.release();
    const next = await db.pool.query<{ one: number }>('SELECT 1 AS one');
    assert.deepEqual(next.rows, [{ one: 1 }]);
  });
});
