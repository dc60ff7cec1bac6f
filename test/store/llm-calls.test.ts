import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { WriteRetryQueue } from '../../src/db/write-retry.ts';
import { createChat, deleteChat, getChat } from '../../src/store/chats.ts';
import {
  failLlmCall,
  finishLlmCall,
  finishLlmCallWithMessage,
  ChatGoneError,
  INTERRUPTED_ERROR,
  markInterruptedLlmCalls,
  recordLlmCallFailure,
  startLlmCall,
} from '../../src/store/llm-calls.ts';
import { testDatabases } from '../helpers/db.ts';
import { getLlmCall, listMessages } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

for (const target of await testDatabases()) {
  describe(`llm calls store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
      // Lets a test make the assistant-message INSERT fail from inside the statement.
      await db.pool.query(`
        CREATE FUNCTION fail_on_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.content = 'boom' THEN RAISE EXCEPTION 'message insert failed'; END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER fail_on_boom BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION fail_on_boom();`);
    });
    after(async () => {
      await db?.close();
    });

    it('refuses a call whose chat is gone with a ChatGoneError (the spec\'s chat not found)', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      assert.equal(await deleteChat(db.pool, chat.id, ADMIN_USER_ID), true);
      await assert.rejects(startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'm', purpose: 'title' }), (err: unknown) => {
        assert.ok(err instanceof ChatGoneError);
        assert.deepEqual([err.message, err.chatId], ['chat not found', chat.id]);
        return true;
      });
    });

    it('starts a call as running', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const id = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'm' });
      const call = await getLlmCall(db.pool, id);
      assert.equal(call?.status, 'running');
      assert.equal(call?.chatId, chat.id);
      assert.equal(call?.finishedAt, null);
      assert.match(call!.startedAt, /Z$/);
    });

    it('stores the assistant message and the usage together', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
      const callId = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'm' });
      await clockPast(chat.updatedAt);
      const message = await finishLlmCallWithMessage(db.pool, {
        callId,
        chatId: chat.id,
        assistant: { content: 'answer', metadata: { finish: 'stop' } },
        usage,
        latencyMs: 1234.4,
      });
      assert.ok(message);
      assert.deepEqual({ ...message, id: '', createdAt: '' }, {
        id: '',
        createdAt: '',
        role: 'assistant',
        content: 'answer',
        name: null,
        metadata: { finish: 'stop' },
      });
      assert.deepEqual((await listMessages(db.pool, chat.id)).map((m) => m.content), ['q', 'answer']);
      const call = await getLlmCall(db.pool, callId);
      assert.deepEqual(
        [call?.status, call?.inputTokens, call?.outputTokens, call?.totalTokens, call?.latencyMs, call?.messageId, call?.error],
        ['succeeded', 10, 5, 15, 1234, message.id, null],
      );
      assert.ok(call?.finishedAt);
      assert.ok((await getChat(db.pool, chat.id, ADMIN_USER_ID))!.updatedAt > chat.updatedAt);
    });

    it('writes nothing when the message insert fails: the call stays running', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const callId = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'm' });
      await clockPast(chat.updatedAt);
      await assert.rejects(
        finishLlmCallWithMessage(db.pool, { callId, chatId: chat.id, assistant: { content: 'boom' }, usage, latencyMs: 5 }),
        /message insert failed/,
      );
      const call = await getLlmCall(db.pool, callId);
      assert.equal(call?.status, 'running');
      assert.equal(call?.totalTokens, null);
      assert.deepEqual(await listMessages(db.pool, chat.id), []);
      assert.equal((await getChat(db.pool, chat.id, ADMIN_USER_ID))!.updatedAt, chat.updatedAt);
    });

    it('writes nothing when the call update fails: no orphan message', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const callId = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'm' });
      // 2^40 overflows the integer column, failing the UPDATE part of the statement.
      await assert.rejects(
        finishLlmCallWithMessage(db.pool, { callId, chatId: chat.id, assistant: { content: 'ok' }, usage, latencyMs: 2 ** 40 }),
      );
      assert.equal((await getLlmCall(db.pool, callId))?.status, 'running');
      assert.deepEqual(await listMessages(db.pool, chat.id), []);
    });

    it('refuses an unknown call without storing the message', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      await assert.rejects(
        finishLlmCallWithMessage(db.pool, { callId: 'nope', chatId: chat.id, assistant: { content: 'x' }, usage, latencyMs: 1 }),
        /not found/,
      );
      assert.deepEqual(await listMessages(db.pool, chat.id), []);
    });

    it('succeeds a call without a chat, with or without a message', async () => {
      const a = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_b', model: 'm' });
      assert.equal(await finishLlmCallWithMessage(db.pool, { callId: a, chatId: null, assistant: { content: 'x' }, usage: null, latencyMs: 3 }), null);
      assert.equal((await getLlmCall(db.pool, a))?.status, 'succeeded');
      const b = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_b', model: 'm' });
      assert.equal(await finishLlmCall(db.pool, { callId: b, usage, latencyMs: 7 }), true);
      const call = await getLlmCall(db.pool, b);
      assert.deepEqual([call?.status, call?.totalTokens, call?.latencyMs, call?.messageId], ['succeeded', 15, 7, null]);
      assert.equal(await finishLlmCall(db.pool, { callId: 'nope', usage, latencyMs: 7 }), false);
    });

    it('records a failure', async () => {
      const id = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_d', model: 'm' });
      assert.equal(await failLlmCall(db.pool, { callId: id, error: 'upstream 500', latencyMs: 42 }), true);
      const call = await getLlmCall(db.pool, id);
      assert.deepEqual([call?.status, call?.error, call?.latencyMs], ['failed', 'upstream 500', 42]);
      assert.ok(call?.finishedAt);
      assert.equal(await failLlmCall(db.pool, { callId: 'nope', error: 'x', latencyMs: 1 }), false);
    });

    it('a failure never overwrites an ended call; a late failure is dated back to when it happened', async () => {
      const done = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' });
      await finishLlmCall(db.pool, { callId: done, usage, latencyMs: 1 });
      assert.equal(await failLlmCall(db.pool, { callId: done, error: 'late', latencyMs: 1 }), false);
      assert.deepEqual([(await getLlmCall(db.pool, done))?.status, (await getLlmCall(db.pool, done))?.error], ['succeeded', null]);

      const late = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' });
      assert.equal(await failLlmCall(db.pool, { callId: late, error: 'db was down', latencyMs: 5, sinceFailureMs: 60_000 }), true);
      const { rows } = await db.pool.query(`SELECT now() - finished_at AS ago FROM llm_calls WHERE id = $1`, [late]);
      assert.ok(rows[0].ago.minutes === 1 || rows[0].ago.seconds >= 59, `finished about a minute ago (${JSON.stringify(rows[0].ago)})`);
    });

    it('recordLlmCallFailure writes at once when the database answers, and never rejects', async () => {
      const id = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' });
      assert.equal(await recordLlmCallFailure(db.pool, { callId: id, error: 'boom', latencyMs: 3 }, new WriteRetryQueue()), 'written');
      assert.equal((await getLlmCall(db.pool, id))?.error, 'boom');
      // An error of the statement itself (2^40 overflows the integer column) is permanent: not queued, not thrown.
      const other = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' });
      assert.equal(await recordLlmCallFailure(db.pool, { callId: other, error: 'x', latencyMs: 2 ** 40 }, new WriteRetryQueue()), 'failed');
      assert.equal((await getLlmCall(db.pool, other))?.status, 'running');
      await failLlmCall(db.pool, { callId: other, error: 'x', latencyMs: 1 });
    });

    it('ends a stopped call with its partial answer marked stopped', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
      const callId = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'm' });
      const message = await finishLlmCallWithMessage(db.pool, { callId, chatId: chat.id, assistant: { content: 'half an ans' }, usage: null, latencyMs: 9, stopped: true });
      assert.deepEqual([message?.content, message?.metadata], ['half an ans', { stopped: true }]);
      const call = await getLlmCall(db.pool, callId);
      assert.deepEqual([call?.status, call?.error, call?.messageId, call?.latencyMs], ['stopped', null, message!.id, 9]);
      assert.ok(call?.finishedAt);
    });

    it('stores no message for a call stopped before any text, and leaves the chat untouched', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
      const callId = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'm' });
      assert.equal(await finishLlmCallWithMessage(db.pool, { callId, chatId: chat.id, assistant: { content: '' }, usage: null, latencyMs: 1, stopped: true }), null);
      assert.deepEqual((await listMessages(db.pool, chat.id)).map((m) => m.content), ['q']);
      assert.deepEqual([(await getLlmCall(db.pool, callId))?.status, (await getLlmCall(db.pool, callId))?.messageId], ['stopped', null]);
      assert.equal((await getChat(db.pool, chat.id, ADMIN_USER_ID))!.updatedAt, chat.updatedAt);
    });

    it('keeps calls when their chat is deleted', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const id = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'm' });
      await finishLlmCallWithMessage(db.pool, { callId: id, chatId: chat.id, assistant: { content: 'a' }, usage, latencyMs: 1 });
      await deleteChat(db.pool, chat.id, ADMIN_USER_ID);
      const call = await getLlmCall(db.pool, id);
      assert.deepEqual([call?.status, call?.chatId, call?.messageId], ['succeeded', null, null]);
    });

    it('marks only running calls as interrupted', async () => {
      await markInterruptedLlmCalls(db.pool); // leftovers of earlier tests
      const running = [
        await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' }),
        await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_b', model: 'm' }),
      ];
      const done = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' });
      await finishLlmCall(db.pool, { callId: done, usage, latencyMs: 1 });
      const failed = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm' });
      await failLlmCall(db.pool, { callId: failed, error: 'own error', latencyMs: 1 });

      assert.equal(await markInterruptedLlmCalls(db.pool), 2);
      for (const id of running) {
        const call = await getLlmCall(db.pool, id);
        assert.deepEqual([call?.status, call?.error], ['failed', INTERRUPTED_ERROR]);
        assert.ok(call?.finishedAt);
      }
      assert.equal((await getLlmCall(db.pool, done))?.status, 'succeeded');
      assert.equal((await getLlmCall(db.pool, failed))?.error, 'own error');
      assert.equal(await markInterruptedLlmCalls(db.pool), 0);
    });

    it('with an instance id, fails only that instance’s calls, unowned ones and stale ones', async () => {
      await markInterruptedLlmCalls(db.pool);
      const start = (instanceId: string | null) => startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: null, provider: 'provider_a', model: 'm', instanceId });
      const mine = await start('host-a:8080');
      const other = await start('host-b:8080');
      const unowned = await start(null);
      const staleOther = await start('host-c:8080');
      await db.pool.query(`UPDATE llm_calls SET started_at = now() - interval '2 days' WHERE id = $1`, [staleOther]);
      assert.equal(await markInterruptedLlmCalls(db.pool, { instanceId: 'host-a:8080' }), 3);
      assert.equal((await getLlmCall(db.pool, mine))?.status, 'failed');
      assert.equal((await getLlmCall(db.pool, unowned))?.status, 'failed');
      assert.equal((await getLlmCall(db.pool, staleOther))?.status, 'failed');
      assert.equal((await getLlmCall(db.pool, other))?.status, 'running', 'another live instance keeps its call');
    });
  });
}
