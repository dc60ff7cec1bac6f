// The fencing token (sql/007_fencing.sql) against both databases: every run start on a chat takes
// the next token; a run's tool messages and answer land only while the chat still holds its token;
// a stale run's write is refused whole (no message, its LlmCall untouched) and can still fail its
// own LlmCall. A cut run's partial answer is stored as interrupted with its call failed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, startChatRun } from '../../src/store/chats.ts';
import { FencedWriteError, FIRST_RUN_TOKEN } from '../../src/store/fencing.ts';
import { failLlmCall, finishLlmCallWithMessage } from '../../src/store/llm-calls.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { testDatabases } from '../helpers/db.ts';
import { getLlmCall, listMessages } from '../helpers/store.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

for (const target of await testDatabases()) {
  describe(`fencing token ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    const call = () => ({ id: randomUUID(), instanceId: 'i' });
    const start = (chatId: string, c = call()) =>
      startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId, provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'again' }], call: c }).then((token) => ({ token: token!, callId: c.id }));

    it('a chat created by a run holds the first token; each later run start takes the next', async () => {
      const first = call();
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call: first });
      const a = await start(chat.id);
      const b = await start(chat.id);
      assert.deepEqual([FIRST_RUN_TOKEN, a.token, b.token], [1, 2, 3]);
      assert.equal(await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: randomUUID(), provider: 'provider_c', model: 'm', messages: [], call: null }), null, 'an unknown chat has no token');
    });

    it('refuses a stale run’s answer and tool message whole, and lets it fail its own call', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const stale = await start(chat.id);
      const current = await start(chat.id);
      const answer = (run: { callId: string; token: number }, content: string) =>
        finishLlmCallWithMessage(db.pool, { callId: run.callId, chatId: chat.id, assistant: { content }, usage: null, latencyMs: 1, runToken: run.token });
      await assert.rejects(answer(stale, 'late'), FencedWriteError);
      await assert.rejects(appendMessages(db.pool, chat.id, [{ role: 'tool', content: 'late tool' }], ADMIN_USER_ID, stale.token), FencedWriteError);
      assert.equal((await getLlmCall(db.pool, stale.callId))?.status, 'running', 'the refused statement wrote nothing');
      assert.equal(await failLlmCall(db.pool, { callId: stale.callId, error: 'refused', latencyMs: 1 }), true);
      await appendMessages(db.pool, chat.id, [{ role: 'tool', content: 'tool' }], ADMIN_USER_ID, current.token);
      await answer(current, 'current');
      const msgs = await listMessages(db.pool, chat.id);
      assert.deepEqual(
        msgs.map((m) => `${m.role}:${m.content}`),
        ['user:again', 'user:again', 'tool:tool', 'assistant:current'],
      );
      assert.equal((await getLlmCall(db.pool, current.callId))?.status, 'succeeded');
      assert.equal(await appendMessages(db.pool, randomUUID(), [{ role: 'tool', content: 'x' }], ADMIN_USER_ID, 5), null, 'an unknown chat is still null, not a refusal');
    });

    it('stores a cut run’s partial answer as interrupted, with its call failed, unless the chat moved on', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const cut = await start(chat.id);
      const msg = await finishLlmCallWithMessage(db.pool, { callId: cut.callId, chatId: chat.id, assistant: { content: 'half' }, usage: null, latencyMs: 1, interrupted: 'run cancelled: x', runToken: cut.token });
      assert.deepEqual(msg?.metadata, { interrupted: true });
      const c = await getLlmCall(db.pool, cut.callId);
      assert.equal(c?.status, 'failed');
      assert.equal(c?.error, 'run cancelled: x');
      const late = await start(chat.id);
      await start(chat.id);
      await assert.rejects(
        finishLlmCallWithMessage(db.pool, { callId: late.callId, chatId: chat.id, assistant: { content: 'half' }, usage: null, latencyMs: 1, interrupted: 'x', runToken: late.token }),
        FencedWriteError,
      );
    });

    it('a write racing a run start is decided on the row’s latest token', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      for (let i = 0; i < 10; i++) {
        const old = await start(chat.id);
        const [written] = await Promise.allSettled([
          finishLlmCallWithMessage(db.pool, { callId: old.callId, chatId: chat.id, assistant: { content: `old${i}` }, usage: null, latencyMs: 1, runToken: old.token }),
          start(chat.id),
        ]);
        const msgs = await listMessages(db.pool, chat.id);
        const stored = msgs.some((m) => m.content === `old${i}`);
        // Either the answer landed before the new run's start, or it was refused: never both lost and accepted.
        assert.equal(stored, written.status === 'fulfilled', `round ${i}`);
        if (written.status === 'rejected') assert.ok(written.reason instanceof FencedWriteError);
      }
    });
  });
}
