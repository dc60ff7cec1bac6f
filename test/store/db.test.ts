import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { migrate, readMigrations } from '../../src/db/migrate.ts';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';
import { createChat, getChatDetail } from '../../src/store/chats.ts';
import { createScratchPostgres, freshEmbeddedDataDir, testDatabases } from '../helpers/db.ts';
import { listMessages } from '../helpers/store.ts';
import pg from 'pg';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { PGBOUNCER, startPgBouncer } from '../helpers/pgbouncer.ts';
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { entryArgs } from '../helpers/entry.ts';
import { waitFor } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

async function tempDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'migrations-'));
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

describe('migration files', () => {
  it('are read in number order and must not share a number', async () => {
    const shipped = await readMigrations();
    assert.equal(shipped[0]?.name, '001_init.sql');
    const dir = await tempDir({ '010_b.sql': '', '002_a.sql': '', 'notes.txt': '', '002_c.sql': '' });
    await assert.rejects(readMigrations(dir), /share the number 002/);
    await rm(path.join(dir, '002_c.sql'));
    assert.deepEqual((await readMigrations(dir)).map((m) => m.name), ['002_a.sql', '010_b.sql']);
    await rm(dir, { recursive: true });
  });
});

for (const target of await testDatabases()) {
  describe(`database ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('is migrated once, with the reserved starred project', async () => {
      assert.equal(db.kind, target.name);
      const names = (await db.pool.query('SELECT name FROM schema_migrations ORDER BY name')).rows.map((r) => r.name);
      assert.deepEqual(names, (await readMigrations()).map((m) => m.name));
      assert.deepEqual(await migrate(db.pool), []);
      const { rows } = await db.pool.query("SELECT id FROM projects WHERE id = 'starred'");
      assert.equal(rows.length, 1);
    });

    it('applies each new file in its own transaction and stops at a failing one', async () => {
      const dir = await tempDir({
        '900_ok.sql': 'CREATE TABLE extra_ok (x int); INSERT INTO extra_ok VALUES (1);',
        '901_bad.sql': 'CREATE TABLE extra_bad (x int); SELECT 1/0;',
        '902_after.sql': 'CREATE TABLE extra_after (x int);',
      });
      await assert.rejects(migrate(db.pool, dir), /migration 901_bad\.sql failed: division by zero/);
      const tables = async () =>
        (await db.pool.query("SELECT tablename FROM pg_tables WHERE tablename LIKE 'extra_%' ORDER BY 1")).rows.map((r) => r.tablename);
      assert.deepEqual(await tables(), ['extra_ok']);
      const recorded = (await db.pool.query("SELECT name FROM schema_migrations WHERE name LIKE '9%'")).rows.map((r) => r.name);
      assert.deepEqual(recorded, ['900_ok.sql']);
      await writeFile(path.join(dir, '901_bad.sql'), 'CREATE TABLE extra_bad (x int);');
      assert.deepEqual(await migrate(db.pool, dir), ['901_bad.sql', '902_after.sql']);
      assert.deepEqual(await tables(), ['extra_after', 'extra_bad', 'extra_ok']);
      await rm(dir, { recursive: true });
    });

    it('keeps concurrent parameterised queries apart, large parameters included', async () => {
      // Regression guard for the embedded server's message multiplexing (see src/db/embedded.ts).
      const big = 'x'.repeat(2_000_000);
      const checks = await Promise.all([
        ...Array.from({ length: 4 }, async (_, i) => {
          const { rows } = await db.pool.query('SELECT length($1::text) AS n, $2::int AS i', [big, i]);
          return rows[0].n === big.length && rows[0].i === i;
        }),
        ...Array.from({ length: 200 }, async (_, i) => {
          const { rows } = await db.pool.query(`SELECT $1::int AS v${i % 3}`, [i]);
          return rows[0][`v${i % 3}`] === i;
        }),
      ]);
      assert.ok(checks.every(Boolean));
    });
  });
}

describe('embedded database', () => {
  it('keeps its data across close and reopen, and migrates only once', async () => {
    const { dataDir, cleanup } = await freshEmbeddedDataDir();
    try {
      const first = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
      assert.equal(first.kind, 'embedded');
      // The instance serving us runs with the small buffer cache (src/db/embedded.ts, START_SETTINGS).
      const { rows: settings } = await first.pool.query('SHOW shared_buffers');
      assert.equal(settings[0].shared_buffers, '16MB');
      const chat = await createChat(first.pool, { owner: ADMIN_USER_ID, title: 'kept', enabledTools: ['a'], messages: [{ role: 'user', content: 'hello' }] });
      const before = await getChatDetail(first.pool, chat.id, ADMIN_USER_ID);
      await first.close();
      await first.close(); // idempotent

      const second = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
      try {
        assert.deepEqual(await getChatDetail(second.pool, chat.id, ADMIN_USER_ID), before);
        const { rows } = await second.pool.query('SELECT count(*)::int AS n FROM schema_migrations');
        assert.equal(rows[0].n, (await readMigrations()).length);
      } finally {
        await second.close();
      }
      assert.ok(!(await readdir(dataDir)).includes('pg.lock'));
    } finally {
      await cleanup();
    }
  });

  it('refuses a DATA_DIR that is already open, here or in a live process, and takes over a stale lock', async () => {
    const { dataDir, cleanup } = await freshEmbeddedDataDir();
    try {
      const both = await Promise.allSettled([
        openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir }),
        openDatabase({ DATABASE_URL: undefined, DATA_DIR: path.join(dataDir, '.') }),
      ]);
      assert.deepEqual(both.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
      const loser = both.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      assert.match(loser.reason.message, /already open in this process/);
      await (both.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<Database>).value.close();

      await writeFile(path.join(dataDir, 'pg.lock'), `${process.ppid}\n`); // alive: our parent
      await assert.rejects(
        openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir }),
        new RegExp(`in use by process ${process.ppid}.*DATABASE_URL`),
      );
      await writeFile(path.join(dataDir, 'pg.lock'), '4194000\n'); // above pid_max on Linux: never alive
      const reopened = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
      await reopened.close();
    } finally {
      await cleanup();
    }
  });
});

describe('embedded database initdb', () => {
  it('names the data directory when initdb cannot create it', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'initdb-test-'));
    try {
      // No template cluster here: initdb runs (in its child process) and fails on a file where its
      // `global` directory should go; the error names the directory and carries initdb's own words.
      await mkdir(path.join(dataDir, 'pg'));
      await writeFile(path.join(dataDir, 'pg', 'global'), 'not a directory');
      await assert.rejects(openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir }), (err: Error) => {
        assert.match(err.message, /cannot open the embedded database in .*initdb failed: .*ErrnoError/s);
        assert.ok(err.message.includes(path.join(dataDir, 'pg')));
        return true;
      });
      assert.ok(!(await readdir(dataDir)).includes('pg.lock'));
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('embedded database after a crash during initdb', () => {
  it('initialises again at the next start instead of refusing to open a half-made cluster', { timeout: 300_000 }, async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'initdb-crash-'));
    try {
      // Its own process group, as a terminal's: Ctrl-C (or a kill of the group) ends initdb's child too.
      const child = spawn(process.execPath, [...entryArgs('test/store/embedded-writer.ts'), dataDir], { stdio: 'ignore', detached: true });
      const exited = once(child, 'exit');
      // initdb writes PG_VERSION first and the rest of its 39 MB after it: kill it in between.
      const pgVersion = path.join(dataDir, 'pg', 'PG_VERSION');
      const deadline = Date.now() + 240_000;
      while (!existsSync(pgVersion)) {
        assert.ok(Date.now() < deadline, 'initdb never wrote PG_VERSION');
        await new Promise((r) => setImmediate(r));
      }
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
      // initdb's own process, killed with it, may take a moment longer to be gone (or a zombie).
      const initdbPid = Number.parseInt(await readFile(path.join(dataDir, 'pg.initdb'), 'utf8').catch(() => ''), 10);
      const gone = async () => !/^\d+ \(.*\) [^Z]/s.test(await readFile(`/proc/${initdbPid}/stat`, 'utf8').catch(() => ''));
      if (initdbPid > 0) await waitFor(gone, 30_000, `initdb process ${initdbPid} to end`);

      const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
      try {
        const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'after the crash', enabledTools: [] });
        assert.equal((await getChatDetail(db.pool, chat.id, ADMIN_USER_ID))?.title, 'after the crash');
      } finally {
        await db.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('embedded database after a crash', () => {
  it('reopens with every committed write after the process was killed mid-write', async () => {
    const { dataDir, cleanup } = await freshEmbeddedDataDir();
    try {
      const child = spawn(process.execPath, [...entryArgs('test/store/embedded-writer.ts'), dataDir], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      // Its first line is the chat id, then one line per committed append: kill it mid-write once
      // a few have committed.
      const lines = createInterface({ input: child.stdout! });
      let chatId = '';
      for await (const line of lines) {
        if (!chatId) chatId = line.trim();
        else if (Number(line) >= 20) break;
      }
      child.kill('SIGKILL');
      await once(child, 'exit');

      const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir }); // takes over the stale lock
      try {
        const contents = (await listMessages(db.pool, chatId)).map((m) => m.content);
        assert.ok(contents.length > 0);
        assert.deepEqual(contents, contents.map((_, i) => `m${i}`)); // no gap, nothing half-written
      } finally {
        await db.close();
      }
    } finally {
      await cleanup();
    }
  });
});

describe('DATABASE_URL errors', () => {
  it('name DATABASE_URL and hide the password when the server cannot be reached', async () => {
    const err = await openDatabase(
      { DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/app', DATA_DIR: os.tmpdir() },
      { connectTimeoutMs: 2000 },
    ).then(
      () => assert.fail('opened'),
      (e: Error) => e,
    );
    assert.match(err.message, /DATABASE_URL/);
    assert.match(err.message, /127\.0\.0\.1:1/);
    assert.match(err.message, /ECONNREFUSED/);
    assert.doesNotMatch(err.message, /s3cret/);
  });
});

describe('concurrent start on one Postgres', { skip: !process.env.TEST_DATABASE_URL }, () => {
  it('lets several processes migrate the same fresh database at once', async () => {
    const scratch = await createScratchPostgres();
    try {
      const opened = await Promise.all(
        Array.from({ length: 4 }, () => openDatabase({ DATABASE_URL: scratch.url, DATA_DIR: os.tmpdir() }, { poolMax: 2 })),
      );
      const { rows } = await opened[0]!.pool.query('SELECT name, count(*)::int AS n FROM schema_migrations GROUP BY name ORDER BY name');
      assert.deepEqual(rows, (await readMigrations()).map((m) => ({ name: m.name, n: 1 })));
      const chat = await createChat(opened[3]!.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      assert.equal((await getChatDetail(opened[1]!.pool, chat.id, ADMIN_USER_ID))?.id, chat.id);
      await Promise.all(opened.map((d) => d.close()));
    } finally {
      await scratch.drop();
    }
  });

  it('lets several processes migrate at once behind a transaction-mode pooler, and start again later', { skip: PGBOUNCER ? false : 'pgbouncer is not installed', timeout: 120_000 }, async () => {
    const scratch = await createScratchPostgres();
    const bouncer = await startPgBouncer(scratch.url);
    // As README.md says to run behind such a pooler: no named statements.
    const open = () => openDatabase({ DATABASE_URL: bouncer.through(scratch.url), DATA_DIR: os.tmpdir(), DATABASE_PREPARED_STATEMENTS: false, DATABASE_STATEMENT_TIMEOUT_MS: 0 }, { poolMax: 2 });
    try {
      // A session lock taken on one server connection and "released" on another stayed held for good:
      // the starts beside it migrated at the same time, and every later start waited for ever.
      const first = await Promise.all(Array.from({ length: 4 }, open));
      await Promise.all(first.map((d) => d.close()));
      const again = await Promise.all(Array.from({ length: 2 }, open));
      const { rows } = await again[0]!.pool.query('SELECT name, count(*)::int AS n FROM schema_migrations GROUP BY name ORDER BY name');
      assert.deepEqual(rows, (await readMigrations()).map((m) => ({ name: m.name, n: 1 })));
      await Promise.all(again.map((d) => d.close()));
    } finally {
      await bouncer.close();
      await scratch.drop();
    }
  });

  it('refuses to start behind a pooler that refuses statement_timeout, naming DATABASE_STATEMENT_TIMEOUT_MS', { skip: PGBOUNCER ? false : 'pgbouncer is not installed', timeout: 60_000 }, async () => {
    const scratch = await createScratchPostgres();
    // A stock PgBouncer: it knows no statement_timeout, so every connection of the pool would fail.
    const bouncer = await startPgBouncer(scratch.url, ['extra_float_digits']);
    try {
      const open = openDatabase({ DATABASE_URL: bouncer.through(scratch.url), DATA_DIR: os.tmpdir(), DATABASE_PREPARED_STATEMENTS: false, DATABASE_STATEMENT_TIMEOUT_MS: 30_000 }, { poolMax: 2 });
      await assert.rejects(open, /refuses statement_timeout when a connection opens.*ignore_startup_parameters.*DATABASE_STATEMENT_TIMEOUT_MS=0/);
      // Without the parameter it starts.
      const db = await openDatabase({ DATABASE_URL: bouncer.through(scratch.url), DATA_DIR: os.tmpdir(), DATABASE_PREPARED_STATEMENTS: false, DATABASE_STATEMENT_TIMEOUT_MS: 0 }, { poolMax: 2 });
      await db.close();
    } finally {
      await bouncer.close();
      await scratch.drop();
    }
  });

  it('holds every statement to DATABASE_STATEMENT_TIMEOUT_MS but the migrations, and a silent connection to 5 s more', { timeout: 60_000 }, async () => {
    const scratch = await createScratchPostgres();
    const target = new URL(scratch.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const through = new URL(scratch.url);
    through.host = `127.0.0.1:${proxy.port}`;
    try {
      // 5 ms: the migrations (which create and rewrite tables) would be cancelled, were they held to it.
      const db = await openDatabase({ DATABASE_URL: through.toString(), DATA_DIR: os.tmpdir(), DATABASE_STATEMENT_TIMEOUT_MS: 5 }, { poolMax: 2 });
      try {
        // Read beside the pool, whose 5 ms a loaded machine could stretch even a trivial statement past.
        const plain = new pg.Client({ connectionString: scratch.url });
        await plain.connect();
        const { rows } = await plain.query('SELECT count(*)::int AS n FROM schema_migrations').finally(() => plain.end());
        assert.equal(rows[0].n, (await readMigrations()).length, 'every migration applied');
        await assert.rejects(db.pool.query('SELECT pg_sleep(1)'), (err: { code?: string }) => err.code === '57014');
        // Nothing comes back any more, not even the cancel: the client gives up on its own.
        const open = await db.pool.connect();
        proxy.blackhole();
        // On a connection that was open: the answer never comes, and the client stops waiting for it.
        await assert.rejects(open.query('SELECT 1'), (err: Error) => isDatabaseUnavailable(err) && /^Query read timeout/.test(err.message));
        open.release(true);
        // On a connection to open (a failed query's is dropped): the connect gives up.
        await assert.rejects(db.pool.query('SELECT 1'), (err: Error) => isDatabaseUnavailable(err));
      } finally {
        // First: the pool cannot end connections nothing answers on.
        await proxy.close();
        await db.close();
      }
    } finally {
      await proxy.close();
      await scratch.drop();
    }
  });

  it('names DATABASE_URL when the database does not exist', async () => {
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = '/no_such_database_here';
    await assert.rejects(openDatabase({ DATABASE_URL: url.toString(), DATA_DIR: os.tmpdir() }), /DATABASE_URL.*does not exist/);
  });
});
