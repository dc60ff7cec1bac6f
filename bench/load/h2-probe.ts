// HTTP/1.1 against HTTP/2 toward a provider, measured with the service's own upstream client (undici's
// `request` on one Agent, as src/providers/http-fetch.ts does): RSS and V8 heap per open SSE stream
// (settled, after gc()), CPU per delivered chunk, and open sockets, for N streams held open at once.
// Real providers speak HTTP/2 over TLS (ALPN), so the modes are `h1` (cleartext, what the bench's
// simulator serves), `h1tls` and `h2tls` (undici's `allowH2`).
//
//   node --import tsx bench/load/h2-probe.ts [N=2000] [modes=h1,h1tls,h2tls,service-h1tls,service-h2tls] [rounds=2]
//
// Each mode runs in a fresh client process against a fresh server process, so neither's heap carries
// over; the modes alternate `rounds` times.
//
//   node --import tsx bench/load/h2-probe.ts goaway
//
// Why the service's HTTP/2 transport (src/providers/h2-fetch.ts) is built on node:http2 rather than
// undici's `allowH2`: ten streams share one connection and the server sends a graceful GOAWAY (NO_ERROR)
// mid-stream, as providers' front ends do when they rotate connections. undici 7 fails every stream on
// the connection; node:http2's client lets them finish.
import { execFileSync } from 'node:child_process';
import { createServer as createH1 } from 'node:http';
import { createSecureServer } from 'node:http2';
import { createServer as createH1Tls } from 'node:https';
import { fileURLToPath } from 'node:url';
import { selfSignedCertificate } from '../../test/helpers/tls.ts';
import { rssKb as processRssKb, start } from '../../test/helpers/procs.ts';

type Mode = 'h1' | 'h1tls' | 'h2tls' | 'service-h1tls' | 'service-h2tls';
type ServerMode = 'h1' | 'h1tls' | 'h2tls';
const SELF = fileURLToPath(import.meta.url);
const CHUNK_MS = 1000;
const CHUNK = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'tide pool ' } }] })}\n\n`;

/** The server: every request is an SSE stream of one chunk a second until the client goes. */
function serve(mode: ServerMode): void {
  const handler = (req: any, res: any) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(CHUNK);
    const t = setInterval(() => res.write(CHUNK), CHUNK_MS);
    req.on('close', () => clearInterval(t));
    res.on('close', () => clearInterval(t));
  };
  const tls = mode === 'h1' ? null : selfSignedCertificate();
  const server = mode === 'h1' ? createH1(handler)
    : mode === 'h1tls' ? createH1Tls(tls!, handler)
    : createSecureServer({ ...tls!, allowHTTP1: false, settings: { maxConcurrentStreams: 100_000 } }, handler);
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as any).port, cert: tls?.cert })));
}

const rssKb = () => processRssKb(process.pid);
const openSockets = () => Number(execFileSync('sh', ['-c', `ls /proc/${process.pid}/fd | wc -l`]).toString().trim());
const settle = async () => {
  for (let i = 0; i < 3; i++) (globalThis.gc as () => void)(), await new Promise((r) => setTimeout(r, 100));
};

/**
 * The client: N streams, then the settled figures and CPU per chunk over 10 s. `h1`, `h1tls`, `h2tls`:
 * undici's `request` on one Agent; `service-*`: the service's own provider fetch (src/providers/http-fetch.ts),
 * HTTP/1.1 only or with its HTTP/2 transport (h2-fetch.ts).
 */
async function client(mode: Mode, port: number, n: number, ca: string | undefined): Promise<void> {
  const { Agent, request } = await import('undici');
  const { createProviderFetch } = await import('../../src/providers/http-fetch.ts');
  // HTTP/2 in undici 7 takes three settings to multiplex: one connection (a Pool opens another
  // whenever its clients look busy, and before ALPN has answered every queued request looks busy),
  // `pipelining` (it defaults to 1 for h2 too, one request in flight per connection), and
  // `idempotent: true` on the requests (undici holds a non-idempotent request, a POST, until every
  // other request on its connection has ended).
  const h2 = mode === 'h2tls' ? { allowH2: true, connections: 1, pipelining: 100_000, maxConcurrentStreams: 100_000 } : {};
  const agent = new Agent({ keepAliveTimeout: 30_000, ...h2, connect: { rejectUnauthorized: false } });
  const providerFetch = createProviderFetch({ timeoutMs: 60_000, http2: mode === 'service-h2tls', ca });
  const url = `${mode === 'h1' ? 'http' : 'https'}://127.0.0.1:${port}/v1/chat/completions`;
  const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const headers = { 'content-type': 'application/json' };
  const openStream = async (signal?: AbortSignal): Promise<AsyncIterable<unknown>> => {
    if (mode.startsWith('service-')) return (await providerFetch(url, { method: 'POST', body, headers, signal })).body as any;
    return (await request(url, { method: 'POST', body, headers, idempotent: true, dispatcher: agent, signal })).body;
  };
  // Warm-up: JIT and the TLS session, so the idle figure is of a used client.
  for (let i = 0; i < 20; i++) {
    for await (const _ of await openStream()) break;
  }
  await settle();
  const idle = { rss: rssKb(), heap: process.memoryUsage().heapUsed, fds: openSockets() };
  let chunks = 0;
  const controllers: AbortController[] = [];
  const opened: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const ac = new AbortController();
    controllers.push(ac);
    opened.push(openStream(ac.signal).then((stream) => {
      void (async () => {
        try {
          for await (const _ of stream) chunks++;
        } catch { /* aborted at the end */ }
      })();
    }));
    if (i % 200 === 199) await new Promise((r) => setTimeout(r, 50));
  }
  await Promise.all(opened);
  await new Promise((r) => setTimeout(r, 2 * CHUNK_MS));
  await settle();
  const open = { rss: rssKb(), heap: process.memoryUsage().heapUsed, fds: openSockets() };
  const c0 = process.cpuUsage();
  const k0 = chunks;
  await new Promise((r) => setTimeout(r, 10 * CHUNK_MS));
  const cpu = process.cpuUsage(c0);
  const got = chunks - k0;
  console.log(JSON.stringify({
    mode, n,
    rssKbPerStream: +((open.rss - idle.rss) / n).toFixed(1),
    heapKbPerStream: +((open.heap - idle.heap) / 1024 / n).toFixed(1),
    fdsPerStream: +((open.fds - idle.fds) / n).toFixed(3),
    cpuUsPerChunk: +((cpu.user + cpu.system) / Math.max(1, got)).toFixed(1),
    chunks: got,
  }));
  for (const ac of controllers) ac.abort();
  process.exit(0);
}

/** This script again, in a fresh process with `gc()` exposed. */
const probe = (name: string, args: string[], o: Parameters<typeof start>[3] = {}) =>
  start(name, process.execPath, ['--expose-gc', '--import', 'tsx', SELF, ...args], { stderr: 'inherit', ...o });

async function driver(): Promise<void> {
  const n = Number(process.argv[2] ?? 2000);
  const modes = (process.argv[3] ?? 'h1,h1tls,h2tls,service-h1tls,service-h2tls').split(',') as Mode[];
  const rounds = Number(process.argv[4] ?? 2);
  for (let r = 0; r < rounds; r++) {
    for (const mode of modes) {
      const server = await probe('probe-server', ['--server', mode.replace('service-', '')], { ready: (l) => l.startsWith('{') });
      const { port, cert } = JSON.parse(server.line) as { port: number; cert?: string };
      const client = await probe('probe-client', ['--client', mode, String(port), String(n)], { env: { PROBE_CA: cert ?? '' }, onLine: (l) => console.log(l) });
      if (client.child.proc.exitCode === null) await new Promise((r) => client.child.proc.once('exit', r));
      await server.child.stop();
    }
  }
}

/** Ten streams of seven chunks on one HTTP/2 connection, a graceful GOAWAY after the third chunk. */
async function goaway(): Promise<void> {
  const tls = selfSignedCertificate();
  const sessions: Array<{ goaway(code: number): void }> = [];
  const server = createSecureServer({ ...tls, allowHTTP1: false }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(CHUNK);
    let n = 0;
    const t = setInterval(() => (res.write(CHUNK), ++n === 6 && (clearInterval(t), res.end())), 200);
    res.on('close', () => clearInterval(t));
  });
  server.on('session', (s) => sessions.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { Agent, request } = await import('undici');
  const { connect } = await import('node:http2');
  const agent = new Agent({ allowH2: true, connections: 1, pipelining: 100, connect: { rejectUnauthorized: false } });
  let session: ReturnType<typeof connect> | undefined; // opened by the second case, after the first's GOAWAY
  const viaUndici = async () => {
    const res = await request(origin, { method: 'POST', body: '{}', idempotent: true, dispatcher: agent });
    let chunks = 0;
    try {
      for await (const _ of res.body) chunks++;
      return `ended after ${chunks} chunks`;
    } catch (err) {
      return `failed after ${chunks} chunks: ${(err as Error).message}`;
    }
  };
  const viaNode = () => new Promise<string>((resolve) => {
    session ??= connect(origin, { rejectUnauthorized: false });
    const stream = session.request({ ':method': 'POST', ':path': '/' });
    stream.end('{}');
    let chunks = 0;
    stream.on('data', () => chunks++);
    stream.on('end', () => resolve(`ended after ${chunks} chunks`));
    stream.on('error', (err) => resolve(`failed after ${chunks} chunks: ${err.message}`));
  });
  for (const [name, open] of [['undici 7 (allowH2)', viaUndici], ['node:http2', viaNode]] as const) {
    const streams = Array.from({ length: 10 }, open);
    setTimeout(() => sessions.splice(0).forEach((s) => s.goaway(0)), 500);
    const outcomes = await Promise.all(streams);
    const counts = new Map<string, number>();
    for (const o of outcomes) counts.set(o, (counts.get(o) ?? 0) + 1);
    console.log(name, JSON.stringify(Object.fromEntries(counts)));
  }
  process.exit(0);
}

const [flag, a, b, c] = process.argv.slice(2);
if (flag === '--server') serve(a as ServerMode);
else if (flag === 'goaway') await goaway();
else if (flag === '--client') await client(a as Mode, Number(b), Number(c), process.env.PROBE_CA || undefined);
else await driver();
