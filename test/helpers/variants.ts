// The variants a run suite (streams, stop, idempotent starts, lastRun) runs in. The product has two
// halves on a run's path that a suite on one of them cannot vouch for: actors on the main thread or
// on a worker thread (frames cross it pre-encoded), and the embedded database or Postgres. Two
// variants cover all four once, at the cost of the two the suites already ran: the main thread on the
// embedded database, and a worker thread on Postgres. Without TEST_DATABASE_URL the second runs on the
// embedded database, and the file says so.
import type { DbKind } from './server.ts';

export interface RunVariant {
  db: DbKind;
  actorThreads: number;
  /** For the suite's title: which variant failed must be plain from the report. */
  name: string;
}

export function runVariants(): RunVariant[] {
  const second: DbKind = process.env.TEST_DATABASE_URL ? 'postgres' : 'embedded';
  if (second === 'embedded') console.log('# Postgres variant skipped: TEST_DATABASE_URL is unset, so the worker-thread variant runs on the embedded database');
  return [
    { db: 'embedded', actorThreads: 0, name: 'embedded, ACTOR_THREADS=0' },
    { db: second, actorThreads: 1, name: `${second}, ACTOR_THREADS=1` },
  ];
}
