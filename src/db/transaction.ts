// BEGIN/COMMIT around a function, on one pooled client. Its own module so store code can use it
// without importing the database bootstrap (and PGlite with it).
import type pg from 'pg';

/**
 * Runs `fn` in a transaction on one client and commits, or rolls back and rethrows.
 * Inside `fn` use only `client`: the embedded pool has a single connection, so waiting for another
 * one from the pool there would wait forever.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A failed ROLLBACK means the connection is unusable: destroy it rather than pool it.
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken = rollbackErr;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}
