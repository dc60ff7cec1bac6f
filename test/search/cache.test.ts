// reuseByQuery and cacheHit around search runs, with a clock the test moves: cacheHit only for a
// reused search with stored results or answer, updated within 24 hours, and not streaming right now.
// Requests at once with the same query get one search (real Postgres: decided under a table lock). Also:
// search runs without engine_a configured.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { apiDatabases, variantTag, NEEDS_POSTGRES, serverOnScratchPostgres, startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const HOUR = 60 * 60 * 1000;

class MovableClock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
}

for (const db of apiDatabases()) {
  describe(`search reuse and cacheHit ${variantTag(db)}`, () => {
    let t: TestServer;
    const clock = new MovableClock();
    before(async () => {
      t = await startTestServer({ db, clock });
    });
    after(() => t.close());

    const reuse = async (q: string) => (await t.call('POST', '/v1/searches', { query: q, reuseByQuery: true })).body;

    it('no stored results → reused without cacheHit; after a run → cacheHit within 24 h, not after', async () => {
      clock.offset = 0;
      const q = `Tide Tables ${randomUUID().slice(0, 6)}`;
      const created = (await t.call('POST', '/v1/searches', { query: q })).body;
      assert.deepEqual([created.reused, created.cacheHit], [false, false]);
      const idle = await reuse(`  ${q.toLowerCase()} `);
      assert.equal(idle.search.id, created.search.id);
      assert.deepEqual([idle.reused, idle.cacheHit], [true, false]);

      const run = await t.call('POST', `/v1/searches/${created.search.id}/run`, {});
      assert.equal(run.status, 200);
      const hit = await reuse(q);
      assert.deepEqual([hit.search.id, hit.reused, hit.cacheHit], [created.search.id, true, true]);

      clock.offset = 23 * HOUR;
      assert.equal((await reuse(q)).cacheHit, true);
      clock.offset = 24 * HOUR + 60_000;
      const stale = await reuse(q);
      assert.deepEqual([stale.search.id, stale.reused, stale.cacheHit], [created.search.id, true, false]);

      // A rerun on the returned id refreshes updatedAt, so the window starts again (clock back to real time).
      clock.offset = 0;
      await t.call('POST', `/v1/searches/${created.search.id}/run`, {});
      assert.equal((await reuse(q)).cacheHit, true);
    });

    it('cacheHit is false while the search is streaming, and true again once it is done', async () => {
      clock.offset = 0;
      const q = `Moon Phases ${randomUUID().slice(0, 6)}`;
      const { search } = (await t.call('POST', '/v1/searches', { query: q })).body;
      await t.call('POST', `/v1/searches/${search.id}/run`, {});
      assert.equal((await reuse(q)).cacheHit, true);

      const seen: SseEvent[] = [];
      // The run's search call is held at a gate until the check during the run is done.
      const g = gateName();
      const held = `${q} SIM {"searchGate":"${g}"}`;
      const streaming = t.stream(`/v1/searches/${search.id}/run/stream`, { query: held }, { stopAfter: (ev) => (seen.push(ev), false) });
      await waitFor(async () => (await t.call('GET', '/v1/active-runs')).body.searches.includes(search.id), 5000, 'the run to start');
      // The run's query override carries a directive, so reuse by the stored (old) query text.
      const during = await reuse(q);
      assert.deepEqual([during.search.id, during.reused, during.cacheHit], [search.id, true, false]);
      t.sim.openGate(g);
      const r = await streaming;
      assert.equal(r.events.at(-1)!.event, 'done');
      assert.ok(!seen.some((e) => e.event === 'error'));
      const afterRun = await reuse(held);
      assert.deepEqual([afterRun.search.id, afterRun.cacheHit], [search.id, true]);
    });

    it('a search whose last run stored nothing is never a cache hit', async () => {
      clock.offset = 0;
      const q = `Nothing Found ${randomUUID().slice(0, 6)}`;
      const { search } = (await t.call('POST', '/v1/searches', { query: q })).body;
      const failed = await t.call('POST', `/v1/searches/${search.id}/run`, { query: `${q} SIM {"searchStatus":500,"answerStatus":500}` });
      assert.equal(failed.status, 502);
      const found = await reuse(`${q} SIM {"searchStatus":500,"answerStatus":500}`);
      assert.deepEqual([found.search.id, found.reused, found.cacheHit], [search.id, true, false]);
    });
  });
}

describe('search runs without engine_a', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ env: { ENGINE_A_API_KEY: '' } });
  });
  after(() => t.close());

  it('answer 503 naming ENGINE_A_API_KEY, before any stream opens', async () => {
    const { search } = (await t.call('POST', '/v1/searches', { query: 'anything' })).body;
    for (const path of ['run', 'run/stream']) {
      const r = await t.call('POST', `/v1/searches/${search.id}/${path}`, {});
      assert.equal(r.status, 503, path);
      assert.equal(r.body.message, 'search runs need engine_a: set ENGINE_A_API_KEY');
    }
    assert.deepEqual((await t.call('GET', '/v1/active-runs')).body.searches, []);
  });
});

describe('reuseByQuery: requests at once get one search', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres();

  it('two requests that both find none wait for each other: one creates the search, the other reuses it', async () => {
    const t = scratch.server();
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    // pg_locks, not pg_stat_activity: the latter is read once per transaction, and this one holds the lock.
    const waiting = async () =>
      Number((await db.query('SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())')).rows[0].n);
    try {
      // Inserts into `searches` wait on this lock; looking for a search does not. Without a lock of
      // their own, both requests would find none and then both insert once it is released.
      await db.query('BEGIN');
      await db.query('LOCK TABLE searches IN SHARE MODE');
      const ask = () => t.call('POST', '/v1/searches', { query: 'Double Submit', reuseByQuery: true });
      const both = Promise.all([ask(), ask()]);
      await waitFor(async () => (await waiting()) === 2, 10_000, 'both requests waiting on a lock');
      await db.query('ROLLBACK');
      const [a, b] = await both;
      assert.deepEqual([a.status, b.status], [200, 200]);
      assert.equal(a.body.search.id, b.body.search.id, 'one search');
      assert.deepEqual([a.body.reused, b.body.reused].sort(), [false, true]);
      const listed = (await t.call('GET', '/v1/searches')).body.searches.filter((x: { query: string }) => x.query === 'Double Submit');
      assert.equal(listed.length, 1);
    } finally {
      await db.end();
    }
  });
});
