// Instance heartbeats and the sweeper: a silent instance's running calls are failed by any live
// instance, whatever the dead one's id; live instances, the sweeper itself, young calls and ended
// calls are left alone; sweeping twice, or from two instances at once, fails each call once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { INTERRUPTED_ERROR, markInterruptedLlmCalls, startLlmCall, finishLlmCall } from '../../src/store/llm-calls.ts';
import { beatInstance, registerInstance, removeInstance, sweepDeadInstances } from '../../src/store/instances.ts';
import { testDatabases } from '../helpers/db.ts';
import { sweptDatabase } from '../helpers/swept-db.ts';
import { getLlmCall } from '../helpers/store.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const DEAD_AFTER = 15_000;

for (const target of await testDatabases()) {
  describe(`instance heartbeats ${target.tag}`, () => {
    let db!: Database;
    sweptDatabase(target, (opened) => (db = opened));

    const call = (instanceId: string | null, ageMs = 60_000) =>
      startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm', instanceId }).then(async (id) => {
        await db.pool.query(`UPDATE llm_calls SET started_at = now() - make_interval(secs => $2::double precision / 1000) WHERE id = $1`, [id, ageMs]);
        return id;
      });
    const silence = (id: string, ms: number) =>
      db.pool.query(`UPDATE instances SET last_beat = now() - make_interval(secs => $2::double precision / 1000) WHERE id = $1`, [id, ms]);
    const status = async (id: string) => {
      const c = await getLlmCall(db.pool, id);
      return [c?.status, c?.error];
    };
    const sweep = (selfId: string) => sweepDeadInstances(db.pool, { selfId, deadAfterMs: DEAD_AFTER });

    it('fails the running calls of an instance silent past the limit, and only those', async () => {
      for (const id of ['live', 'dead', 'me']) await registerInstance(db.pool, id);
      await silence('dead', DEAD_AFTER + 1000);
      await silence('me', DEAD_AFTER + 1000); // the sweeper never fails its own calls
      const dead = [await call('dead'), await call('dead')];
      const live = await call('live');
      const mine = await call('me');
      const ended = await call('dead');
      await finishLlmCall(db.pool, { callId: ended, usage: null, latencyMs: 1 });

      assert.deepEqual(await sweep('me'), [{ instanceId: 'dead', calls: 2 }]);
      for (const id of dead) assert.deepEqual(await status(id), ['failed', INTERRUPTED_ERROR]);
      assert.ok((await getLlmCall(db.pool, dead[0]!))?.finishedAt);
      assert.deepEqual(await status(live), ['running', null]);
      assert.deepEqual(await status(mine), ['running', null]);
      assert.deepEqual(await status(ended), ['succeeded', null]);
      assert.deepEqual(await sweep('me'), [], 'a second sweep finds nothing: idempotent');
    });

    it('an instance is dead after three of its own intervals, not the sweeper’s', async () => {
      // It beats every 10 s (dead after 30 s); the sweeper beats every 5 s (dead after 15 s).
      await registerInstance(db.pool, 'slow', 30_000);
      await beatInstance(db.pool, 'slow', 30_000);
      const c = await call('slow');
      await silence('slow', 20_000);
      assert.deepEqual(await sweep('fast'), [], 'silent for two of its intervals: alive');
      assert.deepEqual(await status(c), ['running', null]);
      await silence('slow', 31_000);
      assert.deepEqual(await sweep('fast'), [{ instanceId: 'slow', calls: 1 }]);
    });

    it('a beat keeps an instance alive; a beat just inside the limit is not dead', async () => {
      await registerInstance(db.pool, 'a');
      await silence('a', DEAD_AFTER + 1000);
      await beatInstance(db.pool, 'a');
      const c = await call('a');
      await silence('a', DEAD_AFTER - 5000);
      assert.deepEqual(await sweep('b'), []);
      assert.deepEqual(await status(c), ['running', null]);
    });

    it('an instance with no row (stopped cleanly, or never beat) is dead, its young calls spared', async () => {
      await registerInstance(db.pool, 'gone');
      await removeInstance(db.pool, 'gone');
      const old = await call('gone');
      const unowned = await call(null);
      const young = await call('gone', 0);
      assert.deepEqual(
        (await sweep('me')).sort((x, y) => String(x.instanceId).localeCompare(String(y.instanceId))),
        [
          { instanceId: 'gone', calls: 1 },
          { instanceId: null, calls: 1 },
        ],
      );
      assert.equal((await getLlmCall(db.pool, old))?.status, 'failed');
      assert.equal((await getLlmCall(db.pool, unowned))?.status, 'failed');
      assert.deepEqual(await status(young), ['running', null], 'a call younger than the limit may be racing its first beat');
    });

    it('sweepers running at once fail each call exactly once', async () => {
      await registerInstance(db.pool, 'dead');
      await silence('dead', DEAD_AFTER + 1000);
      const calls = await Promise.all(Array.from({ length: 20 }, () => call('dead')));
      const results = await Promise.all(['s1', 's2', 's3', 's4'].map((s) => sweep(s)));
      const total = results.flat().reduce((n, r) => n + r.calls, 0);
      assert.equal(total, 20);
      for (const id of calls) assert.equal((await getLlmCall(db.pool, id))?.status, 'failed');
    });

    it('registering again restarts the row; rows silent for a week are forgotten', async () => {
      await registerInstance(db.pool, 'old');
      await silence('old', 8 * 24 * 3600 * 1000);
      await registerInstance(db.pool, 'new');
      const ids = (await db.pool.query('SELECT id FROM instances ORDER BY id')).rows.map((r) => r.id);
      assert.deepEqual(ids, ['new']);
      await silence('new', 60_000);
      await registerInstance(db.pool, 'new');
      const { rows } = await db.pool.query(`SELECT now() - last_beat < interval '1 minute' AS fresh FROM instances WHERE id = 'new'`);
      assert.equal(rows[0].fresh, true);
    });

    it('the sweeps find running calls through the running partial index, the only one left (sql/009)', async () => {
      // Thousands of ended calls and a few running ones, analysed: a sweep must not read the table whole.
      await db.pool.query(`INSERT INTO llm_calls (id, provider, model, status) SELECT 'ended-' || g, 'p', 'm', 'succeeded' FROM generate_series(1, 3000) g`);
      const running = [await call('a'), await call(null)];
      await db.pool.query('ANALYZE llm_calls');
      const { rows: idx } = await db.pool.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'llm_calls' AND indexdef LIKE '%running%' ORDER BY 1`);
      assert.deepEqual(idx.map((r) => r.indexname), ['llm_calls_running_instance_idx']);
      for (const where of [`status = 'running'`, `status = 'running' AND instance_id IS DISTINCT FROM 'me'`]) {
        const plan = (await db.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT id FROM llm_calls WHERE ${where}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
        assert.match(plan, /llm_calls_running_instance_idx/, `${where}:\n${plan}`);
        assert.doesNotMatch(plan, /Seq Scan/, `${where}:\n${plan}`);
      }
      assert.equal(await markInterruptedLlmCalls(db.pool), running.length);
      await db.pool.query(`DELETE FROM llm_calls WHERE id LIKE 'ended-%'`);
    });
  });
}
