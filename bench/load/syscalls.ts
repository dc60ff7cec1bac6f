// The syscalls of a start, per thread, beside nginx's: where the kernel's share of a start comes from
// (a third of it in `perf-starts.ts`'s owner split). Linux `perf trace -s` (tracepoints, no ptrace)
// counts every syscall of the process under test while one-delta streams start at a steady rate after
// a warm-up, as the start-rate row runs them.
//
//   node --import tsx bench/load/syscalls.ts [rate=500] [seconds=4] [warm-up starts=5000]
//
// Prints, for nginx and the service (unpersisted, then persisted), the syscalls per start by thread
// (nginx's worker; the service's main thread, actor threads and V8's helpers) and the commonest calls,
// and the thread wake-ups per start (voluntary context switches). Needs `perf` (Debian's linux-perf)
// with tracepoints readable (root, or perf_event_paranoid ≤ -1).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ccBody, serviceBody } from './bodies.ts';
import type { GenJob } from './gen.ts';
import { generate } from './measure.ts';
import { analyzeDb, createBenchDb, ensureNginx, startNginx, startService, startSimulator } from './targets.ts';
import { cpuMicros, processTree, stopAll, wakeUps } from '../../test/helpers/procs.ts';

const rate = Number(process.argv[2] ?? 500);
const seconds = Number(process.argv[3] ?? 4);
const warmStarts = Number(process.argv[4] ?? 5000);
const starts = rate * seconds;

interface ThreadCalls {
  thread: string;
  tid: number;
  calls: Map<string, number>;
}

/** `perf trace -s` output: a block per thread ("node (1234), 58 events") with a row per syscall. */
function parseSummary(text: string): ThreadCalls[] {
  const out: ThreadCalls[] = [];
  let cur: ThreadCalls | null = null;
  for (const line of text.split('\n')) {
    const head = /^\s*(\S.*) \((\d+)\), \d+ events/.exec(line);
    if (head) {
      cur = { thread: `${head[1]} ${head[2]}`, tid: Number(head[2]), calls: new Map() };
      out.push(cur);
      continue;
    }
    const row = /^\s+([a-z_0-9]+)\s+(\d+)\s+\d+\s/.exec(line);
    if (cur && row) cur.calls.set(row[1]!, Number(row[2]));
  }
  return out;
}

/** Counts `job`'s syscalls in the process tree of `pid`, already warmed up. */
async function traced(label: string, pid: number, job: GenJob): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-syscalls-'));
  const file = path.join(dir, 'summary.txt');
  const pids = processTree(pid);
  const perf = spawn('perf', ['trace', '-s', '-p', pids.join(','), '-o', file], { stdio: 'inherit' });
  const exited = new Promise<void>((resolve) => perf.on('exit', () => resolve()));
  await new Promise((r) => setTimeout(r, 1000)); // perf trace attaches before the job starts
  const [cpu0, wakes0] = [cpuMicros(pid), wakeUps(pid)];
  const r = await generate({ ...job, k: starts });
  const [cpu, wakes] = [cpuMicros(pid) - cpu0, wakeUps(pid) - wakes0];
  perf.kill('SIGINT');
  await exited;
  const threads = parseSummary(readFileSync(file, 'utf8'));
  rmSync(dir, { recursive: true, force: true });
  const total = (t: ThreadCalls) => [...t.calls.values()].reduce((a, b) => a + b, 0);
  const all = new Map<string, number>();
  for (const t of threads) for (const [k, v] of t.calls) all.set(k, (all.get(k) ?? 0) + v);
  const per = (n: number) => (n / starts).toFixed(2);
  console.log(`\n== ${label}: ${starts} one-delta starts at ${rate}/s, failed ${r.failed}; CPU ${(cpu / starts).toFixed(0)} µs per start (under perf trace); wake-ups ${per(wakes)} per start`);
  console.log(`syscalls per start: ${per([...all.values()].reduce((a, b) => a + b, 0))}, by thread:`);
  for (const t of threads.filter((x) => total(x) / starts >= 0.05).sort((a, b) => total(b) - total(a))) {
    const top = [...t.calls].sort((a, b) => b[1] - a[1]).filter(([, n]) => n / starts >= 0.05).map(([k, n]) => `${k} ${per(n)}`).join(', ');
    console.log(`  ${t.thread}${t.tid === pid ? ' (main thread)' : ''}: ${per(total(t))} (${top})`);
  }
}

try {
  const sim = await startSimulator();
  const ccPath = new URL(sim.urls.provider_c).pathname + '/chat/completions';
  const bin = ensureNginx();
  if (bin) {
    const nginx = await startNginx(bin, sim.port, starts * 2);
    const job: GenJob = { mode: 'streams', host: '127.0.0.1', port: nginx.port, path: ccPath, headers: { authorization: 'Bearer k' }, body: ccBody(1, 1), kind: 'cc', k: starts, deltas: 1, rate: 1, startsPerSec: rate };
    await generate({ ...job, k: warmStarts });
    await traced('nginx', nginx.child.pid, job);
    await nginx.child.stop();
  }
  for (const persist of [false, true]) {
    const db = persist ? await createBenchDb() : { url: null, drop: async () => {} };
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-syscalls-data-'));
    const { child, port } = await startService({ sim: sim.urls, databaseUrl: db.url, maxActiveRuns: starts * 2, dataDir });
    const job: GenJob = { mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body: serviceBody('provider_c', persist, 1, 1), kind: 'sse', k: starts, deltas: 1, rate: 1, startsPerSec: rate };
    await generate({ ...job, k: warmStarts });
    if (db.url) await analyzeDb(db.url);
    await traced(`service, ${persist ? 'persisted' : 'unpersisted'}`, child.proc.pid!, job);
    await child.stop();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
} finally {
  await stopAll();
}
