// The takeover's handoff (store/takeover.ts) in the recovery's transaction, against both databases:
// a lost provider_b run with checkpointed text gets a new running call on the taking instance, the
// chat's next fencing token and its start's Idempotency-Key, its text not stored; other providers,
// a chat a later run took, and a continuation that is itself lost are recovered as interrupted text.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, startChatRun } from '../../src/store/chats.ts';
import { writeCheckpoints } from '../../src/store/checkpoints.ts';
import { claimIdempotencyKey, readIdempotencyKey } from '../../src/store/idempotency.ts';
import { endAsInterrupted, recoverLostCalls, type TakeoverPolicy } from '../../src/store/recovery.ts';
import type { ContinuedRun } from '../../src/store/takeover.ts';
import { testDatabases } from '../helpers/db.ts';
import { getLlmCall, listMessages } from '../helpers/store.ts';
import { sweptDatabase } from '../helpers/swept-db.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

for (const target of await testDatabases()) {
  describe(`takeover handoff ${target.tag}`, () => {
    let db!: Database;
    sweptDatabase(target, (opened) => (db = opened));

    /** A chat whose running call of `instanceId` has checkpointed `text`. */
    const lostRun = async (provider: 'provider_b' | 'provider_c', text: string, instanceId = 'dead') => {
      const call = { id: randomUUID(), instanceId };
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider, model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call });
      await writeCheckpoints(db.pool, [{ callId: call.id, chatId: chat.id, runToken: 1, at: 0, text }]);
      return { callId: call.id, chatId: chat.id };
    };
    const lostOf = (instanceId: string) => ({ where: 'c.instance_id = $2', params: [instanceId] });
    const policy = (started: ContinuedRun[]): TakeoverPolicy => ({ instanceId: 'peer', providers: new Set(['provider_b']), start: (r) => started.push(r) });
    const answers = async (chatId: string) => (await listMessages(db.pool, chatId)).filter((m) => m.role === 'assistant').map((m) => [m.content, m.metadata]);

    it('hands a provider_b run to the peer: a new running call, the next token, the key; nothing stored', async () => {
      const b = await lostRun('provider_b', 'Half an answer ');
      const c = await lostRun('provider_c', 'Half of another');
      assert.ok(await claimIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: 'k', requestHash: 'h', mode: 'stream', chatId: b.chatId, callId: b.callId }));
      const started: ContinuedRun[] = [];
      const recovered = await recoverLostCalls(db.pool, lostOf('dead'), { takeover: policy(started) });
      assert.deepEqual(started, recovered.continued);
      const [run] = started;
      assert.deepEqual({ ...run, newCallId: undefined }, { callId: b.callId, chatId: b.chatId, provider: 'provider_b', model: 'm', owner: 'admin', text: 'Half an answer', deltas: null, token: 1, trace: null, runToken: 2, newCallId: undefined });
      const fresh = await getLlmCall(db.pool, run!.newCallId);
      assert.equal(fresh?.status, 'running');
      assert.match((await getLlmCall(db.pool, b.callId))!.error!, new RegExp(`^instance lost: .*continued by call ${run!.newCallId}$`));
      assert.equal((await readIdempotencyKey(db.pool, 'k', ADMIN_USER_ID))?.callId, run!.newCallId, 'a retry with the key finds the continuation');
      assert.deepEqual(await answers(b.chatId), [], 'the continuation stores the answer, not the recovery');
      assert.deepEqual(await answers(c.chatId), [['Half of another', { interrupted: true, reason: 'instance lost' }]]);
    });

    it('a continuation that cannot start because a new run took its chat ends its call and its key', async () => {
      const b = await lostRun('provider_b', 'Half an answer');
      assert.ok(await claimIdempotencyKey(db.pool, { owner: ADMIN_USER_ID, key: 'k2', requestHash: 'h', mode: 'stream', chatId: b.chatId, callId: b.callId }));
      const started: ContinuedRun[] = [];
      await recoverLostCalls(db.pool, lostOf('dead'), { takeover: policy(started) });
      const [run] = started;
      // The user's new stream won the chat's lease before the continuation could start.
      await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: b.chatId, provider: 'provider_b', model: 'm', messages: [{ role: 'user', content: 'again' }], call: { id: randomUUID(), instanceId: 'peer' } });
      await endAsInterrupted(db.pool, run!);
      const call = await getLlmCall(db.pool, run!.newCallId);
      assert.deepEqual([call?.status, /^instance lost/.test(call?.error ?? '')], ['failed', true], 'not left running on a live instance for good');
      const key = await readIdempotencyKey(db.pool, 'k2', ADMIN_USER_ID);
      assert.deepEqual([key?.callId, key?.callStatus], [run!.newCallId, 'failed'], 'a retry with the key reads the run failed, not running');
      assert.deepEqual(await answers(b.chatId), [], 'the new run keeps the chat');
    });

    it('a continuation that is itself lost, and a chat a later run took, end as interrupted text', async () => {
      const b = await lostRun('provider_b', 'Half an answer');
      const first: ContinuedRun[] = [];
      await recoverLostCalls(db.pool, lostOf('dead'), { takeover: policy(first) });
      // The peer died too: its continuation is not taken over again.
      const again: ContinuedRun[] = [];
      await recoverLostCalls(db.pool, lostOf('peer'), { takeover: { ...policy(again), instanceId: 'third' } });
      assert.deepEqual(again, []);
      assert.deepEqual(await answers(b.chatId), [['Half an answer', { interrupted: true, reason: 'instance lost' }]]);

      const taken = await lostRun('provider_b', 'Stale');
      await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: taken.chatId, provider: 'provider_b', model: 'm', messages: [], call: null });
      const none: ContinuedRun[] = [];
      await recoverLostCalls(db.pool, lostOf('dead'), { takeover: policy(none) });
      assert.deepEqual(none, []);
      assert.equal((await getLlmCall(db.pool, taken.callId))?.status, 'failed');
    });
  });
}
