// A cluster for tests: N instances of the real entry point (src/app/main.ts, child processes on
// loopback random ports) sharing one scratch Postgres database, one Redis (own key prefix) and
// one simulator. Each child is stopped by its own pid; kill() sends any signal (SIGKILL too).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, it } from 'node:test';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { createScratchPostgres } from './db.ts';
import { startService } from './process.ts';
import { testRedis, type TestRedis } from './redis.ts';
import { httpClient, readSse, sim, simEnv, type SseEvent, type TestServer } from './server.ts';
import { waitFor } from './wait.ts';

export interface Instance extends Pick<TestServer, 'call' | 'stream'> {
  id: string;
  url: string;
  child: ChildProcess;
  output(): string;
  /** Sends `signal` and resolves once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

export interface TestCluster {
  instances: Instance[];
  databaseUrl: string;
  /** Starts one more instance on the same database, Redis and prefix (`env` overrides, e.g. its REDIS_URL). */
  add(id: string, env?: Record<string, string>): Promise<Instance>;
  close(): Promise<void>;
}

export interface ClusterOptions {
  n: number;
  redisUrl: string;
  prefix: string;
  sim: SimHandle;
  env?: Record<string, string>;
}

export async function startCluster(o: ClusterOptions): Promise<TestCluster> {
  const scratch = await createScratchPostgres();
  const instances: Instance[] = [];
  const env = (id: string): Record<string, string> => ({
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    // Mixed on purpose: a run on one instance is followed from another, so with i1's actors on a
    // worker thread the frames cross a thread and an instance (tests that start on i0 attach on i1).
    ACTOR_THREADS: id === 'i1' ? '1' : '0',
    PROVIDER_TIMEOUT_MS: '30000',
    DATABASE_URL: scratch.url,
    REDIS_URL: o.redisUrl,
    REDIS_KEY_PREFIX: o.prefix,
    INSTANCE_ID: id,
    // As startTestServer: quick retries, no breakers unless a test sets them.
    PROVIDER_RETRY_BASE_MS: '1',
    PROVIDER_BREAKER_FAILURES: '0',
    ...simEnv(o.sim),
    ...o.env,
  });
  const add = async (id: string, extra: Record<string, string> = {}) => {
    const inst = await startInstance(id, { ...env(id), ...extra });
    instances.push(inst);
    return inst;
  };
  try {
    // The first one migrates the schema; the others then start together.
    await add('i0');
    await Promise.all(Array.from({ length: o.n - 1 }, (_, i) => add(`i${i + 1}`)));
  } catch (err) {
    for (const i of instances) await i.kill('SIGKILL');
    await scratch.drop();
    throw err;
  }
  return {
    instances,
    databaseUrl: scratch.url,
    add,
    async close() {
      for (const i of instances) await i.kill('SIGTERM');
      await scratch.drop();
    },
  };
}

/** One `node --import tsx src/app/main.ts` (test/helpers/process.ts); resolves once it logs its address. */
export async function startInstance(id: string, env: Record<string, string>): Promise<Instance> {
  const p = await startService(env);
  const kill = async (signal: NodeJS.Signals) => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill(signal);
    await p.exited;
  };
  return { id, url: p.url, child: p.child, output: p.output, kill, ...httpClient(p.url) };
}

// ---- clients' view of a run ----------------------------------------------------------------------

/** The text a subscriber can rebuild: the replayed delta carries all earlier text, live ones follow. */
export const rebuilt = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');
/**
 * A chat stream request of `deltas` deltas at `rate` per second (0: as fast as possible); `hold`: a
 * simulator gate it waits at (after `gateAfter` deltas) until the test opens it.
 */
export const slow = (deltas: number, rate: number, extra: Record<string, unknown> = {}, hold: { gate?: string; gateAfter?: number } = {}) => ({
  provider: 'provider_c',
  model: 'm',
  enabledTools: [],
  messages: [{ role: 'user', content: sim({ deltas, rate, ...hold }) }],
  ...extra,
});

/**
 * Opens a stream and resolves with its meta event once it arrived; `firstDelta` settles at the first
 * delta (or the end, if none comes), `events` at the end. `timeline` has each event's arrival in this
 * process (performance.now()), one clock for every stream a test opens.
 */
export async function openStream(inst: Instance, path: string, body: unknown, opts: { whileBusy?: boolean; headers?: Record<string, string> } = {}) {
  let controller = new AbortController();
  const send = () => fetch(inst.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...opts.headers }, body: JSON.stringify(body), signal: controller.signal });
  let res = await send();
  // whileBusy: the key is held elsewhere (409) until that run ends or its lease expires; ask again,
  // for as long as a lease can live (the suites' TTLs are seconds), then let the 409 fail below.
  if (opts.whileBusy && res.status === 409) {
    await waitFor(async () => {
      await res.body?.cancel();
      controller = new AbortController();
      res = await send();
      return res.status !== 409;
    }, 60_000, `${path} on ${inst.id} to stop answering 409`).catch(() => {});
  }
  assert.equal(res.status, 200, `${path} on ${inst.id}: ${res.status}`);
  let first!: (e: SseEvent) => void;
  let delta!: (e?: SseEvent) => void;
  const meta = new Promise<SseEvent>((r) => (first = r));
  const firstDelta = new Promise<SseEvent | undefined>((r) => (delta = r));
  const timeline: Array<{ at: number; event: string }> = [];
  const events = readSse(res, controller, undefined, (ev) => {
    timeline.push({ at: performance.now(), event: ev.event });
    if (ev.event === 'meta') first(ev);
    if (ev.event === 'delta') delta(ev);
  }).catch(() => [] as SseEvent[]);
  void events.then(() => delta());
  return { meta: await meta, firstDelta, events, timeline, abort: () => controller.abort() };
}

export async function storedAnswer(inst: Instance, chatId: string): Promise<string | undefined> {
  const chat = (await inst.call('GET', `/v1/chats/${chatId}`)).body.chat;
  return chat.messages.find((m: { role: string }) => m.role === 'assistant')?.content;
}

/** Redis for a file of cluster tests, or why the file is skipped: every instance shares one Postgres too. */
export async function clusterRedis(): Promise<TestRedis | string> {
  if (!process.env.TEST_DATABASE_URL) return 'cluster tests skipped: they need TEST_DATABASE_URL (a Postgres every instance shares)';
  return testRedis();
}

export interface ClusterSuite {
  redis: TestRedis;
  prefix: string;
  sim: SimHandle;
  cluster: TestCluster;
}

/**
 * A describe body's cluster. Without Postgres and Redis it registers one skipped test saying why and
 * returns null (the body should return). Otherwise it registers hooks that start a simulator and an
 * `n`-instance cluster (`env` for every instance) on a fresh Redis prefix, and after the suite run
 * `beforeClose` (the file's own clients of the cluster's database: the drop would cut them), stop the
 * cluster and the simulator, and clean the prefix. `sim` and `cluster` are filled in by `before`.
 */
export async function clusterSuite(o: { n: number; env?: Record<string, string>; beforeClose?: () => Promise<void> }): Promise<ClusterSuite | null> {
  const redis = await clusterRedis();
  if (typeof redis === 'string') {
    console.log(`# ${redis}`);
    it('needs Postgres and Redis', { skip: redis }, () => {});
    return null;
  }
  const suite = { redis, prefix: redis.prefix() } as ClusterSuite;
  before(async () => {
    suite.sim = await startSimulator();
    suite.cluster = await startCluster({ n: o.n, redisUrl: redis.url, prefix: suite.prefix, sim: suite.sim, env: o.env });
  });
  after(async () => {
    await o.beforeClose?.();
    await suite.cluster?.close();
    await suite.sim?.close();
    await redis.clean(suite.prefix);
    await redis.close();
  });
  return suite;
}

export const clusterRuns = async (inst: Instance) => (await inst.call('GET', '/v1/active-runs?scope=cluster')).body;
