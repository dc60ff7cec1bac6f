// Idempotency-Key records: one owner per key even under a burst, 24 h expiry (ignored, taken over,
// purged), the outcome recorded by the owner only, and the LlmCall's status read alongside.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import {
  claimIdempotencyKey,
  finishIdempotencyKey,
  purgeExpiredIdempotencyKeys,
  readIdempotencyKey,
  releaseIdempotencyKey,
} from '../../src/store/idempotency.ts';
import { failLlmCall, startLlmCall } from '../../src/store/llm-calls.ts';
import { testDatabases } from '../helpers/db.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

let n = 0;
const fresh = () => ({ owner: ADMIN_USER_ID, key: `key-${process.pid}-${++n}`, requestHash: 'h1', mode: 'stream' as const, chatId: `chat-${n}`, callId: `call-${n}` });
const age = (db: Database, key: string, hours: number) =>
  db.pool.query(`UPDATE idempotency_keys SET created_at = now() - make_interval(hours => $2) WHERE key = $1`, [key, hours]);

for (const target of await testDatabases()) {
  describe(`idempotency keys ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('gives a key to its first request only, and reads what it started', async () => {
      const k = fresh();
      assert.equal(await claimIdempotencyKey(db.pool, k), true);
      assert.equal(await claimIdempotencyKey(db.pool, { ...k, requestHash: 'h2', chatId: 'other' }), false);
      const r = await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID);
      assert.deepEqual(
        { ...r, ageMs: 0 },
        { key: k.key, requestHash: 'h1', mode: 'stream', chatId: k.chatId, callId: k.callId, status: 'running', response: null, ageMs: 0, callStatus: null, callError: null, callProvider: null, callModel: null },
      );
      assert.ok(r!.ageMs >= 0 && r!.ageMs < 60_000);
    });

    it('lets exactly one of a burst of simultaneous claims win', async () => {
      const k = fresh();
      const won = await Promise.all(Array.from({ length: 8 }, (_, i) => claimIdempotencyKey(db.pool, { ...k, chatId: `c${i}` })));
      assert.equal(won.filter(Boolean).length, 1);
      const winner = won.indexOf(true);
      assert.equal((await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID))?.chatId, `c${winner}`);
    });

    it('records the outcome for the owning call only, once', async () => {
      const k = fresh();
      await claimIdempotencyKey(db.pool, k);
      await finishIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: k.key, callId: 'someone-else', status: 'failed', response: { x: 1 } });
      assert.equal((await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID))?.status, 'running');
      await finishIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: k.key, callId: k.callId, status: 'succeeded', response: { text: 'hi\0' } });
      await finishIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: k.key, callId: k.callId, status: 'failed', response: { late: true } });
      const r = await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID);
      assert.deepEqual([r?.status, r?.response], ['succeeded', { text: 'hi' }]);
    });

    it('reads the LlmCall status beside the key (a run failed by a restart sweep)', async () => {
      const k = fresh();
      const callId = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_c', model: 'm' });
      await claimIdempotencyKey(db.pool, { ...k, callId });
      assert.equal((await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID))?.callStatus, 'running');
      await failLlmCall(db.pool, { callId, error: 'boom', latencyMs: 1 });
      const r = await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID);
      assert.deepEqual([r?.status, r?.callStatus, r?.callError], ['running', 'failed', 'boom']);
    });

    it('frees a released claim, never a finished one', async () => {
      const k = fresh();
      await claimIdempotencyKey(db.pool, k);
      await releaseIdempotencyKey(db.pool, k.key, k.callId, ADMIN_USER_ID);
      assert.equal(await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID), null);
      assert.equal(await claimIdempotencyKey(db.pool, k), true);
      await finishIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: k.key, callId: k.callId, status: 'succeeded', response: {} });
      await releaseIdempotencyKey(db.pool, k.key, k.callId, ADMIN_USER_ID);
      assert.equal((await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID))?.status, 'succeeded');
    });

    it('ignores a key after 24 hours, lets the next request take it over, and purges expired rows', async () => {
      const k = fresh();
      await claimIdempotencyKey(db.pool, k);
      await finishIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: k.key, callId: k.callId, status: 'succeeded', response: { old: true } });
      await age(db, k.key, 23);
      assert.equal(await claimIdempotencyKey(db.pool, { ...k, requestHash: 'h2' }), false, 'still live at 23 h');
      await age(db, k.key, 25);
      assert.equal(await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID), null, 'expired rows are ignored');
      assert.equal(await claimIdempotencyKey(db.pool, { ...k, requestHash: 'h2', callId: 'new-call' }), true);
      const r = await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID);
      assert.deepEqual([r?.requestHash, r?.callId, r?.status, r?.response], ['h2', 'new-call', 'running', null]);

      const old = [fresh(), fresh(), fresh()];
      for (const o of old) {
        await claimIdempotencyKey(db.pool, o);
        await age(db, o.key, 30);
      }
      assert.equal(await purgeExpiredIdempotencyKeys(db.pool, 2), 2, 'in batches');
      assert.equal(await purgeExpiredIdempotencyKeys(db.pool), 1);
      assert.equal(await purgeExpiredIdempotencyKeys(db.pool), 0);
      assert.ok(await readIdempotencyKey(db.pool, k.key, ADMIN_USER_ID), 'live rows stay');
    });
  });
}
