// A real PgBouncer in transaction mode in front of the test Postgres: the pooler README.md's
// DATABASE_PREPARED_STATEMENTS names. Each transaction may run on another server connection, so a
// session's state (SET, session advisory locks) does not follow the client.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.ts';
import { waitFor } from './wait.ts';
import net from 'node:net';

export const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));

export interface PgBouncer {
  /** `url` with its host and port swapped for the pooler's. */
  through(url: string): string;
  close(): Promise<void>;
}

/** `ignore`: the startup parameters it lets through unheeded (PgBouncer refuses any other it does not know). */
export async function startPgBouncer(target: string, ignore: readonly string[] = ['extra_float_digits', 'statement_timeout']): Promise<PgBouncer> {
  if (!PGBOUNCER) throw new Error('pgbouncer is not installed');
  const t = new URL(target);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pgbouncer-'));
  const port = await freePort();
  await writeFile(path.join(dir, 'users.txt'), `"${decodeURIComponent(t.username || 'postgres')}" ""\n`);
  await writeFile(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${t.hostname} port=${t.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 8',
      `ignore_startup_parameters = ${ignore.join(',')}`,
    ].join('\n'),
  );
  // PgBouncer refuses to run as root; -u drops to an unprivileged user, who must read its files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) for (const f of ['', 'users.txt', 'pgbouncer.ini']) await chmod(path.join(dir, f), f ? 0o644 : 0o755);
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
  const reachable = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
  await waitFor(reachable, 10_000, 'pgbouncer listening');
  return {
    through(url) {
      const u = new URL(url);
      u.host = `127.0.0.1:${port}`;
      return u.toString();
    },
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
