// Measures the simulator's own streaming ceiling: it runs the simulator in a child process (one
// core: Node runs JS on one thread) and reads many concurrent Chat Completions streams of stamped
// deltas with a raw-socket reader here, counting deltas by their `|"}` ending instead of parsing.
//
//   node --import tsx bench/load/sim-ceiling.ts [--streams 1000] [--deltas 2000] [--rate 0] [--seconds 5]
//
// --rate 0 (default): unlimited streams, i.e. the most deltas/s the simulator can produce.
// --rate N: every stream at N deltas/s through the shared ticker; reports whether it keeps up and
// the lag between a delta's stamp and its arrival here.
// SIM_NODE_ARGS (space-separated) adds node flags to the simulator process, e.g. --cpu-prof.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const STREAMS = arg('streams', 1000);
const DELTAS = arg('deltas', 2000);
const RATE = arg('rate', 0);
const SECONDS = arg('seconds', 5);
const WARMUP_MS = 1000;

const child = spawn(process.execPath, [...(process.env.SIM_NODE_ARGS ? process.env.SIM_NODE_ARGS.split(' ') : []), '--import', 'tsx', new URL('../../src/sim/main.ts', import.meta.url).pathname], {
  env: { ...process.env, SIM_PORT: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const firstLine = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
const urls = JSON.parse(firstLine) as { provider_c: string };
const { hostname, port, pathname } = new URL(urls.provider_c);

const directive = JSON.stringify({ deltas: DELTAS, stamp: true, ...(RATE > 0 ? { rate: RATE } : {}) });
const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: `SIM ${directive}` }] });
const request =
  `POST ${pathname}/chat/completions HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer k\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

const MARK = Buffer.from('|"}');
const CONTENT = Buffer.from('"content":"');
let counting = false;
let counted = 0;
let stopped = false;
const lags: number[] = [];
const sockets = new Set<Socket>();

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime, in clock ticks (100/s on Linux)
}

function open(): void {
  if (stopped) return;
  const s = connect({ host: hostname, port: Number(port) });
  sockets.add(s);
  let tail: Buffer = Buffer.alloc(0);
  s.on('data', (chunk: Buffer) => {
    // Carry the last bytes over so a mark split across chunks is still counted once.
    const buf = tail.length ? Buffer.concat([tail, chunk]) : chunk;
    let n = 0;
    for (let i = buf.indexOf(MARK); i >= 0; i = buf.indexOf(MARK, i + MARK.length)) {
      n++;
      if (RATE > 0 && counting && (counted + n) % 50 === 0) {
        const start = buf.lastIndexOf(CONTENT, i);
        if (start >= 0) lags.push(performance.timeOrigin + performance.now() - Number(buf.toString('latin1', start + CONTENT.length, i)));
      }
    }
    if (counting) counted += n;
    tail = buf.subarray(Math.max(0, buf.length - (MARK.length - 1)));
  });
  s.on('close', () => {
    sockets.delete(s);
    open();
  });
  s.on('error', () => {});
  s.write(request);
}

for (let i = 0; i < STREAMS; i++) open();
await new Promise((r) => setTimeout(r, WARMUP_MS));
counting = true;
const cpu0 = cpuTicks(child.pid!);
const readerCpu0 = process.cpuUsage();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, SECONDS * 1000));
const elapsed = (performance.now() - t0) / 1000;
const cpu = (cpuTicks(child.pid!) - cpu0) / 100 / elapsed;
const readerCpuUsage = process.cpuUsage(readerCpu0);
const readerCpu = (readerCpuUsage.user + readerCpuUsage.system) / 1e6 / elapsed;
const total = counted;
stopped = true;
for (const s of sockets) s.destroy();
child.kill('SIGTERM');

const perSec = total / elapsed;
const out: Record<string, unknown> = {
  streams: STREAMS,
  deltasPerStream: DELTAS,
  rate: RATE || 'unlimited',
  seconds: Number(elapsed.toFixed(2)),
  deltasPerSecond: Math.round(perSec),
  simulatorCpu: Number(cpu.toFixed(2)),
  readerCpu: Number(readerCpu.toFixed(2)),
  cpuMicrosPerDelta: Number(((cpu * 1e6) / perSec).toFixed(2)),
  // What one fully busy core would stream at this cost (the machine may be shared while measuring).
  perCoreDeltasPerSecond: Math.round(perSec / cpu),
};
if (RATE > 0) {
  out.targetDeltasPerSecond = STREAMS * RATE;
  lags.sort((a, b) => a - b);
  const q = (p: number): number => Number((lags[Math.min(lags.length - 1, Math.floor(p * lags.length))] ?? NaN).toFixed(2));
  out.lagMs = { p50: q(0.5), p99: q(0.99), max: q(1) };
}
console.log(JSON.stringify(out));
process.exit(0);
