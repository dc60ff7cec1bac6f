// The stored-resource endpoints of chats, searches (CRUD), stars and the workspace listing, on
// each database the suite has (embedded always, Postgres with TEST_DATABASE_URL).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, variantTag, startTestServer, type TestServer } from '../helpers/server.ts';
import { clockPast } from '../helpers/wait.ts';

const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

for (const db of apiDatabases()) {
  describe(`chats and searches ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db });
    });
    after(() => t.close());

    it('creates a chat with every optional field (rules 1–5)', async () => {
      const r = await t.call('POST', '/v1/chats', {
        title: '  Trip plans ',
        provider: 'provider_c',
        model: 'sim-c-large',
        additionalSystemPrompt: '  Be brief.  ',
        enabledTools: ['fetch_url', 'not_a_tool'],
        messages: [
          { role: 'system', content: 'hidden' },
          { role: 'user', content: 'look', attachments: [{ kind: 'image', id: 'img1', filename: 'a.png', mimeType: 'image/png', sizeBytes: 1, dataUrl: PNG }] },
        ],
      });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('cache-control'), 'no-store', "one caller's own data: no cache keeps it");
      const chat = r.body.chat;
      assert.equal(chat.title, 'Trip plans');
      assert.equal(chat.initiatedProvider, 'provider_c');
      assert.equal(chat.initiatedModel, 'sim-c-large');
      assert.equal(chat.lastUsedProvider, 'provider_c');
      assert.equal(chat.lastUsedModel, 'sim-c-large');
      assert.equal(chat.additionalSystemPrompt, 'Be brief.');
      assert.deepEqual(chat.enabledTools, ['fetch_url']);
      assert.equal(chat.starred, false);
      assert.equal(chat.starredAt, null);
      assert.match(chat.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

      const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.deepEqual(detail.messages.map((m: any) => [m.role, m.content]), [['system', 'hidden'], ['user', 'look']]);
      const att = detail.messages[1].metadata.attachments[0];
      assert.equal(att.id, 'img1');
      assert.equal(att.mimeType, 'image/png');
      assert.equal(att.sizeBytes, 70, 'sizeBytes is measured from the data');
      assert.equal(detail.messages[0].metadata, null);
    });

    it('defaults: no provider, blank prompt stored as null, all tools enabled', async () => {
      const chat = (await t.call('POST', '/v1/chats', { additionalSystemPrompt: '   ' })).body.chat;
      assert.equal(chat.title, null);
      assert.equal(chat.initiatedProvider, null);
      assert.equal(chat.lastUsedModel, null);
      assert.equal(chat.additionalSystemPrompt, null);
      assert.deepEqual(chat.enabledTools, ['web_search', 'fetch_url']);
      const empty = (await t.call('POST', '/v1/chats')).body.chat;
      assert.equal(empty.title, null);
    });

    it('patches title, prompt and tools; omitted settings unchanged; updatedAt moves (rules 1–6)', async () => {
      const chat = (await t.call('POST', '/v1/chats', { title: 'a', additionalSystemPrompt: 'keep', enabledTools: ['web_search'] })).body.chat;
      await clockPast(chat.updatedAt);
      const p1 = await t.call('PATCH', `/v1/chats/${chat.id}`, { title: '  New title  ' });
      assert.equal(p1.status, 200);
      assert.equal(p1.body.chat.title, 'New title');
      assert.equal(p1.body.chat.additionalSystemPrompt, 'keep');
      assert.deepEqual(p1.body.chat.enabledTools, ['web_search']);
      assert.ok(p1.body.chat.updatedAt > chat.updatedAt);

      const p2 = await t.call('PATCH', `/v1/chats/${chat.id}`, { additionalSystemPrompt: '  ', enabledTools: [] });
      assert.equal(p2.body.chat.additionalSystemPrompt, null);
      assert.deepEqual(p2.body.chat.enabledTools, []);
      assert.equal(p2.body.chat.title, 'New title');

      const p3 = await t.call('PATCH', `/v1/chats/${chat.id}`, { additionalSystemPrompt: 'again' });
      assert.equal(p3.body.chat.additionalSystemPrompt, 'again');
      const p4 = await t.call('PATCH', `/v1/chats/${chat.id}`, { additionalSystemPrompt: null });
      assert.equal(p4.body.chat.additionalSystemPrompt, null);

      const blank = await t.call('PATCH', `/v1/chats/${chat.id}`, { title: '   ' });
      assert.equal(blank.status, 400);
      assert.match(blank.body.message, /title/);
      assert.equal((await t.call('GET', `/v1/chats/${chat.id}`)).body.chat.title, 'New title', 'a rejected patch changes nothing');

      const missing = await t.call('PATCH', '/v1/chats/no-such-chat', { title: 'x' });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.message, 'chat not found');
    });

    it('stars and unstars without touching updatedAt; starredAt is the membership time', async () => {
      const chat = (await t.call('POST', '/v1/chats', { title: 's' })).body.chat;
      const on = (await t.call('PATCH', `/v1/chats/${chat.id}/star`, { starred: true })).body.chat;
      assert.equal(on.starred, true);
      assert.ok(on.starredAt);
      assert.equal(on.updatedAt, chat.updatedAt);
      const again = (await t.call('PATCH', `/v1/chats/${chat.id}/star`, { starred: true })).body.chat;
      assert.equal(again.starredAt, on.starredAt, 'starring twice keeps the first membership');
      const off = (await t.call('PATCH', `/v1/chats/${chat.id}/star`, { starred: false })).body.chat;
      assert.equal(off.starred, false);
      assert.equal(off.starredAt, null);
      assert.equal(off.updatedAt, chat.updatedAt);
      const bad = await t.call('PATCH', `/v1/chats/${chat.id}/star`, { starred: 'yes' });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /starred/);
      const missing = await t.call('PATCH', '/v1/chats/nope/star', { starred: true });
      assert.deepEqual([missing.status, missing.body.message], [404, 'chat not found']);
    });

    it('deletes a chat; a second delete is 404', async () => {
      const chat = (await t.call('POST', '/v1/chats', { title: 'd', messages: [{ role: 'user', content: 'x' }] })).body.chat;
      await t.call('PATCH', `/v1/chats/${chat.id}/star`, { starred: true });
      const del = await t.call('DELETE', `/v1/chats/${chat.id}`);
      assert.deepEqual([del.status, del.body], [200, { deleted: true }]);
      assert.equal((await t.call('GET', `/v1/chats/${chat.id}`)).status, 404);
      const again = await t.call('DELETE', `/v1/chats/${chat.id}`);
      assert.deepEqual([again.status, again.body.message], [404, 'chat not found']);
      const items = (await t.call('GET', '/v1/workspace-items')).body.items;
      assert.ok(!items.some((i: any) => i.id === chat.id));
    });

    it('appends messages, merging attachments into metadata.attachments', async () => {
      const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
      const r = await t.call('POST', `/v1/chats/${chat.id}/messages`, {
        role: 'user',
        content: 'see file',
        name: 'ann',
        metadata: { source: 'upload', attachments: [{ kind: 'text', id: 'old', filename: 'o.txt', mimeType: 'text/plain', sizeBytes: 1, text: 'o', truncated: false }] },
        attachments: [{ kind: 'text', id: 't1', filename: 'n.txt', mimeType: 'text/plain', sizeBytes: 3, text: 'new' }],
      });
      assert.equal(r.status, 200);
      const m = r.body.message;
      assert.equal(m.role, 'user');
      assert.equal(m.name, 'ann');
      assert.equal(m.metadata.source, 'upload');
      assert.deepEqual(m.metadata.attachments.map((a: any) => a.id), ['old', 't1']);
      assert.equal(m.metadata.attachments[1].truncated, false);
      const tool = await t.call('POST', `/v1/chats/${chat.id}/messages`, { role: 'tool', content: 'x', attachments: [{ kind: 'text', filename: 'a', mimeType: 'text/plain', text: 'a' }] });
      assert.equal(tool.status, 400);
      assert.match(tool.body.message, /tool messages cannot carry attachments/);
      const missing = await t.call('POST', '/v1/chats/nope/messages', { role: 'user', content: 'x' });
      assert.deepEqual([missing.status, missing.body.message], [404, 'chat not found']);
      const noteAttachment = { kind: 'text', filename: 'a', mimeType: 'text/plain', text: 'a' };
      const notArray = await t.call('POST', `/v1/chats/${chat.id}/messages`, { role: 'user', content: 'x', metadata: { attachments: 'see above' }, attachments: [noteAttachment] });
      assert.deepEqual([notArray.status, notArray.body.message], [400, 'invalid request body: metadata.attachments: must be an array to merge attachments into']);
      const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.equal(detail.messages.length, 1, 'rejected messages are not stored');
      const nothingToMerge = await t.call('POST', `/v1/chats/${chat.id}/messages`, { role: 'user', content: 'x', metadata: { attachments: 'see above' } });
      assert.deepEqual([nothingToMerge.status, nothingToMerge.body.message?.metadata], [200, { attachments: 'see above' }], 'with no attachments to merge, metadata is stored as sent');
    });

    it('lists chats and searches, and the workspace by updatedAt descending', async () => {
      const c = (await t.call('POST', '/v1/chats', { title: 'ws chat' })).body.chat;
      const s = (await t.call('POST', '/v1/searches', { query: 'ws query' })).body.search;
      const items = (await t.call('GET', '/v1/workspace-items')).body.items;
      assert.equal(items[0].id, s.id);
      assert.equal(items[0].type, 'search');
      assert.equal(items[1].id, c.id);
      assert.equal(items[1].type, 'chat');
      assert.ok('enabledTools' in items[1] && !('messages' in items[1]));
      for (let i = 1; i < items.length; i++) assert.ok(items[i - 1].updatedAt >= items[i].updatedAt);
      assert.ok((await t.call('GET', '/v1/chats')).body.chats.some((x: any) => x.id === c.id));
      assert.ok((await t.call('GET', '/v1/searches')).body.searches.some((x: any) => x.id === s.id));
    });

    it('creates, reuses by normalized query, stars and deletes searches', async () => {
      const a = await t.call('POST', '/v1/searches', { title: 'T', query: '  Rust Async ' });
      assert.equal(a.status, 200);
      assert.deepEqual([a.body.reused, a.body.cacheHit], [false, false]);
      assert.equal(a.body.search.query, 'Rust Async');
      const fresh = await t.call('POST', '/v1/searches', { query: 'rust async' });
      assert.equal(fresh.body.reused, false, 'reuseByQuery defaults to false');
      const reused = await t.call('POST', '/v1/searches', { query: 'RUST ASYNC', reuseByQuery: true });
      assert.equal(reused.body.reused, true);
      assert.equal(reused.body.search.id, fresh.body.search.id, 'the most recently updated match');
      assert.equal(reused.body.cacheHit, false, 'never run: no stored results');

      const detail = (await t.call('GET', `/v1/searches/${a.body.search.id}`)).body.search;
      assert.equal(detail.title, 'T');
      assert.deepEqual(detail.results, []);
      assert.deepEqual(detail.answerCitations, []);

      const star = await t.call('PATCH', `/v1/searches/${a.body.search.id}/star`, { starred: true });
      assert.equal(star.body.search.starred, true);
      assert.equal(star.body.search.updatedAt, a.body.search.updatedAt);
      for (const [method, path, body] of [
        ['DELETE', '/v1/searches/nope', undefined],
        ['PATCH', '/v1/searches/nope/star', { starred: true }],
      ] as const) {
        const r = await t.call(method, path, body);
        assert.deepEqual([r.status, r.body.message], [404, 'search not found']);
      }
      assert.deepEqual((await t.call('DELETE', `/v1/searches/${a.body.search.id}`)).body, { deleted: true });
      assert.equal((await t.call('GET', `/v1/searches/${a.body.search.id}`)).status, 404);
    });
  });
}
