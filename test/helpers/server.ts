// A real service for API tests: the simulator for every upstream, a fresh database (a scratch database
// on TEST_DATABASE_URL when set, else embedded), a random port, and small HTTP/SSE clients.
import { createParser } from 'eventsource-parser';
import { after, before } from 'node:test';
import { startServer, type Server } from '../../src/app/app.ts';
import { loadConfig } from '../../src/base/config.ts';
import type { Clock } from '../../src/service/context.ts';
import { createLogger } from '../../src/base/log.ts';
import type { Logger } from 'pino';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { createScratchPostgres, databaseKinds, migratedEmbeddedDataDir, type DbKind } from './db.ts';

export { variantTag, type DbKind } from './db.ts';

/** The databases API suites run on: embedded always, Postgres when TEST_DATABASE_URL is set (else a skip line). */
export const apiDatabases = (): DbKind[] => databaseKinds();

/**
 * The database of a test server that names none: Postgres when TEST_DATABASE_URL is set, else the
 * embedded one. Suites about the database name it (`db: kind` over `apiDatabases()`, titled [pglite] /
 * [postgres]); the rest test HTTP behaviour, and a scratch Postgres database costs the test process
 * ~1.3 s less CPU than opening PGlite (its 9 MB of WASM compiled and a WASM Postgres started in-process).
 */
const defaultDb = (): DbKind => (process.env.TEST_DATABASE_URL ? 'postgres' : 'embedded');

export interface TestServerOptions {
  /** Default: Postgres when TEST_DATABASE_URL is set, else embedded (see defaultDb). */
  db?: DbKind;
  /** Use this database as it is (e.g. on a throwaway cluster the test controls) instead of a fresh one. */
  databaseUrl?: string;
  actorThreads?: number;
  env?: Record<string, string>;
  clock?: Clock;
  /** Reuse a simulator (several servers in one file). */
  sim?: SimHandle;
  /** The service's logger (a test that reads its lines); default silent. */
  log?: Logger;
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
}

export interface SseEvent {
  event: string;
  data: any;
}

export interface TestServer {
  url: string;
  server: Server;
  sim: SimHandle;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  /** POSTs and reads the SSE stream to its end (or until `stopAfter` returns true, then disconnects). */
  stream(path: string, body?: unknown, opts?: StreamOptions): Promise<StreamResult>;
  close(): Promise<void>;
}

export interface StreamOptions {
  headers?: Record<string, string>;
  stopAfter?: (ev: SseEvent, all: SseEvent[]) => boolean;
}

export interface StreamResult {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** Non-SSE answer (an error before the stream started). */
  body?: any;
}

export function simEnv(sim: SimHandle): Record<string, string> {
  return {
    SIMULATE: 'off',
    PROVIDER_A_API_KEY: 'k',
    PROVIDER_A_BASE_URL: sim.urls.provider_a,
    PROVIDER_B_API_KEY: 'k',
    PROVIDER_B_BASE_URL: sim.urls.provider_b,
    PROVIDER_C_API_KEY: 'k',
    PROVIDER_C_BASE_URL: sim.urls.provider_c,
    AGENT_PROVIDER_API_KEY: 'k',
    AGENT_PROVIDER_API_BASE_URL: sim.urls.provider_d,
    ENGINE_A_API_KEY: 'k',
    ENGINE_A_BASE_URL: sim.urls.engine_a,
    CHAT_ENGINE_B_BASE_URL: sim.urls.engine_b,
  };
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const ownSim = !opts.sim;
  const sim = opts.sim ?? (await startSimulator({ defaultReply: { mode: 'echo' } }));
  const cleanups: Array<() => Promise<void>> = [];
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ACTOR_THREADS: String(opts.actorThreads ?? 0),
    PROVIDER_TIMEOUT_MS: '30000',
    // Retries of a scripted failure cost a millisecond, and breakers stay out of tests that do not test
    // them: a file's scripted failures would otherwise open its provider's breaker for the next tests.
    PROVIDER_RETRY_BASE_MS: '1',
    PROVIDER_BREAKER_FAILURES: '0',
    ...simEnv(sim),
    ...opts.env,
  };
  if (opts.databaseUrl) {
    env.DATABASE_URL = opts.databaseUrl;
  } else if ((opts.db ?? defaultDb()) === 'postgres') {
    const scratch = await createScratchPostgres();
    env.DATABASE_URL = scratch.url;
    cleanups.push(scratch.drop);
  } else {
    const dir = await migratedEmbeddedDataDir();
    env.DATA_DIR = dir.dataDir;
    cleanups.push(dir.cleanup);
  }
  const config = loadConfig(env);
  const server = await startServer(config, { log: opts.log ?? createLogger('silent'), clock: opts.clock });
  const url = server.url;

  const { call, stream } = httpClient(url);

  return {
    url,
    server,
    sim,
    call,
    stream,
    async close() {
      await server.close();
      if (ownSim) await sim.close();
      for (const c of cleanups) await c();
    },
  };
}

/** `call` and `stream` against a service at `url` (in this process or another). */
/** A suite's skip option when it needs real Postgres (a lock held from a second connection, a cluster). */
export const NEEDS_POSTGRES = process.env.TEST_DATABASE_URL ? false : 'needs Postgres (TEST_DATABASE_URL is not set)';

/**
 * Before the calling suite, a server on a scratch Postgres database of its own (which a test may lock
 * from a second connection without touching other suites); both are gone after it.
 */
export function serverOnScratchPostgres(env: Record<string, string> = {}): { server(): TestServer; url(): string } {
  let t: TestServer;
  let scratch: Awaited<ReturnType<typeof createScratchPostgres>>;
  before(async () => {
    scratch = await createScratchPostgres();
    t = await startTestServer({ databaseUrl: scratch.url, env });
  });
  after(async () => {
    await t?.close();
    await scratch?.drop();
  });
  return { server: () => t, url: () => scratch.url };
}

export function httpClient(url: string): Pick<TestServer, 'call' | 'stream'> {
  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + path, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  async function stream(path: string, body?: unknown, o: StreamOptions = {}): Promise<StreamResult> {
    const controller = new AbortController();
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...o.headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
    });
    if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
      const text = await res.text();
      return { status: res.status, headers: res.headers, events: [], body: text ? JSON.parse(text) : null };
    }
    const events = await readSse(res, controller, o.stopAfter);
    return { status: res.status, headers: res.headers, events };
  }

  return { call, stream };
}

/**
 * Reads an SSE response. `stopAfter` may disconnect after any event; `onEvent` is awaited for each
 * event in order, before later events are looked at (to observe state at the moment of an event).
 */
export async function readSse(
  res: Response,
  controller: AbortController,
  stopAfter?: (ev: SseEvent, all: SseEvent[]) => boolean,
  onEvent?: (ev: SseEvent) => Promise<void> | void,
): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const fresh: SseEvent[] = [];
  let stop = false;
  const parser = createParser({
    onEvent(e) {
      if (stop) return;
      const ev = { event: e.event ?? 'message', data: JSON.parse(e.data) };
      events.push(ev);
      fresh.push(ev);
      if (stopAfter?.(ev, events)) stop = true;
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (onEvent) for (const ev of fresh.splice(0)) await onEvent(ev);
      if (stop) {
        controller.abort();
        break;
      }
    }
  } catch (err) {
    if (!stop) throw err;
  }
  return events;
}

/** `SIM {...}` directive line for the simulator. */
export const sim = (directive: Record<string, unknown>, text = 'hello') => `${text}\nSIM ${JSON.stringify(directive)}`;

export { waitFor } from './wait.ts';

/**
 * Sends `n` identical stream starts at once (`urlOf(i)` picks each one's server). `won`: the 200s,
 * unread; `refused`: the parsed bodies of the 409s. Callers give the run a life far longer than the
 * storm and stop it afterwards: a request the machine delays past a short run's end would rightly
 * start a second run.
 */
export async function startStorm(n: number, urlOf: (i: number) => string, body: unknown) {
  const json = JSON.stringify(body);
  const responses = await Promise.all(
    Array.from({ length: n }, (_, i) => fetch(`${urlOf(i)}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: json })),
  );
  const refused = await Promise.all(responses.filter((r) => r.status === 409).map((r) => r.json()));
  return { won: responses.filter((r) => r.status === 200), refused, statuses: responses.map((r) => r.status).join(',') };
}

/**
 * Reads a run's stream to its end and asks `stop` to stop it once its first delta has arrived. Stopping
 * any earlier would race the provider: a run stopped before its first delta has no text, and by the
 * contract stores no assistant message.
 */
export async function stopAfterFirstDelta(res: Response, stop: () => Promise<HttpResult>) {
  let stopped: HttpResult | undefined;
  const events = await readSse(res, new AbortController(), undefined, async (ev) => {
    if (ev.event === 'delta' && !stopped) stopped = await stop();
  });
  return { events, stopStatus: stopped?.status };
}
