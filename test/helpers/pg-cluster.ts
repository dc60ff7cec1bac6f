// A throwaway PostgreSQL cluster that a test owns, so it can stop and start the database under a
// running service: initdb into a temp directory, pg_ctl on a free loopback port. initdb refuses to
// run as root, so as root the binaries run as the `postgres` OS user (runuser), in a directory that
// user owns. When the binaries are missing, `skipReason` says so and the test skips plainly.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { createScratchPostgres } from './db.ts';

const run = promisify(execFile);

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PgCluster {
  port: number;
  /** A connection string for `database` (created with createDatabase). */
  url(database?: string): string;
  createDatabase(name: string): Promise<string>;
  /** `fast` ends sessions and shuts down cleanly; `immediate` is a crash (recovery at the next start). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its files. */
  destroy(): Promise<void>;
}

/** Why a throwaway cluster cannot be made here, or null when it can. */
export function pgClusterSkipReason(): string | null {
  for (const tool of ['initdb', 'pg_ctl']) {
    if (!existsSync(path.join(BIN, tool))) return `PostgreSQL binaries not found (${path.join(BIN, tool)}; set PG_BIN)`;
  }
  if (process.getuid?.() === 0) {
    if (!existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser')) return 'running as root without runuser: initdb refuses root';
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'pipe' });
    } catch {
      return 'running as root with no `postgres` OS user to run initdb as';
    }
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startPgCluster(): Promise<PgCluster> {
  const reason = pgClusterSkipReason();
  if (reason) throw new Error(reason);
  const asRoot = process.getuid?.() === 0;
  const pgUser = asRoot ? Number(execFileSync('id', ['-u', 'postgres']).toString().trim()) : null;
  const pgGroup = asRoot ? Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) : null;
  // As the postgres user: runuser keeps our environment, and the cluster files belong to that user.
  const tool = (name: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(BIN, name), ...args]) : run(path.join(BIN, name), args);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'pg-cluster-'));
  if (pgUser !== null) await chown(dir, pgUser, pgGroup!);
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'server.log');
  const port = await freePort();
  let running = false;

  const start = async () => {
    await tool('pg_ctl', [
      '-D', data, '-l', log, '-w', '-t', '60',
      '-o', `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c max_connections=60`,
      'start',
    ]);
    running = true;
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    await tool('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    running = false;
  };
  // A test process that dies must not leave a server behind.
  const onExit = () => {
    if (!running) return;
    const args = [path.join(BIN, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop'];
    try {
      if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', ...args], { stdio: 'ignore' });
      else execFileSync(args[0]!, args.slice(1), { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
  };
  process.on('exit', onExit);

  try {
    await tool('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    await start();
  } catch (err) {
    onExit();
    process.off('exit', onExit);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }

  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop,
    start,
    async destroy() {
      if (running) await stop('immediate').catch(() => undefined);
      process.off('exit', onExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh Postgres database for a test that needs a real server but not control over it: a scratch
 * database on TEST_DATABASE_URL when set, else one on a throwaway cluster. Check
 * `realPostgresSkipReason()` first.
 */
export async function freshPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  if (process.env.TEST_DATABASE_URL) return createScratchPostgres();
  const cluster = await startPgCluster();
  try {
    return { url: await cluster.createDatabase('test'), drop: () => cluster.destroy() };
  } catch (err) {
    await cluster.destroy();
    throw err;
  }
}

export function realPostgresSkipReason(): string | null {
  return process.env.TEST_DATABASE_URL ? null : pgClusterSkipReason();
}

/** One statement on a fresh connection: a test's own view of a database, whatever the service's pool is doing. */
export async function sqlRows<R extends pg.QueryResultRow = any>(url: string, text: string, values?: unknown[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}
