// Each user's limits and usage (docs/operations.md, "Users and single sign-on"): runs at once and tokens per UTC day, both
// answered with 429 and Retry-After and counted on /metrics; the admin has none; GET /v1/usage.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, sim, startTestServer, waitFor, type TestServer, variantTag } from '../helpers/server.ts';
import { ADMIN_TOKEN, as, chatBody, createUser, type AsUser } from '../helpers/users.ts';

const SLOW = sim({ deltas: 4000, rate: 5 });

const activeChats = async (u: Pick<AsUser, 'call'>) => (await u.call('GET', '/v1/active-runs')).body.chats as string[];

async function refusedTotal(t: TestServer, reason: string): Promise<number> {
  const text = (await as(t, ADMIN_TOKEN).call('GET', '/metrics')).body as string;
  const m = new RegExp(`^css_runs_refused_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

for (const db of apiDatabases()) {
  describe(`user limits and usage ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db, env: { ADMIN_TOKEN, USER_MAX_ACTIVE_RUNS: '2' } });
    });
    after(() => t.close());

    it("a user's own maxActiveRuns refuses one run more with 429, leaving others and the admin alone", async () => {
      const ann = await createUser(t, 'Ann', { maxActiveRuns: 1 });
      const ben = await createUser(t, 'Ben');
      const refusedBefore = await refusedTotal(t, 'user_runs');
      const first = ann.stream('/v1/chat-completions/stream', chatBody(SLOW));
      await waitFor(async () => (await activeChats(ann)).length === 1, 10_000, "Ann's first run");
      for (const [path, body] of [['/v1/chat-completions/stream', chatBody('one more')], ['/v1/chat-completions', chatBody('one more')]] as const) {
        const r = await ann.call('POST', path, body);
        assert.deepEqual([r.status, r.body], [429, { message: 'too many active runs for this user (limit 1)' }], path);
        assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
      }
      const search = await ann.call('POST', '/v1/searches', { query: 'llamas' });
      assert.equal((await ann.call('POST', `/v1/searches/${search.body.search.id}/run`, {})).status, 429, 'search runs count too');
      assert.equal(await refusedTotal(t, 'user_runs'), refusedBefore + 3);
      // Another user and the admin are not held back by Ann's limit.
      assert.equal((await ben.call('POST', '/v1/chat-completions', chatBody('hello'))).status, 200);
      assert.equal((await as(t, ADMIN_TOKEN).call('POST', '/v1/chat-completions', chatBody('hello'))).status, 200);
      // The slot comes back when the run ends.
      const [chatId] = await activeChats(ann);
      assert.equal((await ann.call('POST', `/v1/chats/${chatId}/stream/stop`)).status, 200);
      await first;
      await waitFor(async () => (await ann.call('POST', '/v1/chat-completions', chatBody('again'))).status === 200, 10_000, 'the slot back');
    });

    it('USER_MAX_ACTIVE_RUNS is the limit of a user without their own', async () => {
      const cid = await createUser(t, 'Cid');
      const streams = [cid.stream('/v1/chat-completions/stream', chatBody(SLOW)), cid.stream('/v1/chat-completions/stream', chatBody(SLOW))];
      await waitFor(async () => (await activeChats(cid)).length === 2, 10_000, "Cid's two runs");
      const r = await cid.call('POST', '/v1/chat-completions', chatBody('third'));
      assert.deepEqual([r.status, r.body], [429, { message: 'too many active runs for this user (limit 2)' }]);
      for (const chatId of await activeChats(cid)) await cid.call('POST', `/v1/chats/${chatId}/stream/stop`);
      await Promise.all(streams);
    });

    it("the daily token budget refuses model calls once today's LlmCalls reach it; searches go on", async () => {
      const dot = await createUser(t, 'Dot', { tokensPerDay: 5 });
      const refusedBefore = await refusedTotal(t, 'user_tokens');
      const first = await dot.call('POST', '/v1/chat-completions', chatBody('spend my tokens please'));
      assert.equal(first.status, 200);
      assert.ok(first.body.usage.totalTokens >= 5, `the simulator's usage: ${JSON.stringify(first.body.usage)}`);
      for (const [path, body] of [['/v1/chat-completions', chatBody('more')], ['/v1/chat-completions/stream', chatBody('more')]] as const) {
        const r = await dot.call('POST', path, body);
        assert.deepEqual([r.status, r.body], [429, { message: 'daily token budget exhausted' }], path);
        const retry = Number(r.headers.get('retry-after'));
        assert.ok(retry >= 1 && retry <= 86_400, `Retry-After ${retry}: seconds to the next UTC midnight`);
      }
      const chat = await dot.call('POST', '/v1/chats', {});
      const title = await dot.call('POST', '/v1/chats/title/suggest', { chatId: chat.body.chat.id, content: 'name me' });
      assert.deepEqual([title.status, title.body], [429, { message: 'daily token budget exhausted' }]);
      const search = await dot.call('POST', '/v1/searches', { query: 'llamas' });
      assert.equal((await dot.call('POST', `/v1/searches/${search.body.search.id}/run`, {})).status, 200, 'search runs call no model');
      assert.equal(await refusedTotal(t, 'user_tokens'), refusedBefore + 3);
      // Raising the budget applies at once (the cached key carries the limits).
      await as(t, ADMIN_TOKEN).call('PATCH', `/v1/users/${dot.id}`, { tokensPerDay: 1_000_000 });
      assert.equal((await dot.call('POST', '/v1/chat-completions', chatBody('more'))).status, 200);
    });

    it("GET /v1/usage: the caller's LlmCalls per UTC day, provider and model; the admin's per-user view", async () => {
      const eve = await createUser(t, 'Eve');
      const a = await eve.call('POST', '/v1/chat-completions', chatBody('count me'));
      const b = await eve.call('POST', '/v1/chat-completions', chatBody('and me too'));
      const today = new Date().toISOString().slice(0, 10);
      const expected = {
        usage: [{
          day: today, provider: 'provider_c', model: 'm', calls: 2,
          inputTokens: a.body.usage.inputTokens + b.body.usage.inputTokens,
          outputTokens: a.body.usage.outputTokens + b.body.usage.outputTokens,
          totalTokens: a.body.usage.totalTokens + b.body.usage.totalTokens,
          // `m` is not in the bundled price table (the simulator's models): no price, no cost.
          cachedInputTokens: 0, cost: null,
        }],
      };
      assert.deepEqual((await eve.call('GET', '/v1/usage')).body, expected);
      assert.deepEqual((await eve.call('GET', '/v1/usage?days=1')).body, expected);
      assert.deepEqual((await as(t, ADMIN_TOKEN).call('GET', `/v1/users/${eve.id}/usage?days=90`)).body, expected);
      for (const days of ['0', '91', 'abc', '1.5']) {
        const r = await eve.call('GET', `/v1/usage?days=${days}`);
        assert.deepEqual([r.status, r.body], [400, { message: 'days must be an integer from 1 to 90' }], days);
      }
      assert.equal((await eve.call('GET', `/v1/users/${eve.id}/usage`)).status, 403);
      const fay = await createUser(t, 'Fay');
      assert.deepEqual((await fay.call('GET', '/v1/usage')).body, { usage: [] }, "another user's calls are not mine");
    });
  });
}
