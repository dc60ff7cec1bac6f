// What the rows that read one service against another at one step share (the façade row, openai.ts;
// the tracing row, tracing.ts): a measured run of K streams on a fresh service, and the ratio of two
// rows' CPU per delta. Each row alternates its targets, so a drift of the machine falls on all of them.
import type { DriveContext } from './drive.ts';
import type { GenJob } from './gen.ts';
import { measure, toRow, type Base, type Row } from './measure.ts';
import type { PgCpuMeter } from './pg-cpu.ts';

export type RunRow = (base: Base, go: () => Promise<Row>) => Promise<Row | undefined>;

/** The step every run of a row shares: K streams of D deltas at R per second, started at S per second. */
export type AbStep = Pick<GenJob, 'k' | 'deltas' | 'rate' | 'startsPerSec'>;

/** One run's request and its service: the tree it runs from, its environment and database. */
export interface AbRun {
  path: string;
  body: string;
  kind: GenJob['kind'];
  note: string;
  env?: Record<string, string>;
  /** Another checkout's service (default: this tree's). */
  root?: string;
  /** A database of the run's own and its meter (default: the bench's, `c.dbUrl` and `c.pgMeter`). */
  db?: { url: string | null; meter: PgCpuMeter | null };
}

/** Measures `r` on a fresh service at `step`: one row, or a failed row saying why. */
export function measureRun(c: DriveContext, run: RunRow, step: AbStep, b: Base, r: AbRun): Promise<Row | undefined> {
  const db = r.db ?? { url: c.dbUrl, meter: c.pgMeter };
  return run(b, () => c.withService(c.sim.urls, db.url, step.k * 2 + 1000, async (svc) => {
    const job: GenJob = { mode: 'streams', host: '127.0.0.1', ...step, port: svc.port, path: r.path, body: r.body, kind: r.kind };
    return toRow(b, await measure(svc.pid, c.sim.child.pid, job, b.persist ? db.meter : null), undefined, r.note);
  }, undefined, r.env, r.root));
}

export type CpuField = 'cpuUsPerDelta' | 'cpuUsPerDeltaSteady';

/** `a` over `b` to three places; null when either is missing (or `b` is 0). */
export const ratioOf = (a: number | null | undefined, b: number | null | undefined): number | null => (a != null && b ? Number((a / b).toFixed(3)) : null);

/** `a`'s CPU per delta over `b`'s (the whole job's, or the steady phase's). */
export const cpuRatio = (a: Row | undefined, b: Row | undefined, field: CpuField = 'cpuUsPerDelta'): number | null => ratioOf(a?.[field], b?.[field]);
