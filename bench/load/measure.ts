// One measured run: the long-lived generator process, the warm-up, the /proc readings around the job
// (CPU of the process under test and of the simulator, RSS peak and steady phase, the Postgres
// backends' CPU) and the row they make. Shared by the sweep (bench.ts), the capacity search
// (capacity.ts) and the start-rate sweep (start-rate.ts).
import path from 'node:path';
import type { GenJob, GenResult } from './gen.ts';
import { withDeltas } from './bodies.ts';
import type { PgCpuMeter } from './pg-cpu.ts';
import { cpuMicros, rssKb, rssSamples, sleep, start, threadCpuMicros, waitForQuiet, wakeUps, type Child } from '../../test/helpers/procs.ts';

export interface Row {
  target: 'service' | 'floor' | 'nginx' | 'peer';
  provider: string;
  persist: boolean | null;
  k: number;
  /** Deltas per second of each stream; in `start-rate` rows, starts per second. */
  rate: number;
  /**
   * `stream`: K streams of D deltas; `start-burst`: K streams of one delta each (the cost of a start);
   * `start-rate`: one-delta streams at a steady start rate below saturation; `capacity`: the largest K
   * that held the latency bound (capacity.ts).
   */
  scenario: 'stream' | 'start-burst' | 'start-rate' | 'capacity';
  /** Tells apart rows of one target/provider/persist/K: `reattach`, `web_search`, `embedded`. */
  variant?: string;
  ttfdP50Ms: number | null;
  ttfdP99Ms: number | null;
  addedP50Ms: number | null;
  addedP99Ms: number | null;
  cpuUsPerDelta: number | null;
  /** (peak RSS during the run − idle RSS after the warm-up) ÷ K. */
  rssKbPerStream: number | null;
  /** (median RSS while every stream is open − idle RSS after the warm-up) ÷ K; null when no such phase. */
  rssKbPerStreamSteady?: number | null;
  /**
   * CPU per delta while every stream is open and none starts or ends (the steady phase, less a margin
   * at each edge): the relay alone. `cpuUsPerDelta` is the whole job's, its starts' share included.
   */
  cpuUsPerDeltaSteady?: number | null;
  /** The process's thread wake-ups over the same steady phase ÷ its deltas. */
  wakeUpsPerDeltaSteady?: number | null;
  /**
   * The service's CPU by thread (main, the busiest other: the actor thread, the rest): per start for a
   * start row (the whole job), per delta of the steady phase for a stream row. Absent for one-thread processes.
   */
  cpuUsByThread?: ThreadSplit;
  /** Start-burst and start-rate rows: CPU of the process under test over the job ÷ K. */
  cpuUsPerStart?: number | null;
  /** The idle process's CPU over the job's time ÷ K (read over a second of idling before it): included in cpuUsPerStart. */
  idleCpuUsPerStart?: number | null;
  /** The same for the bench database's Postgres backends (pg-cpu.ts); persisted service rows. */
  pgCpuUsPerStart?: number | null;
  /** The `nginx + SQL` start baseline (start-baseline.ts): its cpuUsPerStart is these two parts' sum. */
  relayCpuUsPerStart?: number | null;
  sqlClientCpuUsPerStart?: number | null;
  /**
   * Start-burst and start-rate rows: the process's thread wake-ups (voluntary context switches of all its
   * threads) over the job ÷ K. Each costs a sleep and a wake (epoll_wait, the scheduler, the loop's
   * phases): the ledger's wake-up row prices those its stages did not make alone.
   */
  wakeUpsPerStart?: number | null;
  /** Capacity rows: the largest K that held the bound (0: not even the smallest K). */
  capacityStreams?: number;
  capacityProbes?: CapacityProbe[];
  /** Capacity rows: every search's K in the order run (capacityStreams is their median), and their min–max. */
  capacitySearches?: number[];
  capacitySpread?: [number, number];
  /** Capacity rows: the farthest search from the median, in % of the median (issue 48: within ± 15 %). */
  capacitySpreadPct?: number;
  /** Capacity rows: how many of the searches stopped where the floor itself missed (the load side's cap, not the target's). */
  capacityAtFloorCap?: number;
  /** Where the run's processes ran (pin.ts), when pinned. */
  pinned?: string;
  /** Time to first delta over the floor's at the same K and scenario (p50, p99). */
  ttfdAddedP50Ms?: number | null;
  ttfdAddedP99Ms?: number | null;
  streams: number;
  failed: number | null;
  lost: number | null;
  duplicated: number | null;
  note?: string;
  /** Set on a row carried over from an earlier run into the committed results (merge.ts). */
  from?: { date: unknown; commit: unknown };
  latencyP50Ms?: number | null;
  latencyP99Ms?: number | null;
  /**
   * Latency p99 of the deltas that arrived while every stream was open (after the last start, before
   * the first end), and its excess over the floor's: the relay with no start or end competing for the
   * CPU. The whole run's p99 includes both ramps.
   */
  latencySteadyP99Ms?: number | null;
  addedSteadyP99Ms?: number | null;
  deltas?: number;
  seconds?: number;
  simCpuUsPerDelta?: number | null;
  /** The simulator's RSS growth over the run ÷ K: the floor's memory per stream. */
  simRssKbPerStream?: number | null;
  reasons?: Record<string, number>;
  /** 1-minute load average before the run: other work on the machine shows up here. */
  loadAvg1?: number;
}

/** One step of a capacity search: the K tried, and why it held or did not. */
export interface CapacityProbe {
  /** Which of the target's searches tried this step (1-based). */
  search?: number;
  k: number;
  pass: boolean;
  why: string;
  addedP99Ms: number | null;
  /** Added p99 of the deltas while every stream was open (Row.addedSteadyP99Ms). */
  addedSteadyP99Ms?: number | null;
  ttfdP99Ms: number | null;
  failed: number | null;
  loadAvg1?: number;
  /** Each run of a step decided by more than one (the fields above are the standing run's). */
  runs?: { pass: boolean; addedP99Ms: number | null; addedSteadyP99Ms?: number | null; ttfdP99Ms: number | null; loadAvg1?: number }[];
}

/** The steady window's p99 as the bench shows it: the floor's own, a target's over the floor's. */
export const steadyP99 = (r: Row): number | null | undefined => (r.target === 'floor' ? r.latencySteadyP99Ms : r.addedSteadyP99Ms);

export type Base = Pick<Row, 'target' | 'provider' | 'persist' | 'k' | 'rate' | 'scenario' | 'variant'>;

const GEN = path.join(import.meta.dirname, 'gen.ts');
let gen: Child | null = null;
const waiting: Array<(line: string) => void> = [];

/** Hands a job to the long-lived generator process and waits for its result line. */
export async function generate(job: GenJob): Promise<GenResult & Record<string, unknown>> {
  if (!gen) {
    ({ child: gen } = await start('generator', process.execPath, ['--import', 'tsx', GEN], {
      stdin: true,
      onLine: (l) => void (l.includes('"phase":"result"') && waiting.shift()?.(l)),
    }));
  }
  const budget = ((job.k / job.startsPerSec) + (job.deltas / job.rate) * 4 + 90) * 1000;
  const line = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`generator gave no result within ${budget} ms`)), budget);
    waiting.push((l) => (clearTimeout(t), resolve(l)));
    gen!.proc.stdin!.write(JSON.stringify(job) + '\n');
  });
  const { result } = JSON.parse(line);
  if (result.error) throw new Error(`generator: ${result.error}`);
  return result;
}

export interface Measured {
  loadAvg1: number;
  result: GenResult;
  cpuUs: number | null;
  rssKbPerStream: number | null;
  rssKbPerStreamSteady: number | null;
  /** CPU of the process over the steady phase ÷ the deltas sent in it; null when the phase is too short. */
  cpuUsPerDeltaSteady: number | null;
  /** Its thread wake-ups over the same phase ÷ the same deltas. */
  wakeUpsPerDeltaSteady: number | null;
  /** Per thread: per start for one-delta jobs (the whole job), per delta of the steady phase otherwise. */
  cpuUsByThread: ThreadSplit | null;
  pgCpuUs: number | null;
  /** The CPU of `beside`'s work over the job (µs), when there was some. */
  besideCpuUs: number | null;
  /** What the process would have spent idling over the job's time (one-delta jobs only). */
  idleCpuUs: number | null;
  /** Thread wake-ups of the process over the job (one-delta jobs only). */
  wakeUps: number | null;
  simCpuUs: number;
  simRssKbPerStream: number;
}

/** RSS every `everyMs`, kept with its time, so both the peak and the steady phase's median can be read. */
function rssTrace(pid: number, everyMs = 200) {
  const samples = rssSamples(pid, everyMs);
  return {
    stop() {
      const all = samples.stop();
      return {
        peak: Math.max(0, ...all.map((s) => s.kb)),
        /** The median of the samples taken within [from, to] (performance.now() times), or null. */
        median(from: number, to: number): number | null {
          const inside = all.filter((s) => s.at >= from && s.at <= to).map((s) => s.kb).sort((a, b) => a - b);
          return inside.length ? inside[Math.floor(inside.length / 2)]! : null;
        },
      };
    },
  };
}

/**
 * One-delta starts in every warm-up (BENCH_START_WARM_UP), at up to 500/s. A start runs most of its
 * code once, and V8 optimizes a function only after many calls: after the 200 starts of the old
 * warm-up, TurboFan still compiled on the helper threads through the measured job (~10 % of the
 * service's CPU in `perf`), after 10,000 it did not, and a start cost 1,300–1,500 µs instead of
 * 1,900–2,100 (docs/performance.md, fifth round). nginx has no JIT; a long-running service is warm.
 */
const START_WARM_UP = Number(process.env.BENCH_START_WARM_UP ?? 5000);

/** The warm-up before a measured job: the start path's JIT, then (streams) the delta path, the pools. */
async function warmUp(job: GenJob): Promise<void> {
  const jobs: GenJob[] = [];
  const oneDelta = job.mode === 'streams' ? withDeltas(job.body, 1, 1) : null;
  if (oneDelta && START_WARM_UP > 0) jobs.push({ ...job, body: oneDelta, k: START_WARM_UP, deltas: 1, rate: 1, startsPerSec: Math.min(job.startsPerSec, 500) });
  if (job.deltas > 1) jobs.push({ ...job, body: withDeltas(job.body, 20, 100) ?? job.body, k: Math.min(job.k, 200), deltas: 20, rate: 100 });
  for (const j of jobs) {
    const warm = await generate(j);
    if (warm.failed > 0) console.error(`[bench] warm-up: ${warm.failed} failed ${JSON.stringify(warm.reasons)}`);
  }
}

/**
 * The process's CPU (or another counter: `reading`) between two moments, `fromS` and `toS` seconds
 * from now, read by two timers.
 * `stop()` gives the difference, or null when either reading is missing (the job ended first, or the
 * process is gone: a reading that fails is skipped, never thrown from a timer).
 */
export function cpuWindow(pid: number, fromS: number, toS: number, reading: (pid: number) => number = cpuMicros): { stop(): number | null } {
  const w = readingsWindow(pid, fromS, toS, reading);
  return {
    stop() {
      const r = w.stop();
      return r && r[1] - r[0];
    },
  };
}

/** The two readings of `cpuWindow`, or null when either is missing. */
function readingsWindow<T>(pid: number, fromS: number, toS: number, reading: (pid: number) => T): { stop(): [T, T] | null } {
  const at: T[] = [];
  const read = () => {
    try {
      at.push(reading(pid));
    } catch {
      // The process is gone (a failed job): no figure.
    }
  };
  const timers = [fromS, toS].map((s) => setTimeout(read, s * 1000));
  return {
    stop() {
      for (const t of timers) clearTimeout(t);
      return at.length === 2 ? [at[0]!, at[1]!] : null;
    },
  };
}

/** µs of CPU per unit by thread: the main thread, the busiest other (the actor thread), the rest (V8's helpers, libuv's pool). */
export interface ThreadSplit {
  main: number;
  actor: number;
  rest: number;
}

/** Two threadCpuMicros readings as a split per unit; null for a process of one thread (nginx's master). */
export function threadSplit(pid: number, readings: [Map<number, number>, Map<number, number>] | null, units: number): ThreadSplit | null {
  if (!readings || readings[1].size < 2) return null;
  const [a, b] = readings;
  let main = 0;
  let actor = 0;
  let all = 0;
  for (const [tid, us] of b) {
    const d = us - (a.get(tid) ?? 0);
    all += d;
    if (tid === pid) main = d;
    else if (d > actor) actor = d;
  }
  return { main: main / units, actor: actor / units, rest: (all - main - actor) / units };
}

/**
 * CPU per delta over the steady phase (every stream open, none starting or ending), less
 * STEADY_MARGIN_S at each edge for the last starts' and first ends' stragglers. In it every stream
 * sends `rate` deltas a second, so the deltas are K × rate × seconds.
 */
const STEADY_MARGIN_S = 0.25;
const STEADY_MIN_S = 1;

function steadyCpu(pid: number, job: GenJob) {
  const from = job.k / job.startsPerSec + STEADY_MARGIN_S;
  const to = job.deltas / job.rate - STEADY_MARGIN_S;
  if (job.deltas <= 1 || to - from < STEADY_MIN_S) return null;
  const window = cpuWindow(pid, from, to);
  const wakes = cpuWindow(pid, from, to, wakeUps);
  const threads = readingsWindow(pid, from, to, threadCpuMicros);
  const deltas = job.k * job.rate * (to - from);
  return {
    byThread: () => threadSplit(pid, threads.stop(), deltas),
    perDelta(): number | null {
      const us = window.stop();
      return us === null ? null : us / deltas;
    },
    wakeUpsPerDelta(): number | null {
      const n = wakes.stop();
      return n === null ? null : n / deltas;
    },
  };
}

/**
 * Warm-up (JIT, connection setup), idle RSS, then the measured job with CPU and RSS around it. The
 * steady phase is from the end of the ramp (K ÷ starts per second) to the end of the first stream
 * (deltas ÷ rate): the time every stream is open, when the streams are long enough to overlap.
 */
/** Work run beside a measured job over the same window (the start baseline's SQL client): its CPU in µs. */
export interface Beside {
  start(): Promise<{ stop(): Promise<number> }>;
}

export async function measure(pid: number | null, simPid: number, job: GenJob, pgMeter?: PgCpuMeter | null, o: { warm?: boolean; beside?: Beside } = {}): Promise<Measured> {
  // warm: false for a second job on a process an earlier measure() already warmed with a stream job.
  if (o.warm !== false) await warmUp(job);
  await pgMeter?.analyze();
  await sleep(500);
  const loadAvg1 = await waitForQuiet();
  // A one-delta job is short, so the process's idle CPU (timers, the GC of the warm-up's garbage) is a
  // visible share of it: read over a second of idling, so a row can show it beside the start's cost.
  let idleCpuUsPerS: number | null = null;
  if (pid && job.deltas === 1) {
    const c = cpuMicros(pid);
    await sleep(1000);
    idleCpuUsPerS = cpuMicros(pid) - c;
  }
  const idle = pid ? rssKb(pid) : 0;
  const cpu0 = pid ? cpuMicros(pid) : 0;
  const wakes0 = pid && job.deltas === 1 ? wakeUps(pid) : null;
  const threads0 = pid && job.deltas === 1 ? threadCpuMicros(pid) : null;
  const sim0 = cpuMicros(simPid);
  const simIdle = rssKb(simPid);
  const trace = pid ? rssTrace(pid) : null;
  const simTrace = rssTrace(simPid);
  const pg = pgMeter ? await pgMeter.start() : null;
  const t0 = performance.now();
  const window = pid ? steadyCpu(pid, job) : null;
  const [result, side] = await Promise.all([generate(job), o.beside?.start()]);
  const besideCpuUs = side ? await side.stop() : null;
  const jobSeconds = (performance.now() - t0) / 1000;
  const pgCpuUs = pg ? await pg.stop() : null;
  const rss = trace?.stop();
  const simPeak = simTrace.stop().peak;
  // One-delta streams (the start rows) never are all open at once: no steady figure.
  const steady = job.deltas > 1 ? rss?.median(t0 + (job.k / job.startsPerSec) * 1000, t0 + (job.deltas / job.rate) * 1000) ?? null : null;
  return {
    loadAvg1,
    result,
    cpuUs: pid ? cpuMicros(pid) - cpu0 : null,
    wakeUps: wakes0 === null ? null : wakeUps(pid!) - wakes0,
    rssKbPerStream: rss ? (rss.peak - idle) / job.k : null,
    rssKbPerStreamSteady: steady === null ? null : (steady - idle) / job.k,
    cpuUsPerDeltaSteady: window?.perDelta() ?? null,
    wakeUpsPerDeltaSteady: window?.wakeUpsPerDelta() ?? null,
    cpuUsByThread: threads0 ? threadSplit(pid!, [threads0, threadCpuMicros(pid!)], result.streams) : (window?.byThread() ?? null),
    pgCpuUs,
    besideCpuUs,
    idleCpuUs: idleCpuUsPerS === null ? null : idleCpuUsPerS * jobSeconds,
    simCpuUs: cpuMicros(simPid) - sim0,
    simRssKbPerStream: (simPeak - simIdle) / job.k,
  };
}

const r3 = (v: number) => Number(v.toFixed(3));
export const r2 = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? null : Number(v.toFixed(2)));
const diff = (a: number | null, b: number | null | undefined) => (a === null || b === null || b === undefined ? null : r2(a - b));
const perStart = (s: Row['scenario']) => s === 'start-burst' || s === 'start-rate';

export function toRow(base: Base, m: Measured, floor: Row | undefined, note?: string): Row {
  const { result: g } = m;
  const lat = g.latencyMs;
  const isFloor = base.target === 'floor';
  return {
    ...base,
    ttfdP50Ms: g.ttfdMs.p50,
    ttfdP99Ms: g.ttfdMs.p99,
    ...(isFloor ? {} : { ttfdAddedP50Ms: diff(g.ttfdMs.p50, floor?.ttfdP50Ms), ttfdAddedP99Ms: diff(g.ttfdMs.p99, floor?.ttfdP99Ms) }),
    addedP50Ms: isFloor || !floor || lat.p50 === null ? null : r2(lat.p50 - floor.latencyP50Ms!),
    addedP99Ms: isFloor || !floor || lat.p99 === null ? null : r2(lat.p99 - floor.latencyP99Ms!),
    cpuUsPerDelta: m.cpuUs === null || g.deltas === 0 ? null : r2(m.cpuUs / g.deltas),
    rssKbPerStream: r2(m.rssKbPerStream),
    ...(m.rssKbPerStreamSteady !== null ? { rssKbPerStreamSteady: r2(m.rssKbPerStreamSteady) } : {}),
    ...(m.cpuUsPerDeltaSteady !== null ? { cpuUsPerDeltaSteady: r2(m.cpuUsPerDeltaSteady) } : {}),
    ...(m.wakeUpsPerDeltaSteady !== null ? { wakeUpsPerDeltaSteady: r3(m.wakeUpsPerDeltaSteady) } : {}),
    ...(m.cpuUsByThread ? { cpuUsByThread: { main: r2(m.cpuUsByThread.main)!, actor: r2(m.cpuUsByThread.actor)!, rest: r2(m.cpuUsByThread.rest)! } } : {}),
    ...(perStart(base.scenario) ? { cpuUsPerStart: m.cpuUs === null ? null : r2(m.cpuUs / g.streams) } : {}),
    ...(perStart(base.scenario) && m.idleCpuUs !== null ? { idleCpuUsPerStart: r2(m.idleCpuUs / g.streams) } : {}),
    ...(perStart(base.scenario) && m.pgCpuUs !== null ? { pgCpuUsPerStart: r2(m.pgCpuUs / g.streams) } : {}),
    ...(perStart(base.scenario) && m.wakeUps !== null ? { wakeUpsPerStart: r2(m.wakeUps / g.streams) } : {}),
    streams: g.streams,
    failed: g.failed,
    lost: g.lost,
    duplicated: g.duplicated,
    ...(note || isFloor ? { note: note ?? `no process under test; simulator ${r2(m.simCpuUs / Math.max(1, g.deltas))} µs/delta` } : {}),
    latencyP50Ms: lat.p50,
    latencyP99Ms: lat.p99,
    latencySteadyP99Ms: g.latencySteadyMs.p99,
    ...(isFloor ? {} : { addedSteadyP99Ms: diff(g.latencySteadyMs.p99, floor?.latencySteadyP99Ms) }),
    deltas: g.deltas,
    seconds: g.seconds,
    simCpuUsPerDelta: r2(m.simCpuUs / Math.max(1, g.deltas)),
    simRssKbPerStream: r2(m.simRssKbPerStream),
    ...(Object.keys(g.reasons).length ? { reasons: g.reasons } : {}),
    loadAvg1: m.loadAvg1,
  };
}

export const failedRow = (base: Base, note: string): Row => ({
  ...base, ttfdP50Ms: null, ttfdP99Ms: null, addedP50Ms: null, addedP99Ms: null, cpuUsPerDelta: null,
  rssKbPerStream: null, streams: base.k, failed: null, lost: null, duplicated: null, note,
});
