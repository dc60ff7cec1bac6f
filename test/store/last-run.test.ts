// chat.lastRun: the chat's newest LlmCall, read in the same statement as the chat, for every status.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, getChatDetail } from '../../src/store/chats.ts';
import { failLlmCall, finishLlmCallWithMessage, INTERRUPTED_ERROR, markInterruptedLlmCalls, startLlmCall } from '../../src/store/llm-calls.ts';
import { testDatabases } from '../helpers/db.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const usage = { inputTokens: 7, outputTokens: 3, totalTokens: 10 };
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for (const target of await testDatabases()) {
  describe(`chat lastRun ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    const lastRun = async (chatId: string) => (await getChatDetail(db.pool, chatId, ADMIN_USER_ID))!.lastRun;

    it('is null without calls, then follows the newest call through each status', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'q' }] });
      assert.equal(await lastRun(chat.id), null);

      const first = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'sim-c-large' });
      const running = await lastRun(chat.id);
      assert.deepEqual({ ...running, startedAt: '' }, {
        callId: first, provider: 'provider_c', model: 'sim-c-large', status: 'running', error: null,
        startedAt: '', finishedAt: null, latencyMs: null, usage: null, fallback: null,
      });
      assert.match(running!.startedAt, ISO_MS);

      await finishLlmCallWithMessage(db.pool, { callId: first, chatId: chat.id, assistant: { content: 'a' }, usage, latencyMs: 12 });
      const succeeded = await lastRun(chat.id);
      assert.deepEqual([succeeded?.status, succeeded?.usage, succeeded?.latencyMs, succeeded?.error], ['succeeded', usage, 12, null]);
      assert.match(succeeded!.finishedAt!, ISO_MS);

      const second = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'sim-a-mini' });
      await failLlmCall(db.pool, { callId: second, error: 'upstream 500', latencyMs: 4 });
      assert.deepEqual(
        (({ callId, provider, status, error, usage: u }) => ({ callId, provider, status, error, usage: u }))((await lastRun(chat.id))!),
        { callId: second, provider: 'provider_a', status: 'failed', error: 'upstream 500', usage: null },
      );

      const third = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_b', model: 'sim-b-large' });
      await finishLlmCallWithMessage(db.pool, { callId: third, chatId: chat.id, assistant: { content: 'par' }, usage: null, latencyMs: 2, stopped: true });
      assert.deepEqual([(await lastRun(chat.id))?.callId, (await lastRun(chat.id))?.status], [third, 'stopped']);
    });

    it('reads a call cut by a restart as failed, saying the service restarted', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const id = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'm', instanceId: 'gone:1' });
      await markInterruptedLlmCalls(db.pool, { instanceId: 'gone:1' });
      const run = await lastRun(chat.id);
      assert.deepEqual([run?.callId, run?.status, run?.error], [id, 'failed', INTERRUPTED_ERROR]);
      assert.match(run!.error!, /restarted/);
    });

    it('skips title suggestions: they are no answer of the chat', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const run = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'm' });
      const title = await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_a', model: 'nano', purpose: 'title' });
      await failLlmCall(db.pool, { callId: title, error: 'title failed', latencyMs: 1 });
      assert.deepEqual([(await lastRun(chat.id))?.callId, (await lastRun(chat.id))?.status], [run, 'running']);
    });

    it('belongs to its own chat only', async () => {
      const a = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const b = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      await startLlmCall(db.pool, { owner: ADMIN_USER_ID, chatId: a.id, provider: 'provider_c', model: 'm' });
      assert.equal(await lastRun(b.id), null);
    });
  });
}
