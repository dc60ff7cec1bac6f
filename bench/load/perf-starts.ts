// Where a start's CPU goes, kernel included: Linux `perf record` on the service while one-delta streams
// start at a steady rate (the start-rate row's load). V8's profiles (BENCH_PROFILE, prof.ts) sample wall
// time per thread, so a syscall that wakes another process is charged for the wait that follows; perf
// samples CPU cycles of every thread of the process, so what it shows is what the start costs.
//
//   node --import tsx bench/load/perf-starts.ts [rate=500] [seconds=6] [persist=0|1] [warm-up starts=5000]
//
// PERF_DELTAS=D:R streams D deltas at R/s instead (the delta path): the streams start at `rate` for
// `seconds`, and perf records from the end of that ramp to the end of the first stream (D ÷ R − seconds).
//
// Needs `perf` (Debian's linux-perf) and perf_event_paranoid ≤ 2 for one's own processes. The service
// runs with --perf-basic-prof so JIT frames have names. Prints the service's CPU per start (or per delta
// over the recorded window), its split by owner (perf-owners.ts: ours, the packages we must keep, Node,
// V8, the kernel), by thread and by binary, then the top symbols by self time; the raw perf.data stays
// in bench/out/perf-starts/.
//
// PERF_H2C=1 serves the provider over cleartext HTTP/2 (the simulator with SIM_H2C=1, PROVIDER_H2C_ORIGINS).
//
// PERF_SCOPE=postgres (with persist=1) records the whole machine instead and reports only the Postgres
// processes: where the database's share of a persisted start goes (the create and answer statements'
// inserts, indexes, WAL), which the service's own figures do not show. Its table is inclusive (a
// function with what it calls: ExecInsertIndexTuples, XLogFlush, AfterTriggerEndQuery) and in percent of
// Postgres's own samples; Debian's postgres has no symbols for its static functions, so some frames
// read [unknown].
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serviceBody } from './bodies.ts';
import { h2cEnv } from './drive.ts';
import { cpuWindow, generate } from './measure.ts';
import { busiestTids, ownerShares, ownerTable } from './perf-owners.ts';
import { analyzeDb, createBenchDb, OUT, startService, startSimulator } from './targets.ts';
import { cpuMicros, stopAll, wakeUps } from '../../test/helpers/procs.ts';

const rate = Number(process.argv[2] ?? 500);
const seconds = Number(process.argv[3] ?? 6);
const persist = process.argv[4] === '1';
const warmStarts = Number(process.argv[5] ?? 5000);
const pgScope = process.env.PERF_SCOPE === 'postgres';
const [deltas, deltaRate] = (process.env.PERF_DELTAS ?? '1:1').split(':').map(Number) as [number, number];
// One-delta starts: the middle of the job (from its start to a second before its end). Streams: the
// steady phase, when every stream is open.
const [recordFrom, recordFor] = deltas > 1 ? [seconds, deltas / deltaRate - seconds] : [0, seconds - 1];
if (!(recordFor > 0)) throw new Error(`PERF_DELTAS=${deltas}:${deltaRate} leaves no steady phase after a ${seconds} s ramp`);
const out = path.join(OUT, 'perf-starts');
mkdirSync(out, { recursive: true });
const data = path.join(out, 'perf.data');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-perf-'));
const db = persist ? await createBenchDb() : { url: null, drop: async () => {} };

const job = (k: number, d: number, r: number) => ({
  mode: 'streams' as const, host: '127.0.0.1', port: 0, path: '/v1/chat-completions/stream',
  body: serviceBody('provider_c', persist, d, r), kind: 'sse' as const, k, deltas: d, rate: r, startsPerSec: rate,
});

try {
  const h2c = process.env.PERF_H2C === '1';
  const sim = await startSimulator({ h2c });
  const { child, port } = await startService({ sim: sim.urls, databaseUrl: db.url, maxActiveRuns: rate * seconds * 2, dataDir, env: h2c ? h2cEnv(sim.urls) : undefined, nodeFlags: ['--perf-basic-prof', '--logfile=/dev/null', '--no-logfile-per-isolate'] });
  const pid = child.proc.pid!;
  await generate({ ...job(warmStarts, 1, 1), port });
  if (db.url) await analyzeDb(db.url);
  rmSync(data, { force: true });
  const delay = recordFrom > 0 ? ['-D', String(recordFrom * 1000)] : [];
  const perf = spawn('perf', ['record', '-q', ...delay, '-F', '997', '-g', ...(pgScope ? ['-a'] : ['-p', String(pid)]), '-o', data, '--', 'sleep', String(recordFrom + recordFor)], { stdio: 'inherit' });
  const exited = new Promise<number | null>((resolve) => perf.on('exit', resolve));
  // The service's CPU over what is divided: the whole job for starts, the recorded window for deltas.
  const window = deltas > 1 ? cpuWindow(pid, recordFrom, recordFrom + recordFor) : null;
  const cpu0 = cpuMicros(pid);
  const wakes0 = wakeUps(pid);
  const r = await generate({ ...job(rate * seconds, deltas, deltaRate), port });
  const cpuUs = window ? window.stop() : cpuMicros(pid) - cpu0;
  const wakes = wakeUps(pid) - wakes0;
  const code = await exited;
  if (code !== 0) throw new Error(`perf record exited with ${code}`);
  const what = deltas > 1 ? `streams of ${deltas} deltas at ${deltaRate}/s` : 'one-delta streams';
  console.log(`${rate * seconds} ${what} started at ${rate}/s (${persist ? 'persisted' : 'unpersisted'}): failed ${r.failed}, ttfd p50 ${r.ttfdMs.p50} ms; perf from ${recordFrom} s for ${recordFor} s`);
  const units = deltas > 1 ? rate * seconds * deltaRate * recordFor : rate * seconds;
  const unitUs = cpuUs === null ? null : cpuUs / units;
  const unit = deltas > 1 ? 'delta' : 'start';
  console.log(`\nCPU per ${unit}: ${unitUs === null ? 'not read' : `${unitUs.toFixed(1)} µs`} (the service's user + system time ÷ ${units} ${unit}s)`);
  console.log(`Thread wake-ups per ${deltas > 1 ? 'stream' : 'start'}: ${(wakes / (rate * seconds)).toFixed(2)} (voluntary context switches of all the service's threads over the job)`);
  const report = (sort: string, lines: number, extra: string[] = ['--no-children']) => execFileSync('perf', ['report', '-i', data, ...extra, '--sort', sort, '--stdio', '-g', 'none', '--percent-limit', '0.5'], { encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\n').filter((l) => l && !l.startsWith('#')).slice(0, lines).join('\n');
  if (pgScope) {
    const postgres = ['--comms', 'postgres', '--percentage', 'relative'];
    console.log('\n== Postgres, inclusive (children counted), percent of its samples\n' + report('sym', 80, [...postgres, '--children']));
    console.log('\n== Postgres, by process\n' + report('pid', 12, [...postgres, '--no-children']));
  } else {
    const byThread = report('pid', 12);
    const actorThreads = Number(process.env.ACTOR_THREADS ?? Math.max(1, os.availableParallelism() - 1));
    console.log('\n== by owner\n' + ownerTable(ownerShares(data, busiestTids(byThread, 1 + actorThreads)), unitUs, unit));
    console.log('\n== by thread\n' + byThread);
    console.log('\n== by binary\n' + report('dso', 12));
    console.log('\n== top symbols\n' + report('sym', 60));
  }
} finally {
  await stopAll();
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
