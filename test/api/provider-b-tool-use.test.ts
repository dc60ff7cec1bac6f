// provider_b runs without service tools, but a model may still answer with a `tool_use` block. That
// turn holds no answer: the run must end with a clear error (stored on the LlmCall, terminal `error`
// event, 502 for a whole completion), never with an empty `done.text` and an empty stored answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, variantTag, sim, startTestServer, type TestServer } from '../helpers/server.ts';

const TOOL_USE = sim({ tools: [{ name: 'web_search', args: { query: 'tide pools' } }] }, 'look this up');
const EXPECTED = /provider_b answered with a call to the tool `web_search` instead of text, but provider_b runs without service tools/;

for (const db of apiDatabases()) {
  describe(`provider_b answering with tool_use ${variantTag(db)}`, () => {
    let t: TestServer;
    const q = async (sql: string, params: unknown[] = []) => (await t.server.ctx.pool.query(sql, params)).rows;
    before(async () => {
      t = await startTestServer({ db });
    });
    after(() => t.close());

    it('ends a stream with a clear error event, stores the error and no empty answer', async () => {
      const r = await t.stream('/v1/chat-completions/stream', {
        provider: 'provider_b',
        model: 'sim-b-large',
        messages: [{ role: 'user', content: TOOL_USE }],
      });
      assert.equal(r.status, 200);
      const names = r.events.map((e) => e.event);
      assert.equal(names[0], 'meta');
      assert.equal(names.at(-1), 'error', `ends with error, not done: ${names.join(',')}`);
      assert.ok(!names.includes('done'));
      assert.match(r.events.at(-1)!.data.message, EXPECTED);
      const { chatId, callId } = r.events[0]!.data;
      const [call] = await q('SELECT status, error FROM llm_calls WHERE id = $1', [callId]);
      assert.equal(call.status, 'failed');
      assert.match(call.error, EXPECTED);
      const messages = await q('SELECT role, content FROM messages WHERE chat_id = $1 ORDER BY created_at', [chatId]);
      assert.deepEqual(messages.map((m) => m.role), ['user'], 'no (empty) assistant message stored');
    });

    it('answers a whole completion with 502 and the same message', async () => {
      const r = await t.call('POST', '/v1/chat-completions', {
        provider: 'provider_b',
        model: 'sim-b-large',
        messages: [{ role: 'user', content: TOOL_USE }],
      });
      assert.equal(r.status, 502);
      assert.match(r.body.message, EXPECTED);
    });
  });
}
