// Issue 16's text findings, each reproduced: U+0000 and lone UTF-16 surrogates anywhere in a body are
// a 400 naming the field, before anything is stored or any provider is asked; ids that cannot exist
// are their spec 404; the service's own truncation never splits a surrogate pair; deep metadata is a
// 400 with the documented limit, never a stack overflow; text from upstreams (a model's tool-call arguments)
// is stored repaired. On embedded PGlite and, when set, real Postgres.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_JSON_DEPTH } from '../../src/http/json-check.ts';
import { apiDatabases, sim, variantTag, startTestServer, type TestServer } from '../helpers/server.ts';

const NUL = '\u0000';
const LONE = '\ud800';
const user = (extra: Record<string, unknown> = {}) => ({ role: 'user', content: 'hi', ...extra });
const textAttachment = (over: Record<string, unknown> = {}) => ({ kind: 'text', filename: 'a.txt', mimeType: 'text/plain', text: 'x', ...over });
const completion = (over: Record<string, unknown> = {}) => ({ provider: 'provider_c', model: 'm', messages: [user()], ...over });

/** A message body whose metadata nests `depth` objects, written by hand: JSON.stringify itself overflows on deep values. */
function deepMetadataBody(depth: number): string {
  return `{"role":"user","content":"hi","metadata":${'{"a":'.repeat(depth - 1)}{"leaf":1}${'}'.repeat(depth - 1)}}`;
}

function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

for (const db of apiDatabases()) {
  describe(`bad text never reaches the database ${variantTag(db)}`, () => {
    let t: TestServer;
    let chatId: string;
    let searchId: string;
    let stored: () => Promise<number>;
    before(async () => {
      t = await startTestServer({ db });
      chatId = (await t.call('POST', '/v1/chats', {})).body.chat.id;
      searchId = (await t.call('POST', '/v1/searches', { query: 'q' })).body.search.id;
      stored = async () => {
        const r = await t.server.ctx.pool.query(
          'SELECT (SELECT count(*) FROM chats) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM llm_calls) + (SELECT count(*) FROM searches) AS n',
        );
        return Number(r.rows[0].n);
      };
    });
    after(() => t.close());

    it('ids that cannot exist answer their spec 404, whatever the method', async () => {
      for (const bad of ['%00', 'x%00y', 'not-a-uuid', '00000000-0000-0000-0000-00000000000g', 'a'.repeat(300)]) {
        for (const [method, path, body, message] of [
          ['GET', `/v1/chats/${bad}`, undefined, 'chat not found'],
          ['PATCH', `/v1/chats/${bad}`, { title: 'x' }, 'chat not found'],
          ['DELETE', `/v1/chats/${bad}`, undefined, 'chat not found'],
          ['PATCH', `/v1/chats/${bad}/star`, { starred: true }, 'chat not found'],
          ['POST', `/v1/chats/${bad}/messages`, user(), 'chat not found'],
          ['POST', `/v1/chats/${bad}/stream/attach`, undefined, 'active chat stream not found'],
          ['GET', `/v1/searches/${bad}`, undefined, 'search not found'],
          ['DELETE', `/v1/searches/${bad}`, undefined, 'search not found'],
          ['PATCH', `/v1/searches/${bad}/star`, { starred: true }, 'search not found'],
          ['POST', `/v1/searches/${bad}/run`, {}, 'search not found'],
          ['POST', `/v1/searches/${bad}/chat`, {}, 'search not found'],
          ['POST', `/v1/searches/${bad}/run/stream/attach`, undefined, 'active search stream not found'],
        ] as const) {
          const r = await t.call(method, path, body);
          assert.deepEqual([r.status, r.body], [404, { message }], `${method} ${path}`);
        }
      }
    });

    it('a path that is not valid percent-encoded UTF-8 is 400', async () => {
      for (const path of ['/v1/chats/%ED%A0%80', '/v1/chats/%FF', '/v1/searches/%E0%A4%A']) {
        const r = await t.call('GET', path);
        assert.deepEqual([r.status, r.body], [400, { message: 'malformed path: bad percent-encoding' }], path);
      }
    });

    it('a client-supplied chatId that cannot exist is 404 (completion, stream, title)', async () => {
      const before = await stored();
      for (const id of ['nope', 'x'.repeat(1000)]) {
        assert.deepEqual((await t.call('POST', '/v1/chat-completions', completion({ chatId: id }))).body, { message: 'chat not found' });
        const s = await t.stream('/v1/chat-completions/stream', completion({ chatId: id }));
        assert.deepEqual([s.status, s.body], [404, { message: 'chat not found' }]);
        assert.deepEqual((await t.call('POST', '/v1/chats/title/suggest', { chatId: id, content: 'x' })).body, { message: 'chat not found' });
      }
      assert.equal(await stored(), before);
    });

    const refused: Array<[string, string, string, unknown, RegExp]> = [
      ['NUL in chatId', 'POST', '/v1/chat-completions', completion({ chatId: NUL }), /chatId: contains U\+0000/],
      ['NUL in model', 'POST', '/v1/chat-completions', completion({ model: `m${NUL}` }), /model: contains U\+0000/],
      ['NUL in a search query with reuseByQuery', 'POST', '/v1/searches', { query: `q${NUL}`, reuseByQuery: true }, /query: contains U\+0000/],
      ['NUL in a metadata key', 'POST', '/v1/chats/:chat/messages', { ...user(), metadata: { [`k${NUL}`]: 1 } }, /metadata\["k\\u0000"\]: key contains U\+0000/],
      ['NUL in a title', 'POST', '/v1/chats', { title: `t${NUL}` }, /title: contains U\+0000/],
      ['NUL in a run query', 'POST', '/v1/searches/:search/run', { query: `q${NUL}` }, /query: contains U\+0000/],
      ['NUL in a title suggestion', 'POST', '/v1/chats/title/suggest', { chatId: ':chat', content: `c${NUL}` }, /content: contains U\+0000/],
      ['lone surrogate in message content', 'POST', '/v1/chats', { messages: [user({ content: `a${LONE}b` })] }, /messages\[0\]\.content: contains a lone UTF-16 surrogate/],
      ['lone surrogate in a name', 'POST', '/v1/chats/:chat/messages', user({ name: LONE }), /name: contains a lone UTF-16 surrogate/],
      ['lone low surrogate in metadata', 'POST', '/v1/chats/:chat/messages', user({ metadata: { a: [1, { b: '\udc00' }] } }), /metadata\.a\[1\]\.b: contains a lone/],
      ['lone surrogate in an attachment filename', 'POST', '/v1/chats/:chat/messages', user({ attachments: [textAttachment({ filename: `f${LONE}.txt` })] }), /attachments\[0\]\.filename: contains a lone/],
      ['lone surrogate in a patched prompt', 'PATCH', '/v1/chats/:chat', { additionalSystemPrompt: LONE }, /additionalSystemPrompt: contains a lone/],
      ['lone surrogate in enabledTools', 'PATCH', '/v1/chats/:chat', { enabledTools: [LONE] }, /enabledTools\[0\]: contains a lone/],
      ['metadata nested 10,000 levels', 'POST', '/v1/chats/:chat/messages', deepMetadataBody(10_000), new RegExp(`metadata\\.a\\.a\\.a\\.a\\.a…: nested deeper than the ${MAX_JSON_DEPTH}-level limit`)],
    ];

    for (const [name, method, rawPath, body, message] of refused) {
      it(`${name} → 400 naming the field, nothing stored`, async () => {
        const path = rawPath.replace(':chat', chatId).replace(':search', searchId);
        const sub = (typeof body === 'string' ? body : JSON.stringify(body)).replace('":chat"', JSON.stringify(chatId));
        const before = await stored();
        t.sim.clearRequests();
        const r = await t.call(method, path, sub);
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(r.body.message, /^invalid request body: /);
        assert.match(r.body.message, message);
        assert.equal(await stored(), before);
        assert.equal(t.sim.requests.length, 0, 'no upstream was asked');
      });
    }

    it('a persisted stream with a lone surrogate is refused before meta: no chat, no call, no provider request', async () => {
      const before = await stored();
      t.sim.clearRequests();
      const s = await t.stream('/v1/chat-completions/stream', completion({ messages: [user({ content: `x${LONE}` })] }));
      assert.equal(s.status, 400);
      assert.equal(s.events.length, 0);
      assert.match(s.body.message, /messages\[0\]\.content: contains a lone UTF-16 surrogate/);
      assert.equal(await stored(), before);
      assert.equal(t.sim.requests.length, 0);
    });

    it('well-formed text passes: emoji, pairs, every other control character', async () => {
      const content = 'a😀b\u0001\u001f\ufffe\uffff\ud83d\ude00';
      const r = await t.call('POST', `/v1/chats/${chatId}/messages`, user({ content, metadata: { '😀': ['\t', { k: 'é' }] } }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.message.content, content);
      assert.deepEqual(r.body.message.metadata, { '😀': ['\t', { k: 'é' }] });
    });

    it('metadata up to the depth limit is stored as sent', async () => {
      // body (1) → metadata (2) → … : the deepest object sits at level MAX_JSON_DEPTH.
      const metadata = nested(MAX_JSON_DEPTH - 1);
      const r = await t.call('POST', `/v1/chats/${chatId}/messages`, user({ metadata }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.message.metadata, metadata);
      const over = await t.call('POST', `/v1/chats/${chatId}/messages`, user({ metadata: nested(MAX_JSON_DEPTH) }));
      assert.equal(over.status, 400);
    });

    it('a text attachment cut at 200,000 UTF-16 units never splits an emoji', async () => {
      const text = `${'a'.repeat(199_999)}😀tail`;
      const r = await t.call('POST', `/v1/chats/${chatId}/messages`, user({ attachments: [textAttachment({ text })] }));
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
      const a = r.body.message.metadata.attachments[0];
      assert.equal(a.truncated, true);
      assert.equal(a.text, 'a'.repeat(199_999), 'cut before the pair, not inside it');
      const whole = `${'a'.repeat(199_998)}😀`;
      const kept = await t.call('POST', `/v1/chats/${chatId}/messages`, user({ attachments: [textAttachment({ text: whole })] }));
      assert.equal(kept.body.message.metadata.attachments[0].text, whole, 'exactly 200,000 units: kept whole');
    });

    it('tool-call arguments from the model with NUL in a key are stored repaired, and the run ends with done', async () => {
      // The directive's JSON text escapes the NUL (`\u0000`): the prompt holds none, the model's arguments do.
      const args = { query: 'tide pools', [`${NUL}x`]: 1 };
      const r = await t.stream('/v1/chat-completions/stream', completion({ enabledTools: ['web_search'], messages: [user({ content: sim({ tools: [{ name: 'web_search', args }], reply: 'Done.' }) })] }));
      assert.deepEqual(r.events.map((e) => e.event).filter((e) => e === 'done' || e === 'error'), ['done'], JSON.stringify(r.events.at(-1)));
      const chat = (await t.call('GET', `/v1/chats/${r.events[0]!.data.chatId}`)).body.chat;
      const tool = chat.messages.find((m: { role: string }) => m.role === 'tool');
      assert.deepEqual(tool.metadata.args, { query: 'tide pools', x: 1 });
    });
  });
}
