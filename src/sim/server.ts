// The offline provider simulator: one node:http server whose path prefixes stand in for the four
// providers, the two search engines and a small web site. See README.md for the scripting language.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createH2cServer, createSecureServer } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { handleChat } from './chat-completions.ts';
import { defaultReplyFromEnv, type DefaultReply } from './default-reply.ts';
import { handleEngineA, handleEngineB } from './engines.ts';
import { BodyTooLarge, isObject, ParseFailure, parseJsonBody, readBody, retryCount, sendJson } from './http.ts';
import { parseFaults, type FaultSpec } from './faults.ts';
import { handleMessages } from './messages.ts';
import { handleModels, isModelsPath } from './models.ts';
import { handlePages } from './pages.ts';
import { handleResponses } from './responses.ts';
import { SimState, UPSTREAMS, type Ctx, type Upstream } from './state.ts';

export interface SimUrls {
  provider_a: string;
  provider_b: string;
  provider_c: string;
  provider_d: string;
  engine_a: string;
  engine_b: string;
  engine_b_nojson: string;
  pages: string;
}

export interface SimRequestLog {
  method: string;
  /** Path without the query string. */
  path: string;
  /** The query string including `?`, or '' (an addition to the shared contract). */
  query: string;
  upstream: keyof SimUrls | 'unknown';
  headers: Record<string, string | string[] | undefined>;
  body: any;
  retryCount: string | undefined;
  /** The client closed the connection before the answer was complete (e.g. a stopped stream). */
  closedEarly: boolean;
  /** '1.1', or '2.0' when the https mode negotiated HTTP/2 (an addition to the shared contract). */
  httpVersion: string;
  /** The client's port: requests that share it came over one connection. */
  remotePort: number | undefined;
}

export interface SimHandle {
  port: number;
  urls: SimUrls;
  close(): Promise<void>;
  /** every request received, for assertions (the oldest are dropped past 20,000) */
  requests: SimRequestLog[];
  clearRequests(): void;
  /** Lets the calls a `gate` / `searchGate` / `answerGate` directive holds go on (see README). */
  openGate(name: string): void;
  /** How many calls are held at the gate `name` now. */
  heldAt(name: string): number;
  /** Replaces the faults in force (as `POST /sim/faults`); an empty list clears them. */
  setFaults(faults: FaultSpec[]): void;
  /** Model calls (not model listings) `upstream` received so far, from the request log. */
  calls(upstream: keyof SimUrls): number;
}

/** Path prefix → upstream, and the part of the prefix that belongs to the base URL. */
const PREFIXES: { prefix: string; upstream: Upstream; base: string }[] = [
  { prefix: '/provider-a/v1', upstream: 'provider_a', base: '/provider-a/v1' },
  { prefix: '/provider-b', upstream: 'provider_b', base: '/provider-b' },
  { prefix: '/provider-c/v1', upstream: 'provider_c', base: '/provider-c/v1' },
  { prefix: '/provider-d/v1', upstream: 'provider_d', base: '/provider-d/v1' },
  { prefix: '/engine-b-nojson', upstream: 'engine_b_nojson', base: '/engine-b-nojson' },
  { prefix: '/engine-a', upstream: 'engine_a', base: '/engine-a' },
  { prefix: '/engine-b', upstream: 'engine_b', base: '/engine-b' },
  { prefix: '/pages', upstream: 'pages', base: '/pages' },
];

/** Long-running `make run` sessions must not grow the log forever; tests never get near this. */
const LOG_MAX = 20_000;

function match(path: string): { upstream: Upstream; sub: string } | null {
  for (const p of PREFIXES) {
    if (path === p.prefix || path.startsWith(p.prefix + '/')) return { upstream: p.upstream, sub: path.slice(p.base.length) };
  }
  return null;
}

function urlsFor(host: string, port: number, scheme = 'http'): SimUrls {
  const h = host.includes(':') ? `[${host}]` : host;
  const base = `${scheme}://${h}:${port}`;
  const urls = {} as SimUrls;
  // UPSTREAMS order, so the printed line reads provider_a … pages.
  for (const u of UPSTREAMS) urls[u] = base + PREFIXES.find((p) => p.upstream === u)!.base;
  return urls;
}

export interface SimOptions {
  port?: number;
  host?: string;
  tls?: { key: string; cert: string };
  /** Cleartext HTTP/2 with prior knowledge instead of HTTP/1.1 (ignored with `tls`). */
  h2c?: boolean;
  /** The unscripted answer; fields left out come from SIM_DEFAULT_REPLY / SIM_DEFAULT_RATE. */
  defaultReply?: Partial<DefaultReply>;
}

/**
 * `tls`: serve https, HTTP/2 where the client offers it (ALPN) and HTTP/1.1 otherwise, as real providers
 * do; the bench measures the service's HTTP/2 transport against it. `h2c`: plain http, HTTP/2 only
 * (prior knowledge), as a cleartext gateway that multiplexes would (PROVIDER_H2C_ORIGINS). Plain http
 * (HTTP/1.1) otherwise.
 */
export async function startSimulator(opts: SimOptions = {}): Promise<SimHandle> {
  const host = opts.host ?? '127.0.0.1';
  const state = new SimState({ ...defaultReplyFromEnv(), ...opts.defaultReply });
  const requests: SimRequestLog[] = [];

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res, state, requests).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: `simulator bug: ${String(err)}` });
      else res.destroy();
    });
  };
  // node:http2's compatibility request and response stand in for node:http's in every handler.
  const settings = { maxConcurrentStreams: 1000 };
  const server = opts.tls
    ? createSecureServer({ ...opts.tls, allowHTTP1: true, settings }, onRequest as never)
    : opts.h2c
      ? createH2cServer({ settings }, onRequest as never)
      : createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, onRequest);

  // closeAllConnections() misses sockets a scripted disconnect already half-closed; track them all
  // so close() never waits for one.
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.port ?? 0, host, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    urls: urlsFor(host, port, opts.tls ? 'https' : 'http'),
    requests,
    clearRequests: () => {
      requests.length = 0;
    },
    openGate: (name) => state.gates.open(name),
    heldAt: (name) => state.gates.held(name),
    setFaults: (faults) => state.faults.set(faults),
    calls: (upstream) => requests.filter((r) => r.upstream === upstream && isModelCall(r)).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const s of sockets) s.destroy();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, state: SimState, requests: SimRequestLog[]): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const search = q < 0 ? '' : url.slice(q);
  let body: unknown;
  let raw: Buffer;
  try {
    raw = await readBody(req);
    body = parseJsonBody(raw);
  } catch (e) {
    if (e instanceof BodyTooLarge) return sendJson(res, 413, { error: 'request body too large' });
    throw e;
  }
  const m = match(path);
  const entry: SimRequestLog = {
    method: req.method ?? 'GET',
    path,
    query: search,
    upstream: m?.upstream ?? 'unknown',
    headers: req.headers,
    body: body instanceof ParseFailure ? body.raw : body,
    retryCount: retryCount(req),
    closedEarly: false,
    httpVersion: req.httpVersion,
    remotePort: req.socket.remotePort,
  };
  requests.push(entry);
  res.once('close', () => {
    if (!res.writableFinished) entry.closedEarly = true;
  });
  if (requests.length > LOG_MAX) requests.splice(0, requests.length - LOG_MAX / 2);

  if (path === '/__control' && req.method === 'POST') return control(res, state, body);
  if (path === '/sim/faults') return faultsRoute(req.method ?? 'GET', res, state, body);
  if (!m) {
    if (path === '/' && req.method === 'GET') {
      const addr = req.socket.localAddress ?? '127.0.0.1';
      return sendJson(res, 200, urlsFor(addr.replace(/^::ffff:/, ''), req.socket.localPort ?? 0, 'encrypted' in req.socket ? 'https' : 'http'));
    }
    return sendJson(res, 404, { error: `no simulated upstream at ${path}` });
  }
  const ctx: Ctx = {
    req,
    res,
    body,
    path: m.sub,
    query: new URLSearchParams(search),
    upstream: m.upstream,
    state,
    retryCount: retryCount(req),
    raw,
  };
  if (m.upstream.startsWith('provider_') && isModelsPath(ctx)) return handleModels(ctx);
  switch (m.upstream) {
    case 'provider_a':
      return handleResponses(ctx);
    case 'provider_b':
      return handleMessages(ctx);
    case 'provider_c':
    case 'provider_d':
      return handleChat(ctx);
    case 'engine_a':
      return handleEngineA(ctx);
    case 'engine_b':
    case 'engine_b_nojson':
      return handleEngineB(ctx);
    case 'pages':
      return handlePages(ctx);
  }
}

/** A call for an answer, not for the model list or anything else. */
export function isModelCall(r: Pick<SimRequestLog, 'method' | 'path'>): boolean {
  return r.method === 'POST' && /\/(responses|messages|chat\/completions)$/.test(r.path);
}

/** `GET /sim/faults` lists the faults in force; `POST` replaces them (`{"clear":true}` or `DELETE` clears them). */
function faultsRoute(method: string, res: ServerResponse, state: SimState, body: unknown): void {
  if (method === 'DELETE') state.faults.clear();
  else if (method === 'POST') {
    const parsed = parseFaults(body);
    if (typeof parsed === 'string') return sendJson(res, 400, { error: parsed });
    state.faults.set(parsed);
  } else if (method !== 'GET') return sendJson(res, 405, { error: 'use GET, POST or DELETE' });
  sendJson(res, 200, { faults: state.faults.describe() });
}

/** Test-only switches: `{"failModels":["provider_a",…]}` (empty array restores), `{"reset":true}`. */
function control(res: ServerResponse, state: SimState, body: unknown): void {
  if (!isObject(body)) return sendJson(res, 400, { error: 'expected a JSON object' });
  if (body.reset === true) state.resetControls();
  if (body.failModels !== undefined) {
    const list = body.failModels;
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string' && (UPSTREAMS as readonly string[]).includes(x))) {
      return sendJson(res, 400, { error: `failModels must be an array of ${UPSTREAMS.slice(0, 4).join(', ')}` });
    }
    state.failModels = new Set(list as string[]);
  }
  sendJson(res, 200, { failModels: [...state.failModels] });
}
