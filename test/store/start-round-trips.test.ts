// A persisted chat run's start is one statement, one round trip, on both databases (issue 38): the
// chat created with its input, or an existing chat's new input appended, with the running LlmCall and
// the run's fencing token taken. The queries are counted on the service's own pool as the run's
// prepare (actors/run-storage.ts) sends them. Which supplied messages are new to a stored transcript
// is decided by that statement (sql/012_start_in_one_statement.sql), so its rule is pinned here too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { prepareChat, type ChatStorageRequest } from '../../actors/run-storage.ts';
import type { Database } from '../../src/db/types.ts';
import type { InputMessage } from '../../src/domain/schemas.ts';
import { createChat, getChat } from '../../src/store/chats.ts';
import { FIRST_RUN_TOKEN } from '../../src/store/fencing.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { countQueries } from '../helpers/count-queries.ts';
import { fakeDeps } from '../helpers/fake-deps.ts';
import { testDatabases } from '../helpers/db.ts';
import { getLlmCall, listMessages } from '../helpers/store.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const user = (content: string): InputMessage => ({ role: 'user', content });

for (const target of await testDatabases()) {
  describe(`one round trip per persisted start ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    const deps = () => ({ ...fakeDeps(), pool: db.pool });
    const request = (chatId: string, messages: InputMessage[], o: Partial<ChatStorageRequest> = {}): ChatStorageRequest => ({ owner: ADMIN_USER_ID,
      chatId, createChat: false, storeChat: true, callId: randomUUID(), provider: 'provider_c', model: 'sim-c', messages, ...o,
    });
    /** The run's prepare, counted: it must be one query and no transaction. */
    const start = async (req: ChatStorageRequest) => {
      const { value, queries, checkouts } = await countQueries(db.pool, () => prepareChat(req, deps()));
      assert.equal(checkouts, 0, 'a start takes no connection for a transaction');
      assert.equal(queries.length, 1, `a start is one statement, got: ${queries.join(' ;; ')}`);
      return value;
    };
    const transcript = async (chatId: string) => (await listMessages(db.pool, chatId)).map((m) => `${m.role}:${m.content}`);

    it('a new chat: created with its input (no assistant message), its running call and the first token, in one statement', async () => {
      const chatId = randomUUID();
      const req = request(chatId, [user('q1'), { role: 'assistant', content: 'from the client' }, user('q2')], { createChat: true, owner: 'u-new' });
      assert.deepEqual(await start(req), { runToken: FIRST_RUN_TOKEN });
      assert.deepEqual(await transcript(chatId), ['user:q1', 'user:q2']);
      const call = await getLlmCall(db.pool, req.callId!);
      assert.deepEqual([call?.status, call?.chatId, call?.provider, call?.model], ['running', chatId, 'provider_c', 'sim-c']);
      assert.equal((await getChat(db.pool, chatId, 'u-new'))?.id, chatId, 'the chat is its owner’s');
    });

    it('an existing chat: only the new input appended, provider use and updatedAt recorded, its call running, the next token, in one statement', async () => {
      const chat = await createChat(db.pool, { enabledTools: [], messages: [{ role: 'user', content: 'q1' }], owner: 'u-old' });
      await appendMessages(db.pool, chat.id, [{ role: 'assistant', content: 'a1' }], 'u-old');
      const req = request(chat.id, [user('q1'), { role: 'assistant', content: 'a1' }, user('q2')], { owner: 'u-old' });
      assert.deepEqual(await start(req), { runToken: 1 });
      assert.deepEqual(await transcript(chat.id), ['user:q1', 'assistant:a1', 'user:q2']);
      const now = await getChat(db.pool, chat.id, 'u-old');
      assert.deepEqual([now?.initiatedProvider, now?.lastUsedProvider, now?.lastUsedModel], ['provider_c', 'provider_c', 'sim-c']);
      assert.ok(now!.updatedAt > chat.updatedAt, 'updatedAt moved');
      const call = await getLlmCall(db.pool, req.callId!);
      assert.deepEqual([call?.status, call?.chatId], ['running', chat.id]);
      // The next start on the chat takes the next token.
      assert.deepEqual(await start(request(chat.id, [user('q1'), user('q2'), user('q3')], { owner: 'u-old' })), { runToken: 2 });
      assert.deepEqual(await transcript(chat.id), ['user:q1', 'assistant:a1', 'user:q2', 'user:q3']);
    });

    it('another user’s chat or an unknown one: not found, in one statement, nothing written', async () => {
      const chat = await createChat(db.pool, { enabledTools: [], messages: [{ role: 'user', content: 'mine' }], owner: 'u-a' });
      for (const [chatId, owner] of [[chat.id, 'u-b'], [randomUUID(), 'u-a']] as const) {
        const req = request(chatId, [user('intruder')], { owner });
        await assert.rejects(start(req), (err: Error) => err.message === 'chat not found');
        assert.equal(await getLlmCall(db.pool, req.callId!), null, 'no call');
      }
      assert.deepEqual(await transcript(chat.id), ['user:mine']);
      assert.equal((await getChat(db.pool, chat.id, 'u-a'))?.updatedAt, chat.updatedAt, 'the chat untouched');
    });

    it('the new input of a supplied history: matched in order by role and content, skipping what the client leaves out', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'system', content: 'hidden' }, { role: 'user', content: 'q1' }] });
      await appendMessages(db.pool, chat.id, [
        { role: 'tool', content: 'web_search "x"', metadata: { kind: 'tool_call' } },
        { role: 'tool', content: 'plain tool' },
        { role: 'assistant', content: 'a1' },
        { role: 'user', content: 'q2' },
      ], ADMIN_USER_ID);
      const history: InputMessage[] = [
        user('q1'),
        // A tool log is never matched: the same text supplied is new.
        { role: 'tool', content: 'web_search "x"' },
        { role: 'tool', content: 'plain tool' },
        { role: 'assistant', content: 'a1' },
        user('q2'),
        // Already matched once, so a second q1 after q2 is new; and a repeat of the last is new too.
        user('q1'),
        user('q2'),
      ];
      await start(request(chat.id, history));
      assert.deepEqual((await transcript(chat.id)).slice(6), ['tool:web_search "x"', 'user:q1', 'user:q2']);
    });

    it('a supplied history out of the stored order: what comes before the last match again is new', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'q1' }, { role: 'user', content: 'q2' }] });
      await start(request(chat.id, [user('q2'), user('q1'), { role: 'system', content: 'q2' }]));
      assert.deepEqual(await transcript(chat.id), ['user:q1', 'user:q2', 'user:q1', 'system:q2']);
    });
  });
}
