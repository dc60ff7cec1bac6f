// The daily token budget (docs/operations.md, "Users and single sign-on", Limits) against the ways
// around it: a run that stores no LlmCall (a stream with persist: false) still spends the user's
// tokens, a run that fails after a paid tool round spends that round, and a retry of a keyed start
// whose run spent the last of them still gets its answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, sim, startTestServer, type TestServer, variantTag, waitFor } from '../helpers/server.ts';
import { ADMIN_TOKEN, chatBody, createUser } from '../helpers/users.ts';

const EXHAUSTED = { message: 'daily token budget exhausted' };

for (const db of apiDatabases()) {
  describe(`the daily token budget ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db, env: { ADMIN_TOKEN } });
    });
    after(() => t.close());

    it('an unpersisted stream spends from the budget like any other run', async () => {
      const gil = await createUser(t, 'Gil', { tokensPerDay: 5 });
      const { status, events } = await gil.stream('/v1/chat-completions/stream', { ...chatBody('spend my tokens please'), persist: false });
      assert.equal(status, 200);
      const done = events.find((e) => e.event === 'done');
      assert.ok(done && done.data.usage.totalTokens >= 5, `the simulator's usage: ${JSON.stringify(done?.data)}`);
      // Added when the run's result settles, which may be just after its `done` frame went out.
      const spent = async () => (await t.server.ctx.pool.query<{ n: string }>('SELECT total_tokens AS n FROM user_day_tokens WHERE owner_id = $1', [gil.id])).rows[0]?.n;
      await waitFor(async () => Number(await spent()) === done.data.usage.totalTokens, 10_000, "the unpersisted stream's tokens in the day's total");
      const r = await gil.call('POST', '/v1/chat-completions', chatBody('more'));
      assert.deepEqual([r.status, r.body], [429, EXHAUSTED]);
      // Spending stores no LlmCall for it (the spec: persist false stores none), so usage shows nothing.
      assert.deepEqual((await gil.call('GET', '/v1/usage')).body, { usage: [] });
    });

    it('a retry of a keyed start whose run spent the budget replays the answer instead of a 429', async () => {
      const hal = await createUser(t, 'Hal', { tokensPerDay: 5 });
      const body = chatBody('spend my tokens please');
      const headers = { 'idempotency-key': 'budget-retry-1' };
      const first = await hal.call('POST', '/v1/chat-completions', body, headers);
      assert.equal(first.status, 200);
      const retry = await hal.call('POST', '/v1/chat-completions', body, headers);
      assert.deepEqual([retry.status, retry.body], [200, first.body], 'the retry was refused instead of replayed');
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');

      const streamBody = chatBody('spend my tokens please');
      const ivy = await createUser(t, 'Ivy', { tokensPerDay: 5 });
      const sHeaders = { 'idempotency-key': 'budget-retry-2' };
      const s1 = await ivy.stream('/v1/chat-completions/stream', streamBody, { headers: sHeaders });
      assert.equal(s1.status, 200);
      const s2 = await ivy.stream('/v1/chat-completions/stream', streamBody, { headers: sHeaders });
      assert.equal(s2.status, 200, 'the stream retry was refused instead of replayed');
      assert.equal(s2.events.at(-1)!.event, 'done');
      // A new request is still refused: only replays go past the budget.
      const fresh = await ivy.call('POST', '/v1/chat-completions', chatBody('more'), { 'idempotency-key': 'budget-retry-3' });
      assert.deepEqual([fresh.status, fresh.body], [429, EXHAUSTED]);
      // ...and its refusal recorded nothing: the key is free again once the budget allows.
      const again = await ivy.call('POST', '/v1/chat-completions', chatBody('more'), { 'idempotency-key': 'budget-retry-3' });
      assert.deepEqual([again.status, again.body], [429, EXHAUSTED]);
      const rows = await t.server.ctx.pool.query("SELECT 1 FROM idempotency_keys WHERE key = 'budget-retry-3'");
      assert.equal(rows.rowCount, 0, 'a refused start left its key claimed');
    });

    it('a run that fails after a completed tool round spends what that round used', async () => {
      const jo = await createUser(t, 'Jo', { tokensPerDay: 1_000_000 });
      // Round 1 calls a tool (the provider bills it); round 2's text stream then breaks.
      const script = sim({ tools: [{ name: 'web_search', args: { query: 'tide pools' } }], reply: 'a b c d e f', deltas: 6, failAfter: 2 });
      const r = await jo.call('POST', '/v1/chat-completions', chatBody(script, { enabledTools: ['web_search'] }));
      assert.equal(r.status, 502, JSON.stringify(r.body));
      const call = await t.server.ctx.pool.query<{ status: string; total: number | null }>('SELECT status, total_tokens AS total FROM llm_calls WHERE owner_id = $1', [jo.id]);
      assert.equal(call.rows[0]?.status, 'failed');
      // The call is failed before the answer goes out, with the usage of the round that completed.
      assert.ok((call.rows[0]?.total ?? 0) > 0, `the tool round's tokens: ${JSON.stringify(call.rows)}`);
      const spent = await t.server.ctx.pool.query<{ n: string }>('SELECT total_tokens AS n FROM user_day_tokens WHERE owner_id = $1', [jo.id]);
      assert.equal(Number(spent.rows[0]?.n), call.rows[0]!.total, "the day's total");
      const usage = (await jo.call('GET', '/v1/usage')).body.usage;
      assert.equal(usage[0]?.totalTokens, call.rows[0]!.total);
    });
  });
}
