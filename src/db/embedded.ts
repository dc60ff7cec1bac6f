// The embedded default database: PGlite (Postgres compiled to WASM, running in this thread) persisted
// under DATA_DIR, served over the Postgres wire protocol by @electric-sql/pglite-socket so the same
// `pg` code and the same sql/ files serve both modes.
//
// Connection limit, found by reading pglite-socket 0.2.17: PGLiteSocketServer takes `maxConnections`
// (default 1) and multiplexes all connections onto the single PGlite session through one queue of
// protocol *messages*. Only an open transaction block keeps other connections out; an extended-protocol
// query (Parse/Bind/Execute/Sync, which `pg` uses for every parameterised query) is not atomic. When a
// large Bind arrives in several TCP chunks another connection's Parse runs in between and replaces the
// unnamed statement: with maxConnections 4 and a 4 MB parameter we saw "bind message supplies 2
// parameters, but prepared statement "" requires 1"; with equal parameter counts it would silently run
// the wrong SQL. So the only safe client count is ONE: the pg Pool gets max 1 (EMBEDDED_POOL_MAX).
// The server allows 2 so that a replacement connection opened while the server is still tearing down
// the previous one (it frees the slot a tick after the socket closes) is not refused with
// "Too many connections"; the pool itself never holds two at once.
// Consequences: every query of the process is serialised (PGlite is single-threaded anyway), and no
// other process or worker thread may connect with its own pool (workers go through remote-pool.ts).
// All connections also share ONE Postgres session: SET, named prepared statements, temp tables and
// session advisory locks outlive the `pg` connection that made them, so store code uses none of them
// (the migration lock is transaction-level, and within one process nothing else contends for it).
// A fresh DATA_DIR costs one initdb in WASM (~6 s here); later starts take well under a second.
//
// Memory (idle RSS of `make run`, fresh DATA_DIR: 1,028 MB before, see docs/performance.md): initdb
// runs in a short-lived child process (embedded-initdb.mjs) so its WASM heaps are freed when it exits,
// and shared_buffers is 16 MB instead of PGlite's 128 MB (one session, small tables; the files
// stay in the OS page cache, which PGlite's node filesystem reads through).
import { existsSync } from 'node:fs';
import { open, readFile, rm, unlink, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { execFile } from 'node:child_process';
import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export const EMBEDDED_POOL_MAX = 1;
const SERVER_MAX_CONNECTIONS = 2;
/** initdb takes ~6 s on an idle 2-core machine; a busy one may take several times that. */
const INITDB_TIMEOUT_MS = 180_000;
/** Appended to PGlite's own start parameters (later `-c` settings win). */
const START_SETTINGS = ['shared_buffers=16MB'];
/** In DATA_DIR while initdb runs: the cluster under it is unfinished (embedded-initdb.mjs). */
const INITDB_MARKER = 'pg.initdb';
/** The port part of the unix socket name `.s.PGSQL.<port>`, which is how libpq and `pg` find it. */
const SOCKET_PORT = 5432;
/** sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS. */
const MAX_SOCKET_PATH = 100;

export interface EmbeddedServer {
  /** A `pg` connection string for the private endpoint. */
  connectionString: string;
  dataDir: string;
  close(): Promise<void>;
}

// Two PGlite instances on one directory corrupt it silently (PGlite ignores postmaster.pid), within
// this process and across processes alike; the set catches the first case, the lock file the second.
const openDirs = new Set<string>();

/** Starts PGlite under `${dataDir}/pg` and a socket server for it. */
export async function startEmbedded(dataDirOption: string): Promise<EmbeddedServer> {
  const dataDir = path.resolve(dataDirOption);
  const pgDir = path.join(dataDir, 'pg');
  const lockPath = path.join(dataDir, 'pg.lock');
  if (openDirs.has(dataDir)) {
    throw new Error(`the embedded database in DATA_DIR=${dataDir} is already open in this process`);
  }
  openDirs.add(dataDir); // before any await: a concurrent second open must see it
  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  let socketPath: string | undefined;
  let locked = false;
  try {
    // Loaded here, not at the top: a service on Postgres (and each actor thread) never pays PGlite's
    // module load (~0.3–0.45 s of CPU under tsx).
    const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-socket')]);
    await mkdir(pgDir, { recursive: true, mode: 0o700 });
    await acquireLock(lockPath, dataDir);
    locked = true;
    try {
      const marker = path.join(dataDir, INITDB_MARKER);
      if (existsSync(marker)) await discardUnfinishedInitdb(pgDir, marker, dataDir);
      if (!existsSync(path.join(pgDir, 'PG_VERSION'))) await initdbInChild(pgDir, marker);
      db = await PGlite.create({ dataDir: pgDir, startParams: [...PGlite.defaultStartParams, ...START_SETTINGS.flatMap((setting) => ['-c', setting])] });
    } catch (err) {
      throw new Error(`cannot open the embedded database in ${pgDir}: ${(err as Error).message}`, { cause: err });
    }
    // A unix socket inside DATA_DIR is reachable only by this user (no password on this server);
    // a long DATA_DIR path does not fit in a socket address, so fall back to loopback TCP.
    const candidate = path.join(dataDir, `.s.PGSQL.${SOCKET_PORT}`);
    if (Buffer.byteLength(candidate) <= MAX_SOCKET_PATH) {
      await unlink(candidate).catch(() => undefined); // left over by a crash; we hold the lock
      socketPath = candidate;
      server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: SERVER_MAX_CONNECTIONS });
    } else {
      server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: SERVER_MAX_CONNECTIONS });
    }
    await server.start();
    const connectionString = socketPath
      ? `postgres://postgres@${encodeURIComponent(dataDir)}:${SOCKET_PORT}/postgres`
      : `postgres://postgres@${server.getServerConn()}/postgres`;
    let closing: Promise<void> | undefined;
    return {
      connectionString,
      dataDir,
      close: () => (closing ??= shutdown(server!, db!, socketPath, lockPath, dataDir)),
    };
  } catch (err) {
    await server?.stop().catch(() => undefined);
    await db?.close().catch(() => undefined);
    if (locked) await rm(lockPath, { force: true });
    openDirs.delete(dataDir);
    throw err;
  }
}

/**
 * A cluster whose initdb never finished (its process was killed, or timed out) holds no data and does
 * not open: removed, to be initialised again. An initdb still going (its parent was killed alone) is
 * left to finish, and this start refused like a second process on the directory.
 */
async function discardUnfinishedInitdb(pgDir: string, marker: string, dataDir: string): Promise<void> {
  const pid = Number.parseInt(await readFile(marker, 'utf8').catch(() => ''), 10);
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && (await isAlive(pid))) {
    throw new Error(`the embedded database in DATA_DIR=${dataDir} is being initialised by process ${pid}; start again when it has ended`);
  }
  await rm(pgDir, { recursive: true, force: true });
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  await rm(marker, { force: true });
}

function initdbInChild(pgDir: string, marker: string): Promise<void> {
  const script = new URL('./embedded-initdb.mjs', import.meta.url).pathname;
  return new Promise((resolve, reject) => {
    // No --import tsx (process.execArgv): the script is plain JS, and a child without loaders starts faster.
    // --liftoff-only: initdb runs once, so V8's optimising WASM tier would compile for nothing (it costs
    // more CPU than it saves here: 2.6 s of CPU instead of 4.4 s per initdb, measured with /usr/bin/time).
    execFile(process.execPath, ['--liftoff-only', script, pgDir, marker], { timeout: INITDB_TIMEOUT_MS }, (err, _stdout, stderr) => {
      // The last lines of its stderr carry the error (the rest is a stack trace into the WASM module).
      const said = stderr.trim().split('\n').slice(-4).join(' ').trim();
      if (err) reject(new Error(`initdb failed: ${said || err.message}`, { cause: err }));
      else resolve();
    });
  });
}

async function shutdown(
  server: PGLiteSocketServer,
  db: PGlite,
  socketPath: string | undefined,
  lockPath: string,
  dataDir: string,
): Promise<void> {
  try {
    await server.stop();
    // stop() detaches connection handlers without awaiting them, and a detach may still roll back an
    // open transaction on the database: wait for them before closing it under their feet.
    for (let i = 0; i < 200 && server.getStats().activeConnections > 0; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setImmediate(r));
    await db.close();
  } finally {
    if (socketPath) await unlink(socketPath).catch(() => undefined);
    await rm(lockPath, { force: true });
    openDirs.delete(dataDir);
  }
}

/** Creates `pg.lock` holding our pid; a lock whose process is gone is taken over. */
async function acquireLock(lockPath: string, dataDir: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    // Our own pid in a lock file not in openDirs is a previous life of this pid (e.g. pid 1 in a
    // restarted container), so it is stale like any lock whose process is gone.
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && (await isAlive(pid))) {
      throw new Error(
        `the embedded database in DATA_DIR=${dataDir} is in use by process ${pid}; ` +
          'stop it, use another DATA_DIR, or set DATABASE_URL to a shared Postgres',
      );
    }
    await rm(lockPath, { force: true });
  }
  throw new Error(`cannot lock the embedded database in DATA_DIR=${dataDir}: ${lockPath} keeps reappearing`);
}

async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A killed process stays signalable as a zombie until reaped (a container's PID 1 may never reap
  // it); on Linux its state letter after the command name tells.
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat === null || !/^\d+ \(.*\) Z/s.test(stat);
}
