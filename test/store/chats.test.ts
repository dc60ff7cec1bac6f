import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import {
  createChat,
  deleteChat,
  getChat,
  getChatDetail,
  continueChat,
  listChats,
  setChatTitleIfEmpty,
  updateChat,
} from '../../src/store/chats.ts';
import { testDatabases } from '../helpers/db.ts';
import { getLlmCall, listMessages, setStarred } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for (const target of await testDatabases()) {
  describe(`chats store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('creates a chat with provider/model, trimmed settings and the spec shape', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID,
        title: '  Hello  ',
        provider: 'provider_a',
        model: 'm-1',
        additionalSystemPrompt: '  be brief ',
        enabledTools: ['web_search', 'fetch_url'],
      });
      assert.match(chat.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual(
        { ...chat, id: '', createdAt: '', updatedAt: '' },
        {
          id: '',
          title: 'Hello',
          createdAt: '',
          updatedAt: '',
          starred: false,
          starredAt: null,
          initiatedProvider: 'provider_a',
          initiatedModel: 'm-1',
          lastUsedProvider: 'provider_a',
          lastUsedModel: 'm-1',
          additionalSystemPrompt: 'be brief',
          enabledTools: ['web_search', 'fetch_url'],
        },
      );
      assert.match(chat.createdAt, ISO_MS);
      assert.equal(chat.createdAt, chat.updatedAt);
      assert.deepEqual(await getChat(db.pool, chat.id, ADMIN_USER_ID), chat);
    });

    it('stores a blank prompt and title as null, takes a given id, refuses provider without model', async () => {
      const id = crypto.randomUUID();
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, id, title: '   ', additionalSystemPrompt: ' \n ', enabledTools: [] });
      assert.equal(chat.id, id);
      assert.equal(chat.title, null);
      assert.equal(chat.additionalSystemPrompt, null);
      assert.equal(chat.initiatedProvider, null);
      assert.deepEqual(chat.enabledTools, []);
      await assert.rejects(createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_b', enabledTools: [] }), /together/);
    });

    it('stores the initial transcript in order with names and metadata', async () => {
      const messages = Array.from({ length: 40 }, (_, i) => ({
        role: (['system', 'user', 'assistant', 'tool'] as const)[i % 4],
        content: `m${i}`,
        name: i % 4 === 3 ? 'web_search' : null,
        metadata: i % 2 ? { kind: 'tool_call', n: i, nested: { a: [1, 'x'] } } : null,
      }));
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages });
      const detail = await getChatDetail(db.pool, chat.id, ADMIN_USER_ID);
      assert.ok(detail);
      assert.deepEqual(
        detail.messages.map(({ role, content, name, metadata }) => ({ role, content, name, metadata })),
        messages,
      );
      // All written in one statement: one timestamp, so only seq can give this order.
      assert.equal(new Set(detail.messages.map((m) => m.createdAt)).size, 1);
      assert.match(detail.messages[0]!.createdAt, ISO_MS);
      assert.deepEqual(await listMessages(db.pool, chat.id), detail.messages);
      const { messages: _, lastRun, ...summary } = detail;
      assert.deepEqual(summary, chat);
      assert.equal(lastRun, null, 'a chat without calls has no last run');
    });

    it('writes nothing when one initial message is invalid', async () => {
      const before = (await listChats(db.pool, { owner: ADMIN_USER_ID })).length;
      await assert.rejects(
        createChat(db.pool, { owner: ADMIN_USER_ID,
          title: 'half',
          enabledTools: [],
          messages: [
            { role: 'user', content: 'ok' },
            { role: 'robot' as 'user', content: 'bad role' },
          ],
        }),
      );
      assert.equal((await listChats(db.pool, { owner: ADMIN_USER_ID })).length, before);
    });

    it('drops U+0000 that Postgres text cannot hold', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID,
        title: 'a\0b',
        enabledTools: [],
        messages: [{ role: 'tool', content: 'x\0y', metadata: { out: 'p\0q' } }],
      });
      const detail = await getChatDetail(db.pool, chat.id, ADMIN_USER_ID);
      assert.equal(detail?.title, 'ab');
      assert.equal(detail?.messages[0]?.content, 'xy');
      assert.deepEqual(detail?.messages[0]?.metadata, { out: 'pq' });
    });

    it('returns null for unknown chats', async () => {
      assert.equal(await getChat(db.pool, 'nope', ADMIN_USER_ID), null);
      assert.equal(await getChatDetail(db.pool, 'nope', ADMIN_USER_ID), null);
      assert.equal(await updateChat(db.pool, 'nope', { title: 'x' }, ADMIN_USER_ID), null);
      assert.equal(await continueChat(db.pool, { owner: ADMIN_USER_ID, chatId: 'nope', provider: 'provider_a', model: 'm', messages: [], call: null }), false);
      assert.equal(await setChatTitleIfEmpty(db.pool, 'nope', 'x', ADMIN_USER_ID), null);
      assert.equal(await deleteChat(db.pool, 'nope', ADMIN_USER_ID), false);
    });

    it('updates only the given settings and bumps updatedAt', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 't', additionalSystemPrompt: 'p', enabledTools: ['a', 'b'] });
      await clockPast(chat.updatedAt);
      const renamed = await updateChat(db.pool, chat.id, { title: '  New  ' }, ADMIN_USER_ID);
      assert.ok(renamed);
      assert.equal(renamed.title, 'New');
      assert.equal(renamed.additionalSystemPrompt, 'p');
      assert.deepEqual(renamed.enabledTools, ['a', 'b']);
      assert.ok(renamed.updatedAt > chat.updatedAt);
      assert.equal(renamed.createdAt, chat.createdAt);

      const cleared = await updateChat(db.pool, chat.id, { additionalSystemPrompt: '   ', enabledTools: [] }, ADMIN_USER_ID);
      assert.equal(cleared?.additionalSystemPrompt, null);
      assert.deepEqual(cleared?.enabledTools, []);
      assert.equal(cleared?.title, 'New');
      const set = await updateChat(db.pool, chat.id, { additionalSystemPrompt: ' q ' }, ADMIN_USER_ID);
      assert.equal(set?.additionalSystemPrompt, 'q');
      assert.equal((await updateChat(db.pool, chat.id, { additionalSystemPrompt: null }, ADMIN_USER_ID))?.additionalSystemPrompt, null);
      await assert.rejects(updateChat(db.pool, chat.id, { title: '  ' }, ADMIN_USER_ID), /blank/);
    });

    it('lists by updatedAt, newest first, with a limit', async () => {
      const a = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'a', enabledTools: [] });
      await clockPast(a.updatedAt);
      const b = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'b', enabledTools: [] });
      await clockPast(b.updatedAt);
      await updateChat(db.pool, a.id, { title: 'a2' }, ADMIN_USER_ID);
      const top = await listChats(db.pool, { owner: ADMIN_USER_ID, limit: 2 });
      assert.deepEqual(top.map((c) => c.id), [a.id, b.id]);
      const all = await listChats(db.pool, { owner: ADMIN_USER_ID });
      for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.updatedAt >= all[i]!.updatedAt);
    });

    it('continues a chat in one statement: provider use (initiated once, lastUsed every time), new input, the call', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      await clockPast(chat.updatedAt);
      const call = { id: randomUUID(), instanceId: 'host:1' };
      assert.equal(await continueChat(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_b', model: 'claude-x', messages: [{ role: 'user', content: 'q1' }], call }), true);
      const first = await getChat(db.pool, chat.id, ADMIN_USER_ID);
      assert.deepEqual([first?.initiatedProvider, first?.initiatedModel, first?.lastUsedModel], ['provider_b', 'claude-x', 'claude-x']);
      assert.ok(first!.updatedAt > chat.updatedAt);
      const started = await getLlmCall(db.pool, call.id);
      assert.deepEqual([started?.status, started?.chatId, started?.provider, started?.model], ['running', chat.id, 'provider_b', 'claude-x']);
      // No new input and no call (an unstored call): only the provider use.
      assert.equal(await continueChat(db.pool, { owner: ADMIN_USER_ID, chatId: chat.id, provider: 'provider_c', model: 'c-1', messages: [], call: null }), true);
      const second = await getChat(db.pool, chat.id, ADMIN_USER_ID);
      assert.deepEqual(
        [second?.initiatedProvider, second?.initiatedModel, second?.lastUsedProvider, second?.lastUsedModel],
        ['provider_b', 'claude-x', 'provider_c', 'c-1'],
      );
      assert.deepEqual((await listMessages(db.pool, chat.id)).map((m) => m.content), ['q1']);
    });

    it('continues no unknown chat and writes nothing for it', async () => {
      const call = { id: randomUUID(), instanceId: null };
      const missing = randomUUID();
      assert.equal(await continueChat(db.pool, { owner: ADMIN_USER_ID, chatId: missing, provider: 'provider_c', model: 'c', messages: [{ role: 'user', content: 'q' }], call }), false);
      assert.equal(await getLlmCall(db.pool, call.id), null);
      assert.deepEqual(await listMessages(db.pool, missing), []);
    });

    it('creates a chat with its input and its running call in one statement', async () => {
      const call = { id: randomUUID(), instanceId: 'host:2' };
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'c-2', enabledTools: [], messages: [{ role: 'user', content: 'hi' }], call });
      const started = await getLlmCall(db.pool, call.id);
      assert.deepEqual([started?.status, started?.chatId, started?.provider, started?.model], ['running', chat.id, 'provider_c', 'c-2']);
      assert.deepEqual((await listMessages(db.pool, chat.id)).map((m) => m.content), ['hi']);
      await assert.rejects(createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], call: { id: randomUUID(), instanceId: null } }), /needs provider and model/);
      // A clashing call id fails the whole statement: no chat without its call.
      const again = randomUUID();
      await assert.rejects(createChat(db.pool, { owner: ADMIN_USER_ID, id: again, provider: 'provider_c', model: 'c-2', enabledTools: [], call }));
      assert.equal(await getChat(db.pool, again, ADMIN_USER_ID), null);
    });

    it('sets a suggested title only while the title is empty, atomically', async () => {
      // Repeated: a loser that waited for the winner's row lock is the case that once read a stale title.
      for (let round = 0; round < 20; round++) {
        const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
        const results = await Promise.all(['One', 'Two', 'Three'].map((t) => setChatTitleIfEmpty(db.pool, chat.id, t, ADMIN_USER_ID)));
        const winner = (await getChat(db.pool, chat.id, ADMIN_USER_ID))!.title;
        assert.ok(['One', 'Two', 'Three'].includes(winner!));
        // The losers get the chat back with the winner's title, never their own nor the old empty one.
        for (const r of results) assert.equal(r?.title, winner);
      }
      const titled = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'Mine', enabledTools: [] });
      const kept = await setChatTitleIfEmpty(db.pool, titled.id, 'Suggested', ADMIN_USER_ID);
      assert.deepEqual(kept, titled);
      await setStarred(db.pool, 'chat', titled.id, true);
      assert.equal((await setChatTitleIfEmpty(db.pool, titled.id, 'x', ADMIN_USER_ID))?.starred, true);
    });

    it('deletes the chat, its messages and its star', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'hi' }] });
      await setStarred(db.pool, 'chat', chat.id, true);
      assert.equal(await deleteChat(db.pool, chat.id, ADMIN_USER_ID), true);
      assert.equal(await getChat(db.pool, chat.id, ADMIN_USER_ID), null);
      assert.deepEqual(await listMessages(db.pool, chat.id), []);
      const members = await db.pool.query('SELECT 1 FROM project_members WHERE item_id = $1', [chat.id]);
      assert.equal(members.rowCount, 0);
      assert.equal(await deleteChat(db.pool, chat.id, ADMIN_USER_ID), false);
    });
  });
}
