// Cost in money (docs/operations.md, "Users and single sign-on", Prices): MODEL_PRICES prices each
// LlmCall as the provider reported its usage, cached input apart from fresh; GET /v1/usage shows
// cachedInputTokens and cost; a daily cost budget (USER_COST_PER_DAY, a user's costPerDay) refuses as
// the token budget does.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, sim, startTestServer, type TestServer, variantTag, waitFor } from '../helpers/server.ts';
import { ADMIN_TOKEN, as, chatBody, createUser } from '../helpers/users.ts';

const EXHAUSTED = { message: 'daily cost budget exhausted' };
const PRICE = { input_cost_per_token: 1e-4, output_cost_per_token: 1e-3, cache_read_input_token_cost: 1e-5 };

function priceFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'prices-')), 'prices.json');
  writeFileSync(file, JSON.stringify({ m: PRICE, 'sim-a-mini': PRICE }));
  return file;
}

const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;

for (const db of apiDatabases()) {
  describe(`cost ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      // Every user without their own costPerDay may spend 0.05 USD a day.
      t = await startTestServer({ db, env: { ADMIN_TOKEN, MODEL_PRICES: priceFile(), USER_COST_PER_DAY: '0.05' } });
    });
    after(() => t.close());

    it('prices cached input apart from fresh, per call and per day in GET /v1/usage', async () => {
      const kim = await createUser(t, 'Kim');
      // 100 input tokens of which 60 came from the provider's cache, 4 output tokens.
      const usage = { input: 100, output: 4, cached: 60 };
      const c = await kim.call('POST', '/v1/chat-completions', chatBody(sim({ reply: 'a b c d', usage })));
      assert.equal(c.status, 200, JSON.stringify(c.body));
      assert.deepEqual(c.body.usage, { inputTokens: 100, outputTokens: 4, totalTokens: 104 }, "the spec's usage is unchanged");
      const a = await kim.call('POST', '/v1/chat-completions', { ...chatBody(sim({ reply: 'a b c d', usage })), provider: 'provider_a', model: 'sim-a-mini' });
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const cost = 40 * PRICE.input_cost_per_token + 60 * PRICE.cache_read_input_token_cost + 4 * PRICE.output_cost_per_token;
      const calls = await t.server.ctx.pool.query<{ provider: string; cache_read_tokens: number; cache_write_tokens: number; cost: number }>(
        'SELECT provider, cache_read_tokens, cache_write_tokens, cost FROM llm_calls WHERE owner_id = $1 ORDER BY provider',
        [kim.id],
      );
      assert.deepEqual(calls.rows.map((r) => [r.provider, r.cache_read_tokens, r.cache_write_tokens]), [['provider_a', 60, 0], ['provider_c', 60, 0]]);
      for (const r of calls.rows) assert.ok(close(r.cost, cost), `${r.provider}: ${r.cost} USD, not ${cost}`);
      const rows = (await kim.call('GET', '/v1/usage')).body.usage as Record<string, unknown>[];
      assert.deepEqual(rows.map((r) => [r.provider, r.cachedInputTokens, close(r.cost as number, cost)]), [['provider_a', 60, true], ['provider_c', 60, true]]);
    });

    it("refuses a user's start once their calls of the day cost their costPerDay, with the budget's message", async () => {
      const lou = await createUser(t, 'Lou', { costPerDay: 0.01 });
      assert.equal(lou.id.length > 0, true);
      const user = (await as(t, ADMIN_TOKEN).call('GET', `/v1/users/${lou.id}`)).body.user;
      assert.equal(user.costPerDay, 0.01);
      // 0.01 + 0.004 USD: past the budget with one call.
      const first = await lou.call('POST', '/v1/chat-completions', chatBody(sim({ reply: 'a b c d', usage: { input: 100, output: 4 } })));
      assert.equal(first.status, 200);
      const r = await lou.call('POST', '/v1/chat-completions', chatBody('more'));
      assert.deepEqual([r.status, r.body], [429, EXHAUSTED]);
      assert.ok(Number(r.headers.get('retry-after')) >= 1, 'retry at the next UTC midnight');
      const s = await lou.stream('/v1/chat-completions/stream', chatBody('more'));
      assert.equal(s.status, 429);
      // Raising the budget applies at once; null falls back to USER_COST_PER_DAY (0.05).
      const p = await as(t, ADMIN_TOKEN).call('PATCH', `/v1/users/${lou.id}`, { costPerDay: null });
      assert.deepEqual([p.status, p.body.user.costPerDay], [200, null]);
      assert.equal((await lou.call('POST', '/v1/chat-completions', chatBody('more'))).status, 200);
      const bad = await as(t, ADMIN_TOKEN).call('PATCH', `/v1/users/${lou.id}`, { costPerDay: 0 });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /costPerDay/);
    });

    it('USER_COST_PER_DAY is the budget of a user without their own, and an unpersisted stream spends from it', async () => {
      const max = await createUser(t, 'Max');
      // 0.05 + 0.004 USD, in a run that stores no LlmCall.
      const body = { ...chatBody(sim({ reply: 'a b c d', usage: { input: 500, output: 4 } })), persist: false };
      const s = await max.stream('/v1/chat-completions/stream', body);
      assert.equal(s.status, 200);
      // Added when the run's result settles, which may be just after its `done` frame went out.
      const spent = async () => (await t.server.ctx.pool.query<{ cost: number }>('SELECT cost FROM user_day_tokens WHERE owner_id = $1', [max.id])).rows[0]?.cost ?? 0;
      await waitFor(async () => (await spent()) > 0, 10_000, "the unpersisted stream's cost in the day's total");
      assert.ok(close(await spent(), 500 * 1e-4 + 4 * 1e-3));
      const r = await max.call('POST', '/v1/chat-completions', chatBody('more'));
      assert.deepEqual([r.status, r.body], [429, EXHAUSTED]);
      // The admin has no budget.
      assert.equal((await as(t, ADMIN_TOKEN).call('POST', '/v1/chat-completions', chatBody('admin'))).status, 200);
    });
  });
}
