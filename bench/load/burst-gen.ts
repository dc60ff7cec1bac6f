// The burst row's generator (its own process): N stream starts sent at once, in one turn of the event
// loop, each read to its end; what became of each and when.
//
//   node --import tsx bench/load/burst-gen.ts '<BurstJob json>'   → one JSON line (BurstResult)
import { inOwnProcess, serveJob } from './job-process.ts';
import { Samples, summarize, type Summary } from './stats.ts';
import { tally, timedStream, type StreamOutcome } from './timed-stream.ts';
import type { ClassResult } from './long-gen.ts';

export interface BurstJob {
  port: number;
  n: number;
  /** The request body; `__I__` becomes the stream's index. */
  body: string;
  timeoutMs: number;
}

/** A class of starts as long-gen.ts counts them; here `metaMs` runs from the burst's send. */
export interface BurstResult extends ClassResult {
  /** From the burst's send to each accepted stream's first delta (ms). */
  firstDeltaMs: Summary;
  /** From the send to the refusals' answers (ms). */
  refusalMs: Summary;
  /** From the send to the last accepted stream's `meta` (its admission) and to its status line. */
  lastAdmittedMs: number | null;
  lastHeadMs: number | null;
  seconds: number;
}

const summaryOf = (values: (number | null)[]): Summary => {
  const s = new Samples();
  for (const v of values) if (v !== null) s.push(v);
  return summarize(s);
};

const maxOf = (values: (number | null)[]): number | null => values.reduce<number | null>((m, v) => (v === null ? m : m === null ? v : Math.max(m, v)), null);

export async function runBurst(job: BurstJob): Promise<BurstResult> {
  const t0 = performance.now();
  const all: Promise<StreamOutcome>[] = [];
  for (let i = 0; i < job.n; i++) all.push(timedStream({ port: job.port, body: job.body.replaceAll('__I__', String(i)), timeoutMs: job.timeoutMs }));
  const outcomes = await Promise.all(all);
  const accepted = outcomes.filter((o) => o.status === 200);
  const refused = outcomes.filter((o) => o.status !== 200);
  return {
    n: job.n,
    ...tally(outcomes),
    metaMs: summaryOf(accepted.map((o) => o.metaMs)),
    firstDeltaMs: summaryOf(accepted.map((o) => o.firstDeltaMs)),
    refusalMs: summaryOf(refused.map((o) => o.headMs)),
    lastAdmittedMs: maxOf(accepted.map((o) => o.metaMs)),
    lastHeadMs: maxOf(accepted.map((o) => o.headMs)),
    seconds: Math.round(performance.now() - t0) / 1000,
  };
}

/** Runs the burst from a process of its own. */
export const sendBurst = (job: BurstJob) => inOwnProcess<BurstResult>(import.meta.filename, job);

await serveJob(import.meta, runBurst);
