// How many upstream connections a fresh service holds after K one-delta starts at each start rate: whether
// keep-alive reuse holds below saturation (docs/performance.md, third round). Embedded database, unpersisted,
// counted with `ss` (connections to the simulator's port).
//
//   node --import tsx bench/load/upstream-conns.ts [K=1000] [rates=100,500,1000]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serviceBody } from './bodies.ts';
import { generate } from './measure.ts';
import { startService, startSimulator } from './targets.ts';
import { stopAll } from '../../test/helpers/procs.ts';

const k = Number(process.argv[2] ?? 1000);
const rates = (process.argv[3] ?? '100,500,1000').split(',').map(Number);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-conns-'));
try {
  const sim = await startSimulator();
  const { port } = await startService({ sim: sim.urls, databaseUrl: null, maxActiveRuns: k * 2, dataDir });
  const open = () => execFileSync('ss', ['-tnH', 'state', 'established', `( dport = :${sim.port} )`], { encoding: 'utf8' }).split('\n').filter(Boolean).length;
  for (const startsPerSec of rates) {
    const r = await generate({ mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body: serviceBody('provider_c', false, 1, 1), kind: 'sse', k, deltas: 1, rate: 1, startsPerSec });
    console.log(`${k} starts at ${startsPerSec}/s: failed ${r.failed}, time to first delta p50 ${r.ttfdMs.p50} ms; upstream connections open after: ${open()}`);
  }
} finally {
  await stopAll();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
