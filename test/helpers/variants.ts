// The variants a run suite (streams, stop, idempotent starts, lastRun) runs in. The product has two
// halves on a run's path that a suite on one of them cannot vouch for: actors on the main thread or
// on a worker thread (frames cross it pre-encoded), and the embedded database or Postgres. Two
// variants cover all four once, at the cost of the two the suites already ran: the main thread on the
// embedded database, and a worker thread on Postgres. Without TEST_DATABASE_URL the second runs on the
// embedded database, and the file says so.
import { databaseKinds, variantTag, type DbKind } from './db.ts';

export interface RunVariant {
  db: DbKind;
  actorThreads: number;
  /** The end of the suite's title (`ACTOR_THREADS=1 [postgres]`): which variant failed must be plain from the report. */
  name: string;
}

export function runVariants(): RunVariant[] {
  // Without TEST_DATABASE_URL, databaseKinds() registers the file's [postgres] skip line saying so.
  const second: DbKind = databaseKinds().includes('postgres') ? 'postgres' : 'embedded';
  return [
    { db: 'embedded', actorThreads: 0, name: `ACTOR_THREADS=0 ${variantTag('embedded')}` },
    { db: second, actorThreads: 1, name: `ACTOR_THREADS=1 ${variantTag(second)}` },
  ];
}
