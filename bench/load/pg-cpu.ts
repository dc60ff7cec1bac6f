// The Postgres server's CPU spent for the bench's database: the backends serving its connections,
// read from /proc like every other process's figures. The backends are found in pg_stat_activity by
// database name, once before and once after a measured job; one that opened during the job counts
// from zero, and one that closed during it is missed (the service's pools keep theirs while busy).
// The shared auxiliary processes (WAL writer, checkpointer) serve every database on the machine,
// other sessions' tests included, so they are left out, and so are autovacuum's workers: one comes
// when a table has grown enough (the 5,000 warm-up starts grow it) and would charge a whole table's
// analyze to the job it falls in. The figure is a lower bound: the client backends only.
import pg from 'pg';
import { analyzeDb } from './targets.ts';
import { cpuMicros } from '../../test/helpers/procs.ts';

export interface PgCpuMeter {
  /** Starts counting; `stop` returns the backends' CPU in µs since `start`. */
  start(): Promise<{ stop(): Promise<number> }>;
  /** ANALYZE of the database (targets.ts, analyzeDb): after a warm-up, before the measured job. */
  analyze(): Promise<void>;
  close(): Promise<void>;
}

/** A meter for the database of `dbUrl`, through an admin connection to another database (not counted). */
export async function pgCpuMeter(dbUrl: string): Promise<PgCpuMeter> {
  const url = new URL(dbUrl);
  const datname = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  const backends = async (): Promise<number[]> =>
    (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'", [datname])).rows.map((r) => r.pid);
  const cpuOf = (pid: number): number | null => {
    try {
      return cpuMicros(pid);
    } catch {
      return null; // gone since the listing
    }
  };
  return {
    async start() {
      const before = new Map<number, number>();
      for (const pid of await backends()) {
        const c = cpuOf(pid);
        if (c !== null) before.set(pid, c);
      }
      return {
        async stop() {
          let sum = 0;
          for (const pid of new Set([...before.keys(), ...(await backends())])) {
            const c = cpuOf(pid);
            if (c !== null) sum += c - (before.get(pid) ?? 0);
          }
          return sum;
        },
      };
    },
    analyze: () => analyzeDb(dbUrl),
    close: () => admin.end(),
  };
}
