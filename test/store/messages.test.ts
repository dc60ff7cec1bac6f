import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, getChat, getChatDetail } from '../../src/store/chats.ts';
import { appendMessages, type NewMessage } from '../../src/store/messages.ts';
import { testDatabases } from '../helpers/db.ts';
import { listMessages } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';


for (const target of await testDatabases()) {
  describe(`messages store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('appends in order after the existing transcript and bumps the chat', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [], messages: [{ role: 'system', content: 's' }] });
      await clockPast(chat.updatedAt);
      const batch: NewMessage[] = [
        { role: 'user', content: 'q', metadata: { attachments: [{ kind: 'text', id: 'a1', text: 't' }] } },
        { role: 'tool', content: 'out', name: 'fetch_url', metadata: { kind: 'tool_call' } },
        { role: 'assistant', content: 'a' },
      ];
      const stored = await appendMessages(db.pool, chat.id, batch, ADMIN_USER_ID);
      assert.ok(stored);
      assert.deepEqual(
        stored.map(({ role, content, name, metadata }) => ({ role, content, name: name ?? undefined, metadata: metadata ?? undefined })),
        batch.map((m) => ({ ...m, name: m.name ?? undefined, metadata: m.metadata ?? undefined })),
      );
      assert.equal(new Set(stored.map((m) => m.id)).size, 3);
      const more = await appendMessages(db.pool, chat.id, [{ role: 'user', content: 'next' }], ADMIN_USER_ID);
      const transcript = await listMessages(db.pool, chat.id);
      assert.deepEqual(
        transcript.map((m) => m.content),
        ['s', 'q', 'out', 'a', 'next'],
      );
      assert.deepEqual(transcript.slice(1, 4), stored);
      assert.deepEqual(transcript[4], more![0]);
      const after = await getChat(db.pool, chat.id, ADMIN_USER_ID);
      assert.ok(after!.updatedAt > chat.updatedAt);
      assert.equal(after!.updatedAt, transcript[4]!.createdAt);
    });

    it('keeps every concurrent batch contiguous and in its own order', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      await Promise.all(
        Array.from({ length: 10 }, (_, b) =>
          appendMessages(
            db.pool,
            chat.id,
            Array.from({ length: 6 }, (_, i) => ({ role: 'user' as const, content: `${b}:${i}` })), ADMIN_USER_ID,
          ),
        ),
      );
      const contents = (await getChatDetail(db.pool, chat.id, ADMIN_USER_ID))!.messages.map((m) => m.content);
      assert.equal(contents.length, 60);
      for (let start = 0; start < 60; start += 6) {
        const b = contents[start]!.split(':')[0];
        assert.deepEqual(
          contents.slice(start, start + 6),
          Array.from({ length: 6 }, (_, i) => `${b}:${i}`),
        );
      }
    });

    it('returns null and writes nothing for an unknown chat', async () => {
      assert.equal(await appendMessages(db.pool, 'missing', [{ role: 'user', content: 'x' }], ADMIN_USER_ID), null);
      assert.equal(await appendMessages(db.pool, 'missing', [], ADMIN_USER_ID), null);
      const { rowCount } = await db.pool.query('SELECT 1 FROM messages WHERE chat_id = $1', ['missing']);
      assert.equal(rowCount, 0);
      assert.deepEqual(await listMessages(db.pool, 'missing'), []);
    });

    it('accepts an empty batch for a known chat', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      assert.deepEqual(await appendMessages(db.pool, chat.id, [], ADMIN_USER_ID), []);
    });

    it('rejects a role outside the spec and writes none of the batch', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      await assert.rejects(
        appendMessages(db.pool, chat.id, [
          { role: 'user', content: 'fine' },
          { role: 'moderator' as 'user', content: 'nope' },
        ], ADMIN_USER_ID),
      );
      assert.deepEqual(await listMessages(db.pool, chat.id), []);
      assert.equal((await getChat(db.pool, chat.id, ADMIN_USER_ID))!.updatedAt, chat.updatedAt);
    });

    it('stores metadata whose keys hold NUL or a lone surrogate (a model\'s tool-call arguments), repaired', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const args = { query: 'tide pools', '\u0000x': 1, deeper: [{ ['k\ud800']: 'v\u0000' }] };
      const [m] = (await appendMessages(db.pool, chat.id, [{ role: 'tool', content: 'out', name: 'web_search', metadata: { kind: 'tool_call', args } }], ADMIN_USER_ID))!;
      const repaired = { kind: 'tool_call', args: { query: 'tide pools', x: 1, deeper: [{ 'k\ufffd': 'v' }] } };
      assert.deepEqual(m!.metadata, repaired);
      assert.deepEqual((await listMessages(db.pool, chat.id))[0]!.metadata, repaired);
    });

    it('round-trips large content', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, enabledTools: [] });
      const big = 'é'.repeat(3_000_000);
      const [m] = (await appendMessages(db.pool, chat.id, [{ role: 'user', content: big, metadata: { size: big.length } }], ADMIN_USER_ID))!;
      assert.equal(m!.content.length, big.length);
      assert.equal((await listMessages(db.pool, chat.id))[0]!.content, big);
    });
  });
}
