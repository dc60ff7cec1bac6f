// The daily token budget (docs/operations.md, "Users and single sign-on", Limits) against the ways
// around it: a run that stores no LlmCall (a stream with persist: false) still spends the user's
// tokens, and a retry of a keyed start whose run spent the last of them still gets its answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, startTestServer, type TestServer, variantTag, waitFor } from '../helpers/server.ts';
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
  });
}
