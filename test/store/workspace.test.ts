import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, updateChat } from '../../src/store/chats.ts';
import { createSearch, saveSearchRun } from '../../src/store/searches.ts';
import { listWorkspaceItems } from '../../src/store/workspace.ts';
import { testDatabases } from '../helpers/db.ts';
import { setStarred } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';


for (const target of await testDatabases()) {
  describe(`workspace store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open(); // a database of its own: these tests count every item
    });
    after(async () => {
      await db?.close();
    });

    it('is empty on a new database', async () => {
      assert.deepEqual(await listWorkspaceItems(db.pool, ADMIN_USER_ID), []);
    });

    it('merges chats and searches by updatedAt with their own fields', async () => {
      const a = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'A', provider: 'provider_a', model: 'm', enabledTools: ['web_search'] });
      await clockPast(a.updatedAt);
      const b = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'B' });
      await clockPast(b.updatedAt);
      const c = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'C', enabledTools: [] });
      await clockPast(c.updatedAt);
      await updateChat(db.pool, a.id, { title: 'A2' }, ADMIN_USER_ID);
      await setStarred(db.pool, 'search', b.id, true);

      const items = await listWorkspaceItems(db.pool, ADMIN_USER_ID);
      assert.deepEqual(items.map((i) => [i.type, i.id]), [['chat', a.id], ['chat', c.id], ['search', b.id]]);
      const [first, , search] = items;
      assert.equal(first?.type, 'chat');
      if (first?.type === 'chat') {
        assert.deepEqual([first.title, first.initiatedProvider, first.enabledTools, first.starred], ['A2', 'provider_a', ['web_search'], false]);
      }
      assert.deepEqual(Object.keys(search!).sort(), ['createdAt', 'id', 'query', 'starred', 'starredAt', 'title', 'type', 'updatedAt']);
      if (search?.type === 'search') {
        assert.deepEqual([search.query, search.starred, search.updatedAt], ['B', true, b.updatedAt]);
      }
    });

    it('caps at 100 chats and 100 searches, keeping the newest, sorted by updatedAt', async () => {
      // Already here: chats A and C, search B. Add 4 old chats and 3 old searches, then (strictly later,
      // so no timestamp tie decides the cut) 99 chats and 99 searches, then one more of each.
      const oldChats: string[] = [];
      const oldSearches: string[] = [];
      for (let i = 0; i < 4; i++) oldChats.push((await createChat(db.pool, { owner: ADMIN_USER_ID, title: `old${i}`, enabledTools: [] })).id);
      let last = '';
      for (let i = 0; i < 3; i++) {
        const old = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: `old${i}` });
        oldSearches.push(old.id);
        last = old.updatedAt;
      }
      await clockPast(last);
      const chats: string[] = [];
      const searches: string[] = [];
      for (let i = 0; i < 99; i++) chats.push((await createChat(db.pool, { owner: ADMIN_USER_ID, title: `c${i}`, enabledTools: [] })).id);
      for (let i = 0; i < 99; i++) {
        const s = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: `s${i}` });
        searches.push(s.id);
        last = s.updatedAt;
      }
      await clockPast(last);
      const freshChat = (await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'fresh', enabledTools: [] })).id;
      const fresh = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'fresh' });
      const freshSearch = fresh.id;
      await clockPast(fresh.updatedAt);
      // A run bumps updatedAt: the search just created goes before the chat just created.
      await saveSearchRun(db.pool, freshSearch, {
        query: 'fresh', requestId: null, latencyMs: 1, error: null, answerText: 'x', answerRequestId: null,
        answerCitations: [], answerError: null, results: [],
      }, ADMIN_USER_ID);

      const items = await listWorkspaceItems(db.pool, ADMIN_USER_ID);
      assert.equal(items.length, 200);
      assert.equal(items.filter((i) => i.type === 'chat').length, 100);
      assert.equal(items.filter((i) => i.type === 'search').length, 100);
      for (let i = 1; i < items.length; i++) assert.ok(items[i - 1]!.updatedAt >= items[i]!.updatedAt, `sorted at ${i}`);
      assert.deepEqual(items.slice(0, 2).map((i) => i.id), [freshSearch, freshChat]);

      const ids = new Set(items.map((i) => i.id));
      for (const id of [...chats, ...searches, freshChat, freshSearch]) assert.ok(ids.has(id), `kept ${id}`);
      for (const id of [...oldChats, ...oldSearches]) assert.ok(!ids.has(id), `dropped ${id}`);
    });
  });
}
