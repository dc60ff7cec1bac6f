import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, getChat, getChatDetail, listChats } from '../../src/store/chats.ts';
import { createSearch, getSearch, getSearchDetail, listSearches } from '../../src/store/searches.ts';
import { starChat, starSearch } from '../../src/store/stars.ts';
import { testDatabases } from '../helpers/db.ts';
import { setStarred } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';


for (const target of await testDatabases()) {
  describe(`stars store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('stars a chat without touching updatedAt or the transcript, and keeps the first starredAt', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'user', content: 'hi' }] });
      await clockPast(chat.updatedAt);
      const starred = await starChat(db.pool, chat.id, true, ADMIN_USER_ID);
      assert.ok(starred);
      assert.equal(starred.starred, true);
      assert.match(starred.starredAt!, /Z$/);
      assert.ok(starred.starredAt! > chat.updatedAt);
      assert.equal(starred.updatedAt, chat.updatedAt);
      assert.deepEqual({ ...starred, starred: false, starredAt: null }, chat);

      await clockPast(starred.starredAt!);
      assert.equal(await setStarred(db.pool, 'chat', chat.id, true), true);
      const again = await getChat(db.pool, chat.id, ADMIN_USER_ID);
      assert.equal(again?.starredAt, starred.starredAt);
      assert.equal(again?.updatedAt, chat.updatedAt);
      const detail = await getChatDetail(db.pool, chat.id, ADMIN_USER_ID);
      assert.deepEqual([detail?.starred, detail?.starredAt, detail?.messages.length], [true, starred.starredAt, 1]);
      assert.equal((await listChats(db.pool, { owner: ADMIN_USER_ID })).find((c) => c.id === chat.id)?.starredAt, starred.starredAt);

      const unstarred = await starChat(db.pool, chat.id, false, ADMIN_USER_ID);
      assert.deepEqual(unstarred, chat);
      assert.deepEqual(await getChat(db.pool, chat.id, ADMIN_USER_ID), chat);
      assert.deepEqual(await starChat(db.pool, chat.id, false, ADMIN_USER_ID), chat); // idempotent
      await clockPast(starred.starredAt!);
      const restarred = await starChat(db.pool, chat.id, true, ADMIN_USER_ID);
      assert.ok(restarred!.starredAt! > starred.starredAt!); // a new membership, a new time
    });

    it('returns the same starredAt to concurrent star requests', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const results = await Promise.all(Array.from({ length: 6 }, () => starChat(db.pool, chat.id, true, ADMIN_USER_ID)));
      const times = new Set(results.map((r) => r?.starredAt));
      assert.equal(times.size, 1);
      assert.ok([...times][0]);
      const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM project_members WHERE item_id = $1', [chat.id]);
      assert.equal(rows[0].n, 1);
    });

    it('stars a search the same way', async () => {
      const s = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'stars' });
      await clockPast(s.updatedAt);
      const starred = await starSearch(db.pool, s.id, true, ADMIN_USER_ID);
      assert.equal(starred?.starred, true);
      assert.equal(starred?.updatedAt, s.updatedAt);
      assert.equal((await getSearch(db.pool, s.id, ADMIN_USER_ID))?.starredAt, starred?.starredAt);
      assert.equal((await getSearchDetail(db.pool, s.id, ADMIN_USER_ID))?.starredAt, starred?.starredAt);
      assert.equal((await listSearches(db.pool, { owner: ADMIN_USER_ID })).find((x) => x.id === s.id)?.starred, true);
      assert.equal(await setStarred(db.pool, 'search', s.id, true), true);
      assert.equal((await getSearch(db.pool, s.id, ADMIN_USER_ID))?.starredAt, starred?.starredAt);
      assert.deepEqual(await starSearch(db.pool, s.id, false, ADMIN_USER_ID), s);
    });

    it('keeps chat and search stars apart and reports unknown items', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      assert.equal(await setStarred(db.pool, 'search', chat.id, true), false);
      assert.equal((await getChat(db.pool, chat.id, ADMIN_USER_ID))?.starred, false);
      assert.equal(await setStarred(db.pool, 'chat', 'nope', true), false);
      assert.equal(await setStarred(db.pool, 'chat', 'nope', false), false);
      assert.equal(await starChat(db.pool, 'nope', true, ADMIN_USER_ID), null);
      assert.equal(await starSearch(db.pool, 'nope', true, ADMIN_USER_ID), null);
      const { rowCount } = await db.pool.query("SELECT 1 FROM project_members WHERE item_id = 'nope'");
      assert.equal(rowCount, 0);
    });
  });
}
