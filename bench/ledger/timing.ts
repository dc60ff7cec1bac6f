// Micro-benchmark timing for the ledger: CPU (this process's user + system time, every thread) and
// wall time per operation, after a warm-up. Back to back, the best of a few rounds (the machine is
// shared: the lowest round is the least disturbed one); paced, the median of five. Each stage is
// measured alone; the ledger adds them up.
import { wakeUps } from '../../test/helpers/procs.ts';

export interface Stage {
  /** The stage's name in the ledger. */
  name: string;
  /** µs of CPU of this process per operation. */
  cpuUs: number;
  /** µs of wall time per operation. */
  wallUs: number;
  /**
   * Steady stages: the system (kernel) part of cpuUs. A relayed delta's socket read and write are mostly
   * the kernel's (the same calls nginx makes), so only the rest is the service's own code to cut.
   */
  kernelUs?: number;
  /** Paced stages: the CPU that ran while an operation was in progress (cpuUs counts its whole slot). */
  cpuInOpsUs?: number;
  /** Other processes' CPU per operation (Postgres backends, a server child), when the stage has some. */
  otherUs?: number;
  /**
   * This process's thread wake-ups per operation (voluntary context switches): a stage that waits on
   * another process or thread sleeps and is woken inside its own figure; the wake-up row counts the rest.
   */
  wakeUps?: number;
  note?: string;
  /** false: shown for comparison, left out of the sum. */
  inSum?: boolean;
}

/** This process's thread wake-ups so far. */
export const selfWakeUps = () => wakeUps(process.pid);

export interface TimeOptions {
  ops: number;
  warm?: number;
  rounds?: number;
  /**
   * One operation every PACE_MS instead of back to back: the thread sleeps between them, as the
   * service's threads do between starts at 500 a second, so each runs as a start does there, with
   * caches, branch predictors and the allocator's free lists cold. Each operation's slot (to the next
   * wake-up) less an empty slot interleaved with it (pacedOps).
   */
  paced?: boolean;
}

/** The start-rate row's pace: 500 starts a second. */
export const PACE_MS = Number(process.env.LEDGER_PACE_MS ?? 2);

const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * CPU and wall µs of `n` paced operations, each in a slot of its own (from its pacing timer's wake-up to
 * the next slot's), alternating with as many empty slots; what is returned is per operation, real slots
 * less empty ones. A slot's CPU counts the work its operation left to other threads (V8's concurrent
 * marking and sweeping of its garbage, a worker's side) wherever it ran, and whatever else the process
 * did meanwhile falls into real and empty slots alike. `inOps` counts only the CPU seen while an
 * operation was in progress (less an empty one's reading).
 */
async function pacedOps(op: (i: number) => unknown, n: number): Promise<{ cpu: number; inOps: number; wall: number }> {
  const slot = { cpu: [0, 0], inOps: [0, 0], wall: [0, 0] };
  // Two slots per operation: each half the pace, so an operation still comes every PACE_MS.
  const half = PACE_MS / 2;
  await sleep(half);
  let last = cpuNow();
  for (let i = 0; i < 2 * n; i++) {
    const real = i & 1;
    const c0 = cpuNow();
    const t0 = performance.now();
    if (real) {
      const r = op(i >> 1);
      if (r instanceof Promise) await r;
    }
    slot.wall[real]! += performance.now() - t0;
    slot.inOps[real]! += cpuNow() - c0;
    await sleep(half);
    const now = cpuNow();
    slot.cpu[real]! += now - last;
    last = now;
  }
  return { cpu: slot.cpu[1]! - slot.cpu[0]!, inOps: slot.inOps[1]! - slot.inOps[0]!, wall: (slot.wall[1]! - slot.wall[0]!) * 1000 };
}

/** Runs `op` ops times per round (warm first) and keeps the round with the least CPU. */
export async function time(name: string, op: (i: number) => unknown, o: TimeOptions, other?: () => Promise<() => Promise<number>>): Promise<Stage> {
  if (o.paced) return timePaced(name, op, o, other);
  const runOps = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const r = op(i);
      if (r instanceof Promise) await r;
    }
  };
  await runOps(o.warm ?? Math.max(10, Math.round(o.ops / 10)));
  let best: Stage | null = null;
  for (let round = 0; round < (o.rounds ?? 3); round++) {
    const stopOther = other ? await other() : null;
    const w0 = selfWakeUps();
    const c0 = cpuNow();
    const t0 = performance.now();
    await runOps(o.ops);
    const wallUs = ((performance.now() - t0) * 1000) / o.ops;
    const cpuUs = (cpuNow() - c0) / o.ops;
    const wakes = (selfWakeUps() - w0) / o.ops;
    const otherUs = stopOther ? (await stopOther()) / o.ops : undefined;
    if (!best || cpuUs < best.cpuUs) best = { name, cpuUs, wallUs, wakeUps: wakes, ...(otherUs !== undefined ? { otherUs } : {}) };
  }
  return best!;
}

/**
 * `time` with one operation every PACE_MS. Five rounds by default, the median reported: a cold
 * operation's cost varies more than a hot one's, and the least of a few would pick the warmest.
 */
async function timePaced(name: string, op: (i: number) => unknown, o: TimeOptions, other?: () => Promise<() => Promise<number>>): Promise<Stage> {
  await pacedOps(op, o.warm ?? Math.max(10, Math.round(o.ops / 10)));
  const rounds: Stage[] = [];
  for (let round = 0; round < (o.rounds ?? 5); round++) {
    const stopOther = other ? await other() : null;
    const w0 = selfWakeUps();
    const { cpu, inOps, wall } = await pacedOps(op, o.ops);
    // Each slot's pacing sleep is one wake-up of this thread: what is left are the operations' own.
    const wakes = Math.max(0, (selfWakeUps() - w0 - 2 * o.ops) / o.ops);
    const otherUs = stopOther ? (await stopOther()) / o.ops : undefined;
    rounds.push({
      name, cpuUs: cpu / o.ops, cpuInOpsUs: inOps / o.ops, wallUs: wall / o.ops, wakeUps: wakes,
      ...(otherUs !== undefined ? { otherUs } : {}),
    });
  }
  rounds.sort((a, b) => a.cpuUs - b.cpuUs);
  return rounds[Math.floor(rounds.length / 2)]!;
}

/**
 * This process's figures over `windowMs` while a steady load runs: CPU, wall time and wake-ups per unit
 * of `count` (chunks read, frames written) over the window, and `other`'s CPU (a child process) per unit.
 */
export async function steadyWindow(windowMs: number, count: () => number, other: () => Promise<() => Promise<number>>): Promise<Stage & { units: number }> {
  const stopOther = await other();
  const [c0, n0, t0, w0] = [process.cpuUsage(), count(), performance.now(), selfWakeUps()];
  await sleep(windowMs);
  const c = process.cpuUsage(c0);
  const [units, wallMs, wakes] = [count() - n0, performance.now() - t0, selfWakeUps() - w0];
  return {
    name: '', units, cpuUs: (c.user + c.system) / units, kernelUs: c.system / units, wallUs: (wallMs * 1000) / units,
    otherUs: (await stopOther()) / units, wakeUps: wakes / units,
  };
}

/** The figures a stage may have or not: per and minus carry each one a stage has, and only those. */
const OPTIONAL = ['otherUs', 'kernelUs', 'cpuInOpsUs', 'wakeUps'] as const;
type Optional = (typeof OPTIONAL)[number];
const optional = (s: Stage, f: (k: Optional, v: number) => number): Partial<Stage> =>
  Object.fromEntries(OPTIONAL.flatMap((k) => (s[k] === undefined ? [] : [[k, f(k, s[k])]])));

/** A stage's figures per one of the `n` units each operation did (frames of a response, messages of a round). */
export const per = (s: Stage, n: number): Stage => ({ ...s, cpuUs: s.cpuUs / n, wallUs: s.wallUs / n, ...optional(s, (_, v) => v / n) });

/** `a` less `b`, figure by figure: what one variant of an operation costs over another. */
export const minus = (a: Stage, b: Stage): Stage => ({ ...a, cpuUs: a.cpuUs - b.cpuUs, wallUs: a.wallUs - b.wallUs, ...optional(a, (k, v) => v - (b[k] ?? 0)) });

/** The sum of the stages that count (`inSum` not false), per operation. */
export const sum = (stages: Stage[], k: 'cpuUs' | 'kernelUs' | 'otherUs' | 'wakeUps'): number => stages.filter((s) => s.inSum !== false).reduce((n, s) => n + (s[k] ?? 0), 0);

/**
 * Row by row, the run whose CPU figure is the median of the runs' (the rows come in the same order in
 * each run), so every row stays one real measurement; the note lists every run's figure.
 */
export function medianRows(runs: Stage[][]): Stage[] {
  if (runs.length === 1) return runs[0]!;
  return runs[0]!.map((_, i) => {
    const mid = runs.map((r) => r[i]!).sort((a, b) => a.cpuUs - b.cpuUs)[(runs.length - 1) >> 1]!;
    return { ...mid, note: `${mid.note ?? ''} [median of ${runs.length} runs: ${runs.map((r) => f(r[i]!.cpuUs)).join(', ')}]` };
  });
}

/** A µs figure as the tables print it. */
export const f = (v: number | undefined) => (v === undefined ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(1));

/** The stages as a Markdown table, with their sum. */
export function table(title: string, stages: Stage[]): string {
  const out = [`### ${title}`, '', '| stage | CPU µs/op (this process) | of which in the op | of which kernel | other process µs/op | wall µs/op | wake-ups/op | note |', '|---|--:|--:|--:|--:|--:|--:|---|'];
  const w = (v: number | undefined) => (v === undefined ? '—' : v.toFixed(2));
  for (const s of stages) out.push(`| ${s.inSum === false ? `(${s.name})` : s.name} | ${f(s.cpuUs)} | ${f(s.cpuInOpsUs)} | ${f(s.kernelUs)} | ${f(s.otherUs)} | ${f(s.wallUs)} | ${w(s.wakeUps)} | ${s.note ?? ''} |`);
  out.push(`| **sum** | **${f(sum(stages, 'cpuUs'))}** | | ${stages.some((s) => s.kernelUs !== undefined) ? `**${f(sum(stages, 'kernelUs'))}**` : ''} | **${f(sum(stages, 'otherUs'))}** | | **${w(sum(stages, 'wakeUps'))}** | |`, '');
  return out.join('\n');
}
