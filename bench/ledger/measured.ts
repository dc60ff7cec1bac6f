// The whole service's figures the ledger's tables are compared with, measured in the ledger's own run:
// CPU and wake-ups per persisted start at 500/s, and per delta in the steady phase of K = 1,000 streams
// at 20/s, taken as the bench takes its rows (measure.ts: the warm-up, ANALYZE, then the job). A figure
// from bench/results.json was taken another hour, and this machine's speed drifts by a quarter within
// one (docs/performance.md, eighth round): a ratio is only read within one run.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { GenJob } from '../load/gen.ts';
import { serviceBody } from '../load/bodies.ts';
import { measure, type ThreadSplit } from '../load/measure.ts';
import { pgCpuMeter } from '../load/pg-cpu.ts';
import { createBenchDb, startService, startSimulator } from '../load/targets.ts';
import { cpuMicros, sleep } from '../../test/helpers/procs.ts';

export interface ServiceFigures {
  startCpuUs: number;
  startWakeUps: number;
  deltaCpuUs: number;
  deltaWakeUps: number;
  /** The same CPU by thread (measure.ts cpuUsByThread). */
  startThreads: ThreadSplit | null;
  deltaThreads: ThreadSplit | null;
  /**
   * The warm service's CPU per second while idle (its timers), read over IDLE_S a second after both jobs.
   * Not measure()'s idle reading: that one comes right after the stream job, and holds the GC of its
   * garbage (12 ms/s against 1–2 here, one run).
   */
  idleCpuUsPerS: number;
}

const IDLE_S = 5;

const job = (port: number, k: number, deltas: number, rate: number, startsPerSec: number): GenJob => ({
  mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body: serviceBody('provider_c', true, deltas, rate),
  kind: 'sse', k, deltas, rate, startsPerSec,
});

/** null: no Postgres to persist to (the tables are then compared with bench/results.json alone). */
export async function measureService(): Promise<ServiceFigures | null> {
  const db = await createBenchDb();
  if (!db.url) return null;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ledger-service-'));
  const sim = await startSimulator();
  const meter = await pgCpuMeter(db.url);
  const { child, port } = await startService({ sim: sim.urls, databaseUrl: db.url, maxActiveRuns: 10_000, dataDir });
  try {
    const pid = child.proc.pid!;
    // The stream job's warm-up holds the start's (measure.ts warmUp): the starts need no second one.
    const deltas = await measure(pid, sim.child.pid, job(port, 1000, 120, 20, 1000), meter);
    const starts = await measure(pid, sim.child.pid, job(port, 2000, 1, 1, 500), meter, { warm: false });
    const n = starts.result.streams;
    await sleep(1000);
    const idle0 = cpuMicros(pid);
    await sleep(IDLE_S * 1000);
    const idleCpuUsPerS = (cpuMicros(pid) - idle0) / IDLE_S;
    if (starts.cpuUs === null || starts.wakeUps === null || deltas.cpuUsPerDeltaSteady === null || deltas.wakeUpsPerDeltaSteady === null) return null;
    return {
      startCpuUs: starts.cpuUs / n,
      startWakeUps: starts.wakeUps / n,
      deltaCpuUs: deltas.cpuUsPerDeltaSteady,
      deltaWakeUps: deltas.wakeUpsPerDeltaSteady,
      startThreads: starts.cpuUsByThread,
      deltaThreads: deltas.cpuUsByThread,
      idleCpuUsPerS,
    };
  } finally {
    await child.stop();
    await sim.child.stop();
    await meter.close();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
