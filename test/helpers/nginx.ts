// nginx in front of a test server, configured by deploy/nginx.conf itself (the file the README
// points to): only the upstream address and the listen address are swapped. Null when nginx is not
// installed and cannot be (ensureNginx tries Debian's nginx-light, as `make bench` does).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { freePort } from './ports.ts';
import { start, type Child } from './procs.ts';
import { waitFor } from './wait.ts';

export { freePort };

export const NGINX_CONF = path.resolve(import.meta.dirname, '../../deploy/nginx.conf');

export interface Proxy {
  port: number;
  stop(): Promise<void>;
}

function swapped(servicePort: number, listenPort: number): string {
  const conf = readFileSync(NGINX_CONF, 'utf8');
  const out = conf
    .replace(/server 127\.0\.0\.1:8080( [^;]*)?;/, `server 127.0.0.1:${servicePort}$1;`)
    .replace(/listen 8081;/, `listen 127.0.0.1:${listenPort};`);
  if (!out.includes(`server 127.0.0.1:${servicePort}`) || !out.includes(`:${listenPort};`)) {
    throw new Error(`${NGINX_CONF} no longer has the two addresses this test swaps (server 127.0.0.1:8080 …; listen 8081;)`);
  }
  return out;
}

/** deploy/nginx.conf balancing over several instances (one `server` line each), as a rolling restart needs. */
export async function startNginxBalancer(servicePorts: number[]): Promise<Proxy | null> {
  const port = await freePort();
  const nginx = await startNginx(port, (dir) => {
    const conf = swapped(servicePorts[0]!, port).replace(/server 127\.0\.0\.1:(\d+)( [^;]*)?;/, (_line, _port, params = '') =>
      servicePorts.map((p) => `server 127.0.0.1:${p}${params};`).join('\n    '),
    );
    writeFileSync(path.join(dir, 'site.conf'), conf);
    return `access_log off;\n  include ${dir}/site.conf;`;
  });
  return nginx && { port, stop: nginx.stop };
}

export async function startNginxProxy(servicePort: number): Promise<Proxy | null> {
  const port = await freePort();
  const nginx = await startNginx(port, (dir) => {
    writeFileSync(path.join(dir, 'site.conf'), swapped(servicePort, port));
    return `access_log off;\n  include ${dir}/site.conf;`;
  }, '/health');
  return nginx && { port, stop: nginx.stop };
}

export interface Nginx {
  /** Its own directory: configuration, temp paths, logs, and whatever `http` put there. */
  dir: string;
  child: Child;
  stop(): Promise<void>;
}

/**
 * A throwaway nginx (one process, not a daemon) whose http block is `http(dir)`, the rest of its
 * configuration being the temp paths and logs in `dir`. Ready once `port` answers anything (a plain
 * request to a TLS port gets a 400). Null when nginx is not installed and cannot be.
 */
export async function startNginx(port: number, http: (dir: string) => string, readyPath = '/'): Promise<Nginx | null> {
  const bin = ensureNginx();
  if (!bin) return null;
  const dir = mkdtempSync(path.join(tmpdir(), 'nginx-test-'));
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`).join('\n');
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `daemon off;\nmaster_process off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\n` +
      `events { worker_connections 1024; }\nhttp {\n${temp}\n  ${http(dir)}\n}\n`,
  );
  const { child } = await start('nginx', bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')]);
  const stop = async () => {
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  let last: Error | undefined;
  const answers = async () => {
    if (child.proc.exitCode !== null) return true; // exited: no point waiting for it
    try {
      await (await fetch(`http://127.0.0.1:${port}${readyPath}`)).arrayBuffer();
      return true;
    } catch (err) {
      last = err as Error;
      return false;
    }
  };
  const waited = await waitFor(answers, 10_000, 'nginx to answer').then(() => null, (err: Error) => err);
  if (waited || child.proc.exitCode !== null) {
    await stop();
    const why = child.proc.exitCode !== null ? `it exited with ${child.proc.exitCode}` : (last ?? waited)!.message;
    throw new Error(`nginx did not start: ${why}\n${child.lines.join('\n')}`);
  }
  return { dir, child, stop };
}

/** Debian's nginx; installed here when missing (the bench runs as root on these machines). */
export function ensureNginx(): string | null {
  const find = (): string | null => {
    for (const p of ['/usr/sbin/nginx', '/usr/bin/nginx']) {
      try {
        execFileSync(p, ['-v'], { stdio: 'ignore' });
        return p;
      } catch {
        // not there
      }
    }
    return null;
  };
  const found = find();
  if (found) return found;
  console.error('[nginx] nginx is not installed: installing Debian\'s nginx-light (apt-get install -y nginx-light) for the relay baseline');
  try {
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { stdio: ['ignore', 'ignore', 'inherit'] });
  } catch {
    try {
      execFileSync('apt-get', ['update'], { stdio: 'ignore' });
      execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { stdio: ['ignore', 'ignore', 'inherit'] });
    } catch (err) {
      console.error(`[nginx] could not install nginx-light (${(err as Error).message}); the nginx rows will be null`);
    }
  }
  return find();
}
