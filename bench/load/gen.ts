// The load generator, run as its own process so its CPU never counts against the process under
// test and its event loop is not shared with the harness:
//
//   node --import tsx bench/load/gen.ts '<job json>'      (one job; or one job per stdin line)
//
// It opens K streams (starts spread at `startsPerSec`, so a sweep measures streaming rather than
// a connection storm; the storm has its own scenario), waits for every stream to be judged or the
// job deadline, and prints one JSON line with the tallies and percentiles.
import { runStorm } from './storm.ts';
import { Samples, summarize } from './stats.ts';
import { runStream, type StreamJob, type Tally } from './streams.ts';

export interface GenJob {
  mode: 'streams' | 'storm';
  host: string;
  port: number;
  path: string;
  headers?: Record<string, string>;
  /** Stream i sends `headersByIndex[i % length]` instead (several users' keys in one job). */
  headersByIndex?: Record<string, string>[];
  /** Request body; `__I__` is replaced by the stream's index. */
  body: string;
  kind: 'sse' | 'cc' | 'responses';
  k: number;
  deltas: number;
  rate: number;
  startsPerSec: number;
  dropAfter?: number;
  reattachDelayMs?: number;
  storm?: { chats: number; starts: number };
}

/** A stream tally with its samples summarized. */
export interface GenResult extends Omit<Tally, 'latency' | 'latencySteady' | 'rampOver' | 'anyEnded' | 'ttfd'> {
  streams: number;
  ttfdMs: ReturnType<typeof summarize>;
  latencyMs: ReturnType<typeof summarize>;
  /** The same over the deltas that arrived while every stream was open: the relay with no start or end beside it. */
  latencySteadyMs: ReturnType<typeof summarize>;
  seconds: number;
  generatorCpuSeconds: number;
}

async function runStreams(job: GenJob): Promise<GenResult> {
  const t: Tally = {
    ok: 0, failed: 0, lost: 0, duplicated: 0, outOfOrder: 0, deltas: 0, reasons: {},
    latency: new Samples(), latencySteady: new Samples(), rampOver: false, anyEnded: false, ttfd: new Samples(),
  };
  const streamMs = (job.deltas / job.rate) * 1000;
  const rampMs = (job.k / job.startsPerSec) * 1000;
  // Generous per stream: a saturated target streams slowly, and that is a figure, not a hang.
  const timeoutMs = Math.round(rampMs + streamMs * 4 + 30_000);
  const base: Omit<StreamJob, 'body'> = {
    ep: { host: job.host, port: job.port },
    path: job.path,
    headers: job.headers ?? {},
    deltas: job.deltas,
    kind: job.kind,
    dropAfter: job.dropAfter,
    reattachDelayMs: job.reattachDelayMs,
    timeoutMs,
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const all: Promise<void>[] = [];
  const gap = 1000 / job.startsPerSec;
  // Starts go out in small groups per timer tick (timers cannot fire every 0.4 ms).
  for (let i = 0; i < job.k; ) {
    const due = Math.min(job.k, Math.floor((performance.now() - t0) / gap) + 1);
    for (; i < due; i++) {
      const headers = job.headersByIndex ? job.headersByIndex[i % job.headersByIndex.length]! : base.headers;
      all.push(runStream({ ...base, headers, body: job.body.replaceAll('__I__', String(i)) }, t));
    }
    if (i < job.k) await new Promise((r) => setTimeout(r, Math.max(1, gap)));
  }
  t.rampOver = true;
  process.stdout.write(JSON.stringify({ phase: 'started', ms: Math.round(performance.now() - t0) }) + '\n');
  await Promise.all(all);
  const cpu = process.cpuUsage(cpu0);
  return {
    streams: job.k,
    ok: t.ok,
    failed: t.failed,
    lost: t.lost,
    duplicated: t.duplicated,
    outOfOrder: t.outOfOrder,
    deltas: t.deltas,
    reasons: t.reasons,
    ttfdMs: summarize(t.ttfd),
    latencyMs: summarize(t.latency),
    latencySteadyMs: summarize(t.latencySteady),
    seconds: Number(((performance.now() - t0) / 1000).toFixed(2)),
    generatorCpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
  };
}

const runJob = (job: GenJob): Promise<unknown> =>
  job.mode === 'storm' ? runStorm({ host: job.host, port: job.port }, job.storm!.chats, job.storm!.starts, job.deltas, job.rate) : runStreams(job);

if (process.argv[2]) {
  process.stdout.write(JSON.stringify({ phase: 'result', result: await runJob(JSON.parse(process.argv[2]) as GenJob) }) + '\n');
  process.exit(0);
}
// Long-lived mode (the bench): one job per stdin line, one result line each, in order. One process
// for the whole bench saves a Node + tsx start per run; stdin closing ends it.
const { createInterface } = await import('node:readline');
let chain = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  chain = chain.then(async () => {
    const result = await runJob(JSON.parse(line) as GenJob).catch((err: Error) => ({ error: err.message }));
    process.stdout.write(JSON.stringify({ phase: 'result', result }) + '\n');
  });
}).on('close', () => void chain.then(() => process.exit(0)));
