// The long-answer row's generator (its own process). From one moment on: `long.runs` streams of a
// multi-megabyte answer, read at full speed; `slow.n` slow readers (timed-stream.ts), opened at
// `slow.openPerSec`; `measured.n` stamped streams whose every delta's latency is recorded; and a
// probe start every `probe.everyMs` (a one-delta answer) until the long answers end. Each class's
// outcome and time to `meta`; the measured latency counts the deltas sent while the long answers stream.
//
//   node --import tsx bench/load/long-gen.ts '<LongJob json>'   → one JSON line (LongResult)
import { epochNow } from './client.ts';
import { inOwnProcess, serveJob } from './job-process.ts';
import { Samples, summarize, type Summary } from './stats.ts';
import { tally, timedStream, type StreamOutcome } from './timed-stream.ts';

export interface LongJob {
  port: number;
  /** Request bodies: `__I__` becomes the stream's index. */
  long: { runs: number; body: string; chars: number };
  slow: { n: number; body: string; openPerSec: number; readMs: number; pauseMs: number };
  measured: { n: number; body: string; deltas: number };
  probe: { everyMs: number; body: string };
  timeoutMs: number;
}

export interface ClassResult {
  n: number;
  accepted: number;
  refused: Record<string, number>;
  done: number;
  notDone: Record<string, number>;
  /** Time to `meta` from each start's request (ms). */
  metaMs: Summary;
}

export interface LongResult {
  long: ClassResult & { chars: number[]; endS: number[] };
  slow: ClassResult;
  measured: ClassResult & { latencyMs: Summary; lost: number; duplicated: number };
  probes: ClassResult;
  /** Every start of the job (all four classes): time to `meta`, how many took over 5 s, were accepted without one, or were refused. */
  allStarts: { metaMs: Summary; metaOver5s: number; noMeta: number; refused: number };
  seconds: number;
}

const summaryOf = (values: (number | null)[]): Summary => {
  const s = new Samples();
  for (const v of values) if (v !== null) s.push(v);
  return summarize(s);
};

const classOf = (outcomes: StreamOutcome[]): ClassResult => ({ n: outcomes.length, ...tally(outcomes), metaMs: summaryOf(outcomes.map((o) => o.metaMs)) });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runLong(job: LongJob): Promise<LongResult> {
  const t0 = performance.now();
  const from = epochNow();
  let until = Infinity;
  const latency = new Samples();
  const stream = (body: string, i: number, extra: Partial<Parameters<typeof timedStream>[0]> = {}) =>
    timedStream({ port: job.port, body: body.replaceAll('__I__', String(i)), timeoutMs: job.timeoutMs, ...extra });
  const long = Array.from({ length: job.long.runs }, (_, i) => stream(job.long.body, i));
  const longEnded = Promise.all(long).then((o) => ((until = epochNow()), o));
  // Measured: stamps sent while the long answers stream (from the first long start to the last long end).
  const onStamp = (ms: number, stamp: number) => void (stamp >= from && stamp <= until && latency.push(ms));
  const measured = Array.from({ length: job.measured.n }, (_, i) => sleep(i * 50).then(() => stream(job.measured.body, i, { onStamp })));
  const slow = Array.from({ length: job.slow.n }, (_, i) =>
    sleep((i * 1000) / job.slow.openPerSec).then(() => stream(job.slow.body, i, { slow: { readMs: job.slow.readMs, pauseMs: job.slow.pauseMs } })));
  const probes: Promise<StreamOutcome>[] = [];
  let over = false;
  void longEnded.then(() => (over = true));
  for (let i = 0; !over; i++) {
    probes.push(stream(job.probe.body, i));
    await Promise.race([sleep(job.probe.everyMs), longEnded]);
  }
  const [l, m, s, p] = await Promise.all([longEnded, Promise.all(measured), Promise.all(slow), Promise.all(probes)]);
  const every = [...l, ...m, ...s, ...p];
  let lost = 0;
  let duplicated = 0;
  for (const o of m) {
    // A refused stream has no deltas to lose: it counts among the refusals.
    if (o.status !== 200) continue;
    if (o.stamps < job.measured.deltas) lost += job.measured.deltas - o.stamps;
    if (o.stamps > job.measured.deltas) duplicated += o.stamps - job.measured.deltas;
  }
  return {
    long: { ...classOf(l), chars: l.map((o) => o.chars), endS: l.map((o) => Math.round(o.endMs) / 1000) },
    slow: classOf(s),
    measured: { ...classOf(m), latencyMs: summarize(latency), lost, duplicated },
    probes: classOf(p),
    allStarts: {
      metaMs: summaryOf(every.map((o) => o.metaMs)),
      metaOver5s: every.filter((o) => o.metaMs !== null && o.metaMs > 5000).length,
      noMeta: every.filter((o) => o.status === 200 && o.metaMs === null).length,
      refused: every.filter((o) => o.status !== 200).length,
    },
    seconds: Math.round(performance.now() - t0) / 1000,
  };
}

/** Runs the job from a process of its own. */
export const sendLong = (job: LongJob) => inOwnProcess<LongResult>(import.meta.filename, job);

await serveJob(import.meta, runLong);
