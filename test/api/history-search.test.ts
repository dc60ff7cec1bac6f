// GET /v1/workspace-items?q=… through the real server, simulator and database (embedded always,
// Postgres with TEST_DATABASE_URL): items written by the API's own endpoints and runs are found by
// every word of q, in relevance order, with match.field/snippet; bad q and limit get 400.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, variantTag, startTestServer, type TestServer } from '../helpers/server.ts';
import { clockPast } from '../helpers/wait.ts';

const search = (q: string, extra = '') => `/v1/workspace-items?q=${encodeURIComponent(q)}${extra}`;

for (const db of apiDatabases()) {
  describe(`history search API ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db, actorThreads: 1 });
    });
    after(() => t.close());

    const find = async (q: string, extra = '') => {
      const r = await t.call('GET', search(q, extra));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.items as any[];
    };
    const ids = async (q: string, extra = '') => (await find(q, extra)).map((i) => i.id);
    const newChat = async (body: Record<string, unknown>) => (await t.call('POST', '/v1/chats', body)).body.chat;
    const newSearch = async (query: string) => (await t.call('POST', '/v1/searches', { query })).body.search;

    it('needs every word, case-insensitively, and takes the last as a prefix', async () => {
      const both = await newChat({ messages: [{ role: 'user', content: 'Booking the Lighthouse tour in Reykjavik' }] });
      await newChat({ messages: [{ role: 'user', content: 'lighthouse keepers' }] });
      assert.deepEqual(await ids('LIGHTHOUSE reykjavik'), [both.id]);
      assert.deepEqual(await ids('lighthouse reykj'), [both.id]);
      assert.deepEqual(await ids('lighth reykjavik'), [], 'a word before the last must be whole');
      assert.equal((await ids('lighthouse')).length, 2);
    });

    it('says which field matched, with the field around the first hit', async () => {
      const titled = await newChat({ title: 'Sourdough starter schedule' });
      assert.deepEqual((await find('sourdough')).map((i) => [i.id, i.type, i.match]), [
        [titled.id, 'chat', { field: 'title', snippet: 'Sourdough starter schedule' }],
      ]);

      // The user's message carries the directive with the reply escaped, so only the assistant's holds the word.
      const chat = await newChat({});
      const r = await t.call('POST', '/v1/chat-completions', {
        chatId: chat.id,
        provider: 'provider_a',
        model: 'sim-model',
        messages: [{ role: 'user', content: 'tell me\nSIM {"reply":"The t\\u0061rdigrade survives vacuum."}' }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const [answered] = await find('tardigrade');
      assert.equal(answered.id, chat.id);
      assert.deepEqual(answered.match, { field: 'message', snippet: 'The tardigrade survives vacuum.' });

      const queried = await newSearch('meteor shower calendar');
      assert.deepEqual((await find('meteor')).map((i) => [i.id, i.type, i.match]), [
        [queried.id, 'search', { field: 'query', snippet: 'meteor shower calendar' }],
      ]);
      const run = await t.call('POST', `/v1/searches/${queried.id}/run`, {});
      assert.equal(run.status, 200, JSON.stringify(run.body));
      const answerText: string = run.body.search.answerText;
      assert.match(answerText, /^Simulated answer to: meteor/);
      const [byAnswer] = await find('simulated answer meteor');
      assert.equal(byAnswer.id, queried.id);
      assert.equal(byAnswer.match.field, 'answer');
      assert.ok(answerText.startsWith(byAnswer.match.snippet.slice(0, 40)) && answerText.includes(byAnswer.match.snippet));
    });

    it('puts the most relevant first, ties by updatedAt descending, and honours limit', async () => {
      const inMessage = await newChat({ messages: [{ role: 'user', content: 'somewhere in a long message the flamingo shows up among other words' }] });
      const inTitle = await newChat({ title: 'Flamingo' });
      const older = await newSearch('flamingo colour');
      await clockPast(older.updatedAt); // distinct updatedAt: the tie is broken by it
      const newer = await newSearch('flamingo colour');
      assert.deepEqual(await ids('flamingo'), [inTitle.id, newer.id, older.id, inMessage.id]);
      assert.deepEqual(await ids('flamingo', '&limit=1'), [inTitle.id]);
    });

    it('never returns a deleted item, and finds a message the moment it is stored', async () => {
      const chat = await newChat({ messages: [{ role: 'user', content: 'the iguana diet' }] });
      const s = await newSearch('iguana lifespan');
      assert.equal((await ids('iguana')).length, 2);
      assert.equal((await t.call('DELETE', `/v1/chats/${chat.id}`)).status, 200);
      assert.equal((await t.call('DELETE', `/v1/searches/${s.id}`)).status, 200);
      assert.deepEqual(await ids('iguana'), []);

      const later = await newChat({ title: 'later' });
      const added = await t.call('POST', `/v1/chats/${later.id}/messages`, { role: 'user', content: 'a note about the mongoose' });
      assert.equal(added.status, 200, JSON.stringify(added.body));
      assert.deepEqual(await ids('mongoose'), [later.id]);
    });

    it('answers 200 with nothing for a q without words, whatever operators it holds', async () => {
      for (const q of ['!', '&|!():*<->', "'", '\\', '"']) assert.deepEqual(await find(q), [], `q=${q}`);
    });

    it('without q is the plain listing, items without match', async () => {
      const r = await t.call('GET', '/v1/workspace-items?limit=1');
      assert.equal(r.status, 200);
      assert.ok(r.body.items.length > 1, 'limit is only read with q');
      assert.ok(r.body.items.every((i: any) => !('match' in i)));
    });

    it('refuses a bad q or limit with 400 and a message saying what is wrong', async () => {
      const cases: [string, RegExp][] = [
        ['/v1/workspace-items?q=', /^q must be 1–200 characters after trimming/],
        ['/v1/workspace-items?q=%20%20%20', /^q must be 1–200 characters after trimming/],
        [search('x'.repeat(201)), /^q must be 1–200 characters after trimming \(got 201\)/],
        [search('a\0b'), /^q contains U\+0000/],
        [search('ok', '&limit=0'), /^limit must be a whole number from 1 to 200/],
        [search('ok', '&limit=201'), /^limit must be a whole number from 1 to 200/],
        [search('ok', '&limit=abc'), /^limit must be/],
        [search('ok', '&limit=1.5'), /^limit must be/],
        [search('ok', '&limit=-1'), /^limit must be/],
        [search('ok', '&limit='), /^limit must be/],
      ];
      for (const [path, message] of cases) {
        const r = await t.call('GET', path);
        assert.equal(r.status, 400, path);
        assert.match(r.body.message, message, path);
      }
      // The bounds themselves are fine; 200 emoji are 200 characters (400 UTF-16 units).
      assert.equal((await t.call('GET', search(` ${'x'.repeat(200)} `, '&limit=200'))).status, 200);
      assert.equal((await t.call('GET', search('🦜'.repeat(200), '&limit=1'))).status, 200);
    });

    it('finds the answer of a streamed run once its stream has ended', async () => {
      const r = await t.stream('/v1/chat-completions/stream', {
        provider: 'provider_c',
        model: 'sim-model',
        messages: [{ role: 'user', content: 'q\nSIM {"reply":"Streamed words about the \\u006fcelot"}' }],
      });
      assert.equal(r.status, 200);
      const chatId = r.events[0]?.data.chatId;
      assert.ok(chatId, JSON.stringify(r.events));
      const items = await find('streamed ocelot');
      assert.deepEqual(items.map((i) => [i.id, i.match]), [[chatId, { field: 'message', snippet: 'Streamed words about the ocelot' }]]);
    });
  });
}
