// Recovery (sql/011_checkpoints.sql) against both databases (the checkpoints themselves are
// checkpoints.test.ts's): a lost call's checkpointed text stored once as the interrupted answer with
// `reason: "instance lost"`, its call failed, whether the restart or a peer's sweeper gets there
// first, or both at once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, startChatRun } from '../../src/store/chats.ts';
import { writeCheckpoints } from '../../src/store/checkpoints.ts';
import { createSearch, getSearchDetail, markSearchRunning, saveSearchRun, SearchRunFencedError } from '../../src/store/searches.ts';
import { registerInstance, sweepDeadInstances } from '../../src/store/instances.ts';
import { FencedWriteError } from '../../src/store/fencing.ts';
import { finishLlmCall, finishLlmCallWithMessage, markInterruptedLlmCalls, startLlmCall } from '../../src/store/llm-calls.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { INTERRUPTED_ERROR, newRecoveredRuns } from '../../src/store/recovery.ts';
import { testDatabases } from '../helpers/db.ts';
import { sweptDatabase } from '../helpers/swept-db.ts';
import { getLlmCall, listMessages } from '../helpers/store.ts';

const DEAD_AFTER = 15_000;
import { ADMIN_USER_ID } from '../../src/base/types.ts';

for (const target of await testDatabases()) {
  describe(`checkpoints and recovery ${target.tag}`, () => {
    let db!: Database;
    sweptDatabase(target, (opened) => (db = opened));

    /** A chat with a running call of `instanceId`, started a minute ago (older than any dead-after span). */
    const run = async (instanceId = 'dead') => {
      const call = { id: randomUUID(), instanceId };
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call });
      await db.pool.query(`UPDATE llm_calls SET started_at = now() - interval '1 minute' WHERE id = $1`, [call.id]);
      return { callId: call.id, chatId: chat.id, runToken: 1 };
    };
    const answers = async (chatId: string) => (await listMessages(db.pool, chatId)).filter((m) => m.role === 'assistant');

    it('a restart stores the checkpointed text as the interrupted answer and fails the call, once', async () => {
      const withText = await run();
      const silent = await run();
      const title = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: silent.chatId, provider: 'provider_a', model: 'm', instanceId: 'dead', purpose: 'title' });
      await writeCheckpoints(db.pool, [{ ...withText, at: 0, text: 'Half an answ' }]);
      const tally = newRecoveredRuns();

      assert.equal(await markInterruptedLlmCalls(db.pool, { instanceId: 'dead', tally }), 3);
      assert.equal(tally.interrupted, 2, 'two chat runs recovered (the title call is no run of the chat)');
      const [answer] = await answers(withText.chatId);
      assert.deepEqual([answer?.content, answer?.metadata], ['Half an answ', { interrupted: true, reason: 'instance lost' }]);
      assert.deepEqual(await answers(silent.chatId), [], 'no text checkpointed: nothing stored');
      for (const id of [withText.callId, silent.callId, title]) {
        const call = await getLlmCall(db.pool, id);
        assert.deepEqual([call?.status, call?.error], ['failed', INTERRUPTED_ERROR]);
        assert.match(call!.error!, /^instance lost/);
      }
      assert.equal((await getLlmCall(db.pool, withText.callId))?.messageId, answer!.id);
      assert.equal(await markInterruptedLlmCalls(db.pool, { instanceId: 'dead' }), 0, 'a second recovery finds nothing');
      assert.equal((await answers(withText.chatId)).length, 1);
    });

    it('an owner back from a pause after its run was recovered stores nothing more in the chat', async () => {
      // Through a run start on an existing chat too, whose token is not the first one.
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
      const calls = [{ id: randomUUID(), instanceId: 'dead' }, { id: randomUUID(), instanceId: 'dead' }];
      const later = { callId: calls[0]!.id, chatId: chat.id, runToken: (await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'm', messages: [], call: calls[0]! }))! };
      const fresh = await run();
      const silent = await run();
      await db.pool.query(`UPDATE llm_calls SET started_at = now() - interval '1 minute'`);
      await writeCheckpoints(db.pool, [{ ...later, at: 0, text: 'Half' }, { ...fresh, at: 0, text: 'Half' }]);
      await sweepDeadInstances(db.pool, { selfId: 'peer', deadAfterMs: DEAD_AFTER });

      // The paused owner resumes: its tool message, its whole answer, its cut text all come too late.
      for (const lost of [later, fresh, silent]) {
        const finish = (extra: object) =>
          finishLlmCallWithMessage(db.pool, { callId: lost.callId, chatId: lost.chatId, assistant: { content: 'Half an answer' }, usage: null, latencyMs: 1, runToken: lost.runToken, ...extra });
        await assert.rejects(appendMessages(db.pool, lost.chatId, [{ role: 'tool', content: 'late tool' }], ADMIN_USER_ID, lost.runToken), FencedWriteError);
        await assert.rejects(finish({}), FencedWriteError);
        await assert.rejects(finish({ interrupted: 'run cancelled: this instance lost contact with the cluster' }), FencedWriteError);
        const call = await getLlmCall(db.pool, lost.callId);
        assert.deepEqual([call?.status, call?.error], ['failed', INTERRUPTED_ERROR], 'the recovered outcome stands');
      }
      assert.deepEqual((await listMessages(db.pool, later.chatId)).map((m) => m.content), ['q', 'Half']);
      assert.deepEqual((await answers(fresh.chatId)).map((m) => m.content), ['Half']);
      assert.deepEqual(await answers(silent.chatId), []);
      // The chat is free: a new run starts on it and stores as usual.
      assert.equal(typeof (await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: silent.chatId, provider: 'provider_c', model: 'm', messages: [], call: null })), 'number');
    });

    it('a recovered title call keeps its outcome when its owner finishes late', async () => {
      const { chatId } = await run();
      const title = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId, provider: 'provider_a', model: 'm', instanceId: 'dead', purpose: 'title' });
      await markInterruptedLlmCalls(db.pool, { instanceId: 'dead' });
      assert.equal(await finishLlmCall(db.pool, { callId: title, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, latencyMs: 1 }), false);
      const call = await getLlmCall(db.pool, title);
      assert.deepEqual([call?.status, call?.error, call?.totalTokens], ['failed', INTERRUPTED_ERROR, null]);
    });

    it('keeps a chat that a later run took: the lost call fails, its text is not stored', async () => {
      const lost = await run();
      await writeCheckpoints(db.pool, [{ ...lost, at: 0, text: 'old' }]);
      await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: lost.chatId, provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'new question' }], call: null });
      assert.equal(await markInterruptedLlmCalls(db.pool, { instanceId: 'dead' }), 1);
      assert.deepEqual(await answers(lost.chatId), []);
      assert.equal((await getLlmCall(db.pool, lost.callId))?.status, 'failed');
    });

    it('a lost instance’s search run reads as failed with the error; a stored or live one is left alone', async () => {
      await registerInstance(db.pool, 'live');
      const lost = (await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'lost' })).id;
      const saved = (await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'saved' })).id;
      const live = (await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'live' })).id;
      await markSearchRunning(db.pool, lost, 'dead');
      await markSearchRunning(db.pool, saved, 'dead');
      await saveSearchRun(db.pool, saved, { query: 'saved', title: null, requestId: 'r', latencyMs: 1, error: null, results: [], answerText: 'kept', answerRequestId: null, answerCitations: [], answerError: null }, ADMIN_USER_ID);
      await markSearchRunning(db.pool, live, 'live');
      await db.pool.query(`UPDATE searches SET run_started_at = now() - interval '1 minute'`);

      await sweepDeadInstances(db.pool, { selfId: 'peer', deadAfterMs: DEAD_AFTER });
      assert.equal((await getSearchDetail(db.pool, lost, ADMIN_USER_ID))?.error, INTERRUPTED_ERROR);
      assert.deepEqual([(await getSearchDetail(db.pool, saved, ADMIN_USER_ID))?.error, (await getSearchDetail(db.pool, saved, ADMIN_USER_ID))?.answerText], [null, 'kept']);
      assert.equal((await getSearchDetail(db.pool, live, ADMIN_USER_ID))?.error, null, 'a live instance’s run goes on');
    });

    it('a search run back from a pause after it was recovered saves nothing over the newer run', async () => {
      const searchRun = (answerText: string) => ({ query: 'paused', title: null, requestId: 'r', latencyMs: 1, error: null, results: [], answerText, answerRequestId: null, answerCitations: [], answerError: null });
      await registerInstance(db.pool, 'newer');
      const id = (await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'paused' })).id;
      const paused = await markSearchRunning(db.pool, id, 'dead');
      assert.ok(paused, 'the mark is handed back to its run');
      await db.pool.query(`UPDATE searches SET run_started_at = now() - interval '1 minute' WHERE id = $1`, [id]);
      const pausedMark = { ...paused, startedAt: (await db.pool.query<{ t: string }>('SELECT run_started_at::text AS t FROM searches WHERE id = $1', [id])).rows[0]!.t };
      await sweepDeadInstances(db.pool, { selfId: 'peer', deadAfterMs: DEAD_AFTER });
      assert.equal((await getSearchDetail(db.pool, id, ADMIN_USER_ID))?.error, INTERRUPTED_ERROR);

      // A newer run on a live instance holds the mark; the paused one wakes and tries to save.
      const newer = await markSearchRunning(db.pool, id, 'newer');
      await assert.rejects(saveSearchRun(db.pool, id, searchRun('late'), ADMIN_USER_ID, pausedMark), SearchRunFencedError);
      const row = (await db.pool.query<{ run_instance_id: string | null }>('SELECT run_instance_id FROM searches WHERE id = $1', [id])).rows[0]!;
      assert.equal(row.run_instance_id, 'newer', 'the newer run keeps its mark, so its crash would be seen');
      assert.equal((await getSearchDetail(db.pool, id, ADMIN_USER_ID))?.answerText, null);
      // The newer run saves, under its own mark; a run whose mark could not be taken saves only unmarked.
      assert.equal((await saveSearchRun(db.pool, id, searchRun('newer'), ADMIN_USER_ID, newer))?.answerText, 'newer');
      await markSearchRunning(db.pool, id, 'newer');
      await assert.rejects(saveSearchRun(db.pool, id, searchRun('unmarked'), ADMIN_USER_ID, null), SearchRunFencedError);
      await db.pool.query('UPDATE searches SET run_instance_id = NULL, run_started_at = NULL WHERE id = $1', [id]);
      assert.equal((await saveSearchRun(db.pool, id, searchRun('unmarked'), ADMIN_USER_ID, null))?.answerText, 'unmarked');
      assert.equal(await saveSearchRun(db.pool, randomUUID(), searchRun('gone'), ADMIN_USER_ID, newer), null, 'an unknown search is still null');
    });

    it('a restart racing a peer’s sweeper recovers each run once', async () => {
      await registerInstance(db.pool, 'peer');
      const runs = [];
      for (let i = 0; i < 20; i++) runs.push(await run());
      await writeCheckpoints(db.pool, runs.map((r, i) => ({ ...r, at: 0, text: `partial ${i}` })));
      const [restart, swept] = await Promise.all([
        markInterruptedLlmCalls(db.pool, { instanceId: 'dead' }),
        sweepDeadInstances(db.pool, { selfId: 'peer', deadAfterMs: DEAD_AFTER }),
      ]);
      const bySweep = swept.reduce((n, s) => n + s.calls, 0);
      assert.equal(restart + bySweep, runs.length, 'each call claimed by exactly one of them');
      for (const [i, r] of runs.entries()) {
        assert.deepEqual((await answers(r.chatId)).map((m) => m.content), [`partial ${i}`]);
        assert.equal((await getLlmCall(db.pool, r.callId))?.status, 'failed');
      }
    });
  });
}
