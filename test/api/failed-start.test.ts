// A start that fails half-way (the database answers, then a later step throws: a broken schema, or
// a Redis that answered the start's instance-id check and cannot be reached once the actor threads are up; or one
// never reached, which fails the start before it touches anything of its instance id) closes what it had opened, last
// opened first, and leaves nothing behind: in a process of its own that never calls process.exit,
// the process ends by itself with the start's error, and the port it was given is free.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/pool.ts';
import { migratedEmbeddedDataDir } from '../helpers/db.ts';
import { freePort } from '../helpers/ports.ts';
import { entryArgs } from '../helpers/entry.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;


/** Runs test/helpers/start-once.ts with `env` until it exits; a process still alive at the deadline is killed and fails. */
function startOnce(env: Record<string, string>, deadlineMs: number): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, entryArgs('test/helpers/start-once.ts'), {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SIM_DEFAULT_REPLY: 'echo', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the process did not end by itself within ${deadlineMs} ms: something was left open\n${out}`));
    }, deadlineMs);
    child.on('exit', (code) => {
      clearTimeout(deadline);
      resolve({ code, out });
    });
  });
}

/** The resources the start closed, in the order it closed them (its debug log lines). */
function closedOrder(out: string): string[] {
  const names: string[] = [];
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; resource?: string };
    if (entry.msg === 'closed' && entry.resource) names.push(entry.resource);
  }
  return names;
}

let dataDir: string;

describe('a start that fails half-way', () => {
  let cleanup: () => Promise<void>;
  before(async () => {
    // A copy of the migrated template: PGlite's initdb is test/api/main.test.ts's to cover.
    ({ dataDir, cleanup } = await migratedEmbeddedDataDir());
  });
  after(() => cleanup?.());

  it('on the embedded database whose schema is broken: closes the heartbeat and the database, and the process ends', { timeout: 300_000 }, async () => {
    // A real database that answers and is migrated, but lost a column the start's recovery step reads.
    const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
    try {
      await db.pool.query('ALTER TABLE llm_calls RENAME COLUMN instance_id TO instance_id_lost');
    } finally {
      await db.close();
    }
    const port = await freePort();
    const { code, out } = await startOnce({ DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), ACTOR_THREADS: '1', LOG_LEVEL: 'debug' }, 200_000);
    assert.equal(code, 1, out);
    assert.match(out, /failed to start: column (c\.)?"?instance_id"? does not exist/);
    assert.match(out, new RegExp(`port ${port} is free`));
    assert.deepEqual(closedOrder(out), ['heartbeat', 'control database', 'database', 'cpu pool', 'upstreams']);
    assert.doesNotMatch(out, /closing failed/);
  });

  it('in cluster mode on Postgres whose Redis cannot be reached once the actor threads are up: closes them too, and the process ends', { skip: pgUrl && redisUrl ? false : 'TEST_DATABASE_URL and TEST_REDIS_URL are needed', timeout: 200_000 }, async () => {
    // Reached once: the start's instance-id check goes through to the real Redis, the cluster's join
    // (once the actor threads are up) finds its connections closed.
    const target = new URL(redisUrl!);
    const redis = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) }, { connections: 1 });
    try {
      const port = await freePort();
      const env = { DATABASE_URL: pgUrl!, HOST: '127.0.0.1', PORT: String(port), ACTOR_THREADS: '1', REDIS_URL: `redis://127.0.0.1:${redis.port}`, REDIS_KEY_PREFIX: `failed-start-${port}:`, LOG_LEVEL: 'debug' };
      const { code, out } = await startOnce(env, 150_000);
      assert.equal(code, 1, out);
      assert.match(out, new RegExp(`failed to start: Redis is unavailable .*redis://127\\.0\\.0\\.1:${redis.port}`));
      assert.match(out, new RegExp(`port ${port} is free`));
      assert.deepEqual(closedOrder(out), ['callers', 'supervisor', 'sse streams', 'provider resilience', 'cluster', 'write retries', 'heartbeat', 'control database', 'database', 'cpu pool', 'upstreams']);
      assert.doesNotMatch(out, /closing failed/);
    } finally {
      await redis.close();
    }
  });

  it('in cluster mode on Postgres whose Redis is never reached: fails before its heartbeat and recovery, and the process ends', { skip: pgUrl ? false : 'TEST_DATABASE_URL is not set', timeout: 200_000 }, async () => {
    const [port, redisPort] = [await freePort(), await freePort()];
    const env = { DATABASE_URL: pgUrl!, HOST: '127.0.0.1', PORT: String(port), ACTOR_THREADS: '1', REDIS_URL: `redis://127.0.0.1:${redisPort}`, LOG_LEVEL: 'debug' };
    const { code, out } = await startOnce(env, 150_000);
    assert.equal(code, 1, out);
    assert.match(out, new RegExp(`failed to start: Redis is unavailable .*cannot reach redis://127\\.0\\.0\\.1:${redisPort}`));
    assert.match(out, new RegExp(`port ${port} is free`));
    assert.deepEqual(closedOrder(out), ['control database', 'database', 'cpu pool', 'upstreams']);
    assert.doesNotMatch(out, /closing failed/);
  });
});
