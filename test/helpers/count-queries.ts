// Counting the round trips a piece of code makes on a real pool: every `query` (one round trip each)
// and every checkout of a client for a transaction. The pool itself is wrapped for the duration, not
// replaced by a stand-in, so its named statements (src/db/prepared.ts) and group commit work as in the
// service. Used by test/store/start-round-trips.test.ts (and by bench/ledger/start-statements.ts at d8cf097).
import type { Queryable } from '../../src/db/types.ts';

type Method = (...a: unknown[]) => unknown;

export interface Counted<T> {
  value: T;
  /** The text of each query sent, in order. */
  queries: string[];
  /** The parameters of each, in the same order (undefined: none). */
  params: Array<unknown[] | undefined>;
  /** Clients checked out by the caller (a transaction), beside the ones `query` takes itself. */
  checkouts: number;
}

export async function countQueries<T>(pool: Queryable, fn: () => Promise<T>): Promise<Counted<T>> {
  const p = pool as unknown as { query: Method; connect: Method };
  const { query, connect } = p;
  const queries: string[] = [];
  const params: Array<unknown[] | undefined> = [];
  let checkouts = 0;
  // pg's pool.query checks a client out itself, synchronously: only the other checkouts are a caller's.
  let inQuery = false;
  p.query = (text, ...rest) => {
    queries.push(typeof text === 'string' ? text : (text as { text: string }).text);
    params.push((typeof text === 'string' ? rest[0] : ((text as { values?: unknown[] }).values ?? rest[0])) as unknown[] | undefined);
    inQuery = true;
    try {
      return query.call(pool, text, ...rest);
    } finally {
      inQuery = false;
    }
  };
  p.connect = (...a) => (inQuery || checkouts++, connect.apply(pool, a));
  try {
    return { value: await fn(), queries, params, checkouts };
  } finally {
    delete (p as Partial<typeof p>).query;
    delete (p as Partial<typeof p>).connect;
  }
}
