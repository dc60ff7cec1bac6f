// Issue 52's tracing row: the CPU per delta of the service with tracing on (OTEL_TRACES_SAMPLER=always_on,
// spans sent to an OTLP/HTTP receiver in this process) and off (no OTEL_* endpoint), beside "today's": the
// service as it was before tracing came in (the first parent of the merge that brought src/telemetry into
// main's history, or BENCH_TRACING_BASELINE), extracted with `git archive` into bench/out (a plain copy:
// nothing is registered in the repository's worktree list, so a killed bench leaves nothing to prune), run
// from there with this tree's node_modules, and removed at the row's end (its sources would otherwise be
// read as this tree's by the docs test, which checks the paths comments name). K persisted provider_c streams per run, each target on a fresh
// service and a database of its own (the baseline's migrations are older), rounds alternated with the first
// target rotated, so the machine's drift falls on all three. Goals: off within 1.02 × today's, on within 1.15 ×.
// Alone: BENCH_ONLY=tracing make bench (quick: BENCH_TRACING_STEP=50:20:40 BENCH_TRACING_ROUNDS=1).
// Knobs (env): BENCH_TRACING=0 (off)  BENCH_TRACING_STEP=1000:20:120 (K:deltas per second:deltas)
//   BENCH_TRACING_STARTS=1000 (starts per second)  BENCH_TRACING_ROUNDS=5  BENCH_TRACING_BASELINE=<commit>
//   BENCH_TRACING_TARGETS=today,off,on
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import type { DriveContext } from './drive.ts';
import { serviceBody } from './bodies.ts';
import type { Base, Row } from './measure.ts';
import { measureRun, ratioOf, type AbRun, type CpuField, type RunRow } from './ab.ts';
import { pgCpuMeter, type PgCpuMeter } from './pg-cpu.ts';
import { middle, round } from './stats.ts';
import { createBenchDb, OUT, type BenchDb } from './targets.ts';
import { startOtlpReceiver } from '../../test/helpers/otlp-receiver.ts';

const env = process.env;
const [K, RATE, DELTAS] = (env.BENCH_TRACING_STEP ?? '1000:20:120').split(':').map(Number) as [number, number, number];
const STARTS = Number(env.BENCH_TRACING_STARTS ?? 1000);
const ROUNDS = Number(env.BENCH_TRACING_ROUNDS ?? 5);
const TARGETS = (env.BENCH_TRACING_TARGETS ?? 'today,off,on').split(',') as Target[];
/** The bounds on CPU per delta over today's: tracing off, tracing on. */
export const TRACING_BOUNDS = { off: 1.02, on: 1.15 };
const ROOT = path.resolve(import.meta.dirname, '../..');

type Target = 'today' | 'off' | 'on';

/** No OTLP endpoint of any kind: tracing and the OTLP metrics off, whatever the bench's own environment says. */
const NO_OTEL = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: '' };

const git = (...args: string[]): string => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();

/** The service before tracing: the first parent of the first commit on main's line that touched src/telemetry. */
export function baselineCommit(): string {
  if (env.BENCH_TRACING_BASELINE) return git('rev-parse', '--verify', `${env.BENCH_TRACING_BASELINE}^{commit}`);
  const first = git('log', '--first-parent', '--format=%H', '--', 'src/telemetry').split('\n').at(-1);
  if (!first) throw new Error('no commit touches src/telemetry: set BENCH_TRACING_BASELINE');
  return git('rev-parse', `${first}^1`);
}

/** `commit`'s tree in bench/out, with this tree's node_modules linked in. */
function checkout(commit: string): string {
  const dir = path.join(OUT, `tracing-today-${commit.slice(0, 12)}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', ROOT, commit, dir]);
  symlinkSync(realpathSync(path.join(ROOT, 'node_modules')), path.join(dir, 'node_modules'));
  return dir;
}

const median = (xs: number[]): number | null => round(middle(xs));

const values = (rows: Map<Target, Row[]>, t: Target, field: CpuField): number[] => (rows.get(t) ?? []).map((r) => r[field]).filter((v): v is number => v != null);

/** A figure's per-round values and their median, per target. */
const figures = (rows: Map<Target, Row[]>, field: CpuField) =>
  Object.fromEntries([...rows.keys()].map((t) => [t, { median: median(values(rows, t, field)), runs: values(rows, t, field) }]));

/** The medians' ratios: off and on over today's, on over off. */
function ratios(rows: Map<Target, Row[]>, field: CpuField) {
  const med = (t: Target) => median(values(rows, t, field));
  return { offVsToday: ratioOf(med('off'), med('today')), onVsToday: ratioOf(med('on'), med('today')), onVsOff: ratioOf(med('on'), med('off')) };
}

/** The rows (per round: today, off and on, the first rotated) and the check's summary. */
export async function runTracingRow(c: DriveContext, run: RunRow): Promise<Record<string, unknown>> {
  const step = { k: K, deltas: DELTAS, rate: RATE, startsPerSec: STARTS };
  const summary: Record<string, unknown> = { step: { ...step }, rounds: ROUNDS, bounds: TRACING_BOUNDS };
  if (!c.dbUrl && TARGETS.includes('today')) return { ...summary, skipped: 'no Postgres: the baseline\'s older migrations need a database of their own' };
  const commit = TARGETS.includes('today') ? baselineCommit() : null;
  const todayRoot = commit ? checkout(commit) : undefined;
  summary.baseline = commit ? { commit: commit.slice(0, 12), subject: git('log', '-1', '--format=%s', commit) } : null;
  const receiver = await startOtlpReceiver({ keep: false });
  const dbs: { db: BenchDb; meter: PgCpuMeter | null }[] = [];
  const own = async () => {
    const db = await createBenchDb();
    const entry = { db, meter: db.url ? await pgCpuMeter(db.url) : null };
    dbs.push(entry);
    return { url: db.url, meter: entry.meter };
  };
  try {
    const body = serviceBody('provider_c', true, DELTAS, RATE);
    const runs: Record<Target, AbRun> = {
      today: { path: '/v1/chat-completions/stream', body, kind: 'sse', env: NO_OTEL, root: todayRoot, db: await own(), note: `today's: the service at ${commit?.slice(0, 12)}, before tracing` },
      off: { path: '/v1/chat-completions/stream', body, kind: 'sse', env: NO_OTEL, db: await own(), note: 'tracing off: no OTEL_* endpoint' },
      on: {
        path: '/v1/chat-completions/stream', body, kind: 'sse', db: await own(),
        env: { ...NO_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on' },
        note: 'tracing on: OTEL_TRACES_SAMPLER=always_on, spans to an OTLP/HTTP receiver in the bench\'s process (the SDK\'s default batching)',
      },
    };
    const rows = new Map<Target, Row[]>(TARGETS.map((t) => [t, []]));
    const spans: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < TARGETS.length; i++) {
        const target = TARGETS[(i + round) % TARGETS.length]!;
        const base: Base = { target: 'service', provider: 'provider_c', persist: true, k: K, rate: RATE, scenario: 'stream', variant: `tracing-${target}` };
        const before = receiver.count();
        const row = await measureRun(c, run, step, base, { ...runs[target], note: `${runs[target].note}; round ${round + 1} of ${ROUNDS}` });
        if (target === 'on') spans.push(receiver.count() - before);
        if (row) rows.get(target)!.push(row);
      }
    }
    const whole = ratios(rows, 'cpuUsPerDelta');
    const failed = [...rows.values()].flat().reduce((n, r) => n + (r.failed ?? r.streams), 0);
    Object.assign(summary, {
      cpuUsPerDelta: figures(rows, 'cpuUsPerDelta'),
      cpuUsPerDeltaSteady: figures(rows, 'cpuUsPerDeltaSteady'),
      ratios: whole,
      ratiosSteady: ratios(rows, 'cpuUsPerDeltaSteady'),
      // What each "on" service sent, warm-up included: proof that it traced.
      spansReceivedPerOnRun: spans,
      failed,
      pass: {
        off: whole.offVsToday !== null && whole.offVsToday <= TRACING_BOUNDS.off,
        on: whole.onVsToday !== null && whole.onVsToday <= TRACING_BOUNDS.on,
        nothingFailed: failed === 0,
      },
    });
    return summary;
  } finally {
    if (todayRoot) rmSync(todayRoot, { recursive: true, force: true });
    await receiver.close();
    for (const { db, meter } of dbs) {
      await meter?.close().catch(() => undefined);
      await db.drop().catch(() => undefined);
    }
  }
}
