// Named statements (src/db/prepared.ts): a marked Postgres pool prepares the run path's statements
// once per connection; the embedded database and DATABASE_PREPARED_STATEMENTS=false never name them.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/db/pool.ts';
import { prepared, usePreparedStatements } from '../../src/db/prepared.ts';
import type { Database } from '../../src/db/types.ts';
import { createChat, getChat } from '../../src/store/chats.ts';
import { analyzeIfNeverAnalyzed, FIRST_ANALYZE_AFTER, noteRunWrites, RUN_TABLES } from '../../src/store/first-analyze.ts';
import { waitFor } from '../helpers/wait.ts';
import { testDatabases } from '../helpers/db.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

/** The test database's URL, to open more pools on it. */
const urlOf = (db: Database) => (db.pool as unknown as { options: { connectionString: string } }).options.connectionString;

const preparedStatements = async (pool: pg.Pool) =>
  (await pool.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'css\\_%'")).rows.map((r) => r.statement);

for (const target of await testDatabases()) {
  describe(`named statements ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(() => db.close());

    if (target.name === 'embedded') {
      it('are not used: one PGlite session serves every pool client', async () => {
        assert.equal(prepared(db.pool, 'SELECT 1'), 'SELECT 1');
        const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
        assert.equal((await getChat(db.pool, chat.id, ADMIN_USER_ID))?.id, chat.id);
        assert.deepEqual(await preparedStatements(db.pool), []);
      });
      return;
    }

    it('the service pool names them (DATABASE_PREPARED_STATEMENTS defaults to true)', () => {
      const statement = prepared(db.pool, 'SELECT 1 AS one');
      assert.equal(typeof statement, 'object');
      assert.match((statement as { name: string }).name, /^css_\d+$/);
      assert.equal(prepared(db.pool, 'SELECT 1 AS one'), statement, 'one name per text');
    });

    it('a marked pool prepares each statement once on its connection and reuses it', async () => {
      // One connection, so the check reads the same session the statements ran on.
      const connectionString = urlOf(db);
      const marked = new pg.Pool({ connectionString, max: 1 });
      const plain = new pg.Pool({ connectionString, max: 1 });
      usePreparedStatements(marked);
      try {
        const chat = await createChat(marked, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
        for (let i = 0; i < 3; i++) assert.equal((await getChat(marked, chat.id, ADMIN_USER_ID))?.id, chat.id);
        const named = await preparedStatements(marked);
        assert.equal(named.filter((s) => s.includes('INSERT INTO chats')).length, 1);
        assert.equal(named.filter((s) => s.includes('WHERE c.id = $1')).length, 1);
        assert.equal((await getChat(plain, chat.id, ADMIN_USER_ID))?.id, chat.id);
        assert.deepEqual(await preparedStatements(plain), []);
      } finally {
        await Promise.all([marked.end(), plain.end()]);
      }
    });

    it('a new database\'s run tables are analysed once its run writes pass the mark, when autovacuum has not got there', async () => {
      // Named statements keep plans made on near-empty tables until an ANALYZE: the pool makes the first
      // one itself. Autovacuum is off for the run tables here, so only the service can analyse them.
      const connectionString = urlOf(db);
      const pool = new pg.Pool({ connectionString, max: 2 });
      usePreparedStatements(pool);
      const analysed = async () =>
        (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_user_tables WHERE relname = ANY ($1) AND last_analyze IS NOT NULL', [RUN_TABLES])).rows[0]!.n;
      try {
        for (const t of RUN_TABLES) await pool.query(`ALTER TABLE ${t} SET (autovacuum_enabled = off)`);
        assert.equal(await analysed(), 0, 'the new database was never analysed');
        // The pool's count stands just below the mark (ten thousand real starts would take a minute
        // here); the next run write, a start through the store, is the one that passes it.
        noteRunWrites(pool, FIRST_ANALYZE_AFTER - 1);
        await createChat(pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call: { id: randomUUID(), instanceId: 'i' } });
        await waitFor(async () => (await analysed()) === RUN_TABLES.length, 20_000, 'the run tables\' first ANALYZE');
        assert.equal(await analyzeIfNeverAnalyzed(pool), false, 'an analysed database is left to autovacuum');
      } finally {
        for (const t of RUN_TABLES) await pool.query(`ALTER TABLE ${t} RESET (autovacuum_enabled)`).catch(() => {});
        await pool.end();
      }
    });

    it('DATABASE_PREPARED_STATEMENTS=false leaves every statement unnamed', async () => {
      const connectionString = urlOf(db);
      const off = await openDatabase({ DATABASE_URL: connectionString, DATA_DIR: '', DATABASE_PREPARED_STATEMENTS: false }, { poolMax: 1 });
      try {
        assert.equal(prepared(off.pool, 'SELECT 1 AS one'), 'SELECT 1 AS one');
        assert.equal(await getChat(off.pool, randomUUID(), ADMIN_USER_ID), null);
        assert.deepEqual(await preparedStatements(off.pool), []);
      } finally {
        await off.close();
      }
    });
  });
}
