// Prompt caching on provider_b (docs/operations.md, "Users and single sign-on", Prices): the service
// marks the stable prefix of each request (system prompt and history) with cache_control, so a long chat
// reads its history from the provider's cache instead of paying it as fresh input every turn; measured
// on the simulator's usage, which keeps a prompt cache as the Messages API does.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, startTestServer, type TestServer, variantTag } from '../helpers/server.ts';

for (const db of apiDatabases()) {
  describe(`provider_b prompt caching ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db });
    });
    after(() => t.close());

    it('a chat of 10 turns sends cache_control and its later turns read their history from the cache', async () => {
      const history: { role: string; content: string }[] = [];
      let chatId: string | undefined;
      const system = 'You are a patient tutor of tide-pool biology. '.repeat(20);
      for (let turn = 1; turn <= 10; turn++) {
        history.push({ role: 'user', content: `Question ${turn}: what lives in a tide pool, and why there? `.repeat(4) });
        t.sim.clearRequests();
        const body = { provider: 'provider_b', model: 'sim-b-large', messages: history, additionalSystemPrompt: system, ...(chatId && { chatId }) };
        const r = await t.stream('/v1/chat-completions/stream', body);
        const done = r.events.at(-1)!;
        assert.equal(done.event, 'done', JSON.stringify(r.events));
        chatId = r.events[0]!.data.chatId;
        history.push({ role: 'assistant', content: done.data.text });
        const sent = t.sim.requests.find((q) => q.upstream === 'provider_b' && q.method === 'POST')!.body;
        assert.deepEqual(sent.system.at(-1).cache_control, { type: 'ephemeral' }, `turn ${turn}: the system prompt is marked`);
        const marked = sent.messages.flatMap((m: { content: Record<string, unknown>[] }) => m.content).filter((b: Record<string, unknown>) => b.cache_control);
        // The system prompt and, from the second turn on, the history's last block.
        assert.equal(marked.length + 1, turn === 1 ? 1 : 2, `turn ${turn}: ${JSON.stringify(sent.messages)}`);
      }
      const calls = await t.server.ctx.pool.query<{ input_tokens: number; cache_read_tokens: number; cache_write_tokens: number }>(
        'SELECT input_tokens, cache_read_tokens, cache_write_tokens FROM llm_calls WHERE chat_id = $1 ORDER BY started_at',
        [chatId],
      );
      const rows = calls.rows;
      assert.equal(rows.length, 10);
      // The first turn writes the system prompt to the cache; every later one reads what the turn before wrote.
      assert.equal(rows[0]!.cache_read_tokens, 0);
      assert.ok(rows[0]!.cache_write_tokens > 0, JSON.stringify(rows[0]));
      for (let i = 1; i < 10; i++) {
        const prev = rows[i - 1]!;
        assert.equal(rows[i]!.cache_read_tokens, prev.cache_read_tokens + prev.cache_write_tokens, `turn ${i + 1} reads the prefix cached by turn ${i}: ${JSON.stringify(rows)}`);
        assert.ok(rows[i]!.cache_write_tokens > 0, `turn ${i + 1} caches its new history`);
      }
      // By the tenth turn most of the input comes from the cache.
      const last = rows[9]!;
      assert.ok(last.cache_read_tokens > last.input_tokens / 2, JSON.stringify(last));
      const usage = (await t.call('GET', '/v1/usage?days=1')).body.usage.find((u: { provider: string }) => u.provider === 'provider_b');
      assert.equal(usage.cachedInputTokens, rows.reduce((n, r) => n + r.cache_read_tokens + r.cache_write_tokens, 0));
    });
  });
}
