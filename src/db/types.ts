// Types shared by src/db and src/store. Kept free of runtime imports so store modules (and worker
// threads that load them) do not pull in PGlite.
import type pg from 'pg';

/** Anything a store function can run a query on: the pool, or one of its clients. */
export type Queryable = pg.Pool | pg.PoolClient | pg.Client;

/** Just the query method: what a store function needs of a pool or of a wrapper around one. */
export type QueryRunner = Pick<pg.Pool, 'query'>;

export interface Database {
  pool: pg.Pool;
  /** Ends the pool, then (embedded) stops the socket server and closes PGlite so its files are consistent. */
  close(): Promise<void>;
  kind: 'postgres' | 'embedded';
}
