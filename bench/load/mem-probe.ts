// Where a stream's memory goes: N persisted streams held open (one delta a second), then the service's
// RSS and, with ACTOR_THREADS=0 (every run on the main thread), its V8 heap and external memory from
// /metrics, each per stream over the idle process; with MEM_SNAPSHOT=1 heap snapshots (SIGUSR2) of the
// idle and the loaded process are written to the service's cwd, for heap-summary.ts --base and
// heap-retained.ts (writing the idle one grows the RSS: read RSS from a run without snapshots).
//   node --import tsx bench/load/mem-probe.ts   (MEM_K=2000, MEM_THREADS=0)
import { readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createBenchDb, OUT, startService, startSimulator } from './targets.ts';
import { rssKb, sleep } from '../../test/helpers/procs.ts';

const K = Number(process.env.MEM_K ?? 2000);
const threads = process.env.MEM_THREADS ?? '0';
const snapshot = process.env.MEM_SNAPSHOT === '1';
process.env.ACTOR_THREADS = threads;

async function metrics(port: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const name of ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes', 'process_resident_memory_bytes']) {
    const m = new RegExp(`^${name} (\\S+)`, 'm').exec(text);
    if (m) out[name] = Number(m[1]);
  }
  return out;
}

const sim = await startSimulator();
const db = await createBenchDb();
const svc = await startService({ sim: sim.urls, databaseUrl: db.url, maxActiveRuns: K * 2, nodeFlags: snapshot ? ['--heapsnapshot-signal=SIGUSR2', '--expose-gc'] : [] });
const pid = svc.child.pid;
const body = (i: number) =>
  JSON.stringify({ provider: 'provider_c', model: 'm', persist: true, enabledTools: [], messages: [{ role: 'user', content: `mem ${i}\nSIM ${JSON.stringify({ deltas: 90, rate: 1, stamp: true })}` }] });
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const open: http.ClientRequest[] = [];
let firstDeltas = 0;
function startOne(i: number) {
  const req = http.request({ host: '127.0.0.1', port: svc.port, path: '/v1/chat-completions/stream', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
    let seen = false;
    res.on('data', (chunk: Buffer) => {
      if (!seen && chunk.includes('event: delta')) {
        seen = true;
        firstDeltas++;
      }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  req.end(body(i));
  open.push(req);
}
// Warm up (JIT, pools) with a few short streams, then idle figures.
for (let i = 0; i < 50; i++) startOne(-i - 1);
await sleep(4000);
for (const r of open.splice(0)) r.destroy();
await sleep(3000);
const idleRss = rssKb(pid);
const idle = await metrics(svc.port);
if (snapshot) {
  process.kill(pid, 'SIGUSR2');
  await sleep(10000);
}
for (let i = 0; i < K; i++) {
  startOne(i);
  if (i % 200 === 199) await sleep(200);
}
while (firstDeltas < K) await sleep(200);
await sleep(3000);
const rss = rssKb(pid);
const now = await metrics(svc.port);
const per = (a: number, b: number) => ((a - b) / 1024 / K).toFixed(1);
console.log(`K=${K} ACTOR_THREADS=${threads}: RSS ${per(rss * 1024, idleRss * 1024)} KB/stream (idle ${Math.round(idleRss / 1024)} MB)`);
console.log(`  main heap used ${per(now.nodejs_heap_size_used_bytes!, idle.nodejs_heap_size_used_bytes!)} KB/stream, heap total ${per(now.nodejs_heap_size_total_bytes!, idle.nodejs_heap_size_total_bytes!)}, external ${per(now.nodejs_external_memory_bytes!, idle.nodejs_external_memory_bytes!)}`);
if (snapshot) {
  process.kill(pid, 'SIGUSR2');
  await sleep(15000);
  const files = readdirSync(path.resolve(OUT, '..', '..')).filter((f) => f.endsWith('.heapsnapshot'));
  console.log(`  snapshot: ${files.join(', ')} (in the service's cwd)`);
}
for (const r of open) r.destroy();
await svc.child.stop();
await sim.child.stop();
await db.drop();
process.exit(0);
