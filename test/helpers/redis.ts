// Redis for cluster tests: TEST_REDIS_URL when set (each test uses its own key prefix and deletes
// its keys), else a throwaway `redis-server` on a free port when one is installed, else a reason to
// skip that the test prints plainly.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { freePort } from './ports.ts';

export { freePort };

export interface TestRedis {
  url: string;
  /** A fresh key prefix for one test. */
  prefix(): string;
  /** Deletes every key under `prefix`. */
  clean(prefix: string): Promise<void>;
  close(): Promise<void>;
}

/** The shared test Redis, or a string saying why cluster tests are skipped. */
export async function testRedis(): Promise<TestRedis | string> {
  let url = process.env.TEST_REDIS_URL;
  let server: RedisServer | undefined;
  if (!url) {
    if (!redisServerInstalled()) return 'cluster tests skipped: TEST_REDIS_URL is not set and no redis-server is installed';
    server = await startRedisServer();
    url = server.url;
  }
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await admin.connect();
  } catch (err) {
    admin.disconnect();
    await server?.stop();
    return `cluster tests skipped: cannot reach Redis at ${url}: ${(err as Error).message}`;
  }
  return {
    url,
    prefix: () => `t${randomBytes(6).toString('hex')}:`,
    clean: (prefix) => deleteKeys(admin, prefix),
    async close() {
      admin.disconnect();
      await server?.stop();
    },
  };
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

export function redisServerInstalled(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing is persisted). */
  start(): Promise<void>;
}

/** `redis-server --port <free> --save '' --appendonly no`, stopped by its own pid. */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let proc: ChildProcess | null = null;
  const start = async () => {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = child;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10_000);
      child.stdout!.on('data', (d) => {
        out += d;
        if (/Ready to accept connections/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}:\n${out}`));
      });
    });
    child.stdout!.resume();
  };
  const stop = async () => {
    const p = proc;
    proc = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, start, stop };
}
