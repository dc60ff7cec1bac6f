// What a run that fell back (PROVIDER_FALLBACKS) costs and whom: each model it called is an LlmCall of
// its own, so GET /v1/usage counts each model's tokens under that model, lastRun names the model that
// answered (with `fallback`), the failed calls keep their errors, and the user's day total counts every
// call. One assistant message, equal to the stream. Decided by the stream's frames and the stored rows.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, sim, startTestServer, type TestServer, variantTag } from '../helpers/server.ts';
import { gateName, waitFor } from '../helpers/wait.ts';
import type { UsageRow } from '../../src/store/usage.ts';
import { ADMIN_TOKEN, createUser, type AsUser } from '../helpers/users.ts';

const CHAINS = 'provider_a=provider_c/sim-c-large;provider_c=provider_b/sim-b-large';


for (const db of apiDatabases()) {
  describe(`the usage of a run that fell back ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db, env: { PROVIDER_FALLBACKS: CHAINS, ADMIN_TOKEN } });
    });
    after(() => t.close());

    const body = (provider: string, model: string, content: string) => ({ provider, model, enabledTools: [], messages: [{ role: 'user', content }] });

    /** The user's usage rows of today, by `provider/model`. */
    async function usageOf(u: AsUser): Promise<Map<string, UsageRow>> {
      const r = await u.call('GET', '/v1/usage');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return new Map((r.body.usage as UsageRow[]).map((row) => [`${row.provider}/${row.model}`, row]));
    }
    const dayTotal = async (u: AsUser) =>
      Number((await t.server.ctx.pool.query<{ n: string }>('SELECT total_tokens AS n FROM user_day_tokens WHERE owner_id = $1', [u.id])).rows[0]?.n ?? 0);
    const callsOf = async (u: AsUser) =>
      (
        await t.server.ctx.pool.query<{ provider: string; status: string; error: string | null; total: number | null; message_id: string | null }>(
          'SELECT provider, status, error, total_tokens AS total, message_id FROM llm_calls WHERE owner_id = $1 ORDER BY started_at',
          [u.id],
        )
      ).rows;

    /** Streams `b` as `u`: the streamed text, `done`'s usage, and the chat's stored answer and lastRun. */
    async function run(u: AsUser, b: Record<string, unknown>) {
      const s = await u.stream('/v1/chat-completions/stream', b);
      assert.equal(s.events.at(-1)!.event, 'done', JSON.stringify(s.events.at(-1)));
      const streamed = s.events.filter((e) => e.event === 'delta').map((e) => e.data.text ?? e.data.delta ?? '').join('');
      const done = s.events.at(-1)!.data;
      assert.ok(done.usage?.totalTokens > 0, `the answering call's usage: ${JSON.stringify(done)}`);
      const chat = (await u.call('GET', `/v1/chats/${s.events[0]!.data.chatId}`)).body.chat;
      const answers = chat.messages.filter((m: { role: string }) => m.role === 'assistant');
      assert.equal(answers.length, 1, 'one stored answer');
      assert.equal(answers[0].content, streamed);
      assert.equal(done.text, streamed);
      return { usage: done.usage, lastRun: chat.lastRun, answer: answers[0] };
    }

    it('before any output: the failed model and the answering one each have their row; lastRun and the budget say so', async () => {
      const u = await createUser(t, 'Fae', { tokensPerDay: 1_000_000 });
      const { usage, lastRun, answer } = await run(u, body('provider_a', 'sim-a-large', sim({ status: 503, failOn: ['provider_a'], reply: 'answered by c' })));
      const rows = await usageOf(u);
      assert.deepEqual([...rows.keys()].sort(), ['provider_a/sim-a-large', 'provider_c/sim-c-large']);
      // A 503 is not billed: provider_a's call (its retries inside it) has no tokens.
      const a = rows.get('provider_a/sim-a-large')!;
      assert.deepEqual([a.calls, a.inputTokens, a.outputTokens, a.totalTokens], [1, 0, 0, 0]);
      const c = rows.get('provider_c/sim-c-large')!;
      assert.deepEqual([c.calls, c.inputTokens, c.outputTokens, c.totalTokens], [1, usage.inputTokens, usage.outputTokens, usage.totalTokens]);
      assert.deepEqual([lastRun.provider, lastRun.model, lastRun.status], ['provider_c', 'sim-c-large', 'succeeded']);
      assert.deepEqual(lastRun.usage, usage);
      assert.deepEqual(lastRun.fallback, answer.metadata.fallback);
      assert.equal(lastRun.fallback.from, 'provider_a/sim-a-large');
      const calls = await callsOf(u);
      assert.deepEqual(calls.map((x) => [x.provider, x.status]), [['provider_a', 'failed'], ['provider_c', 'succeeded']]);
      assert.match(calls[0]!.error!, /^provider_a error 503: /);
      assert.equal(calls[0]!.message_id, null);
      assert.equal(calls[1]!.message_id, answer.id);
      assert.equal(await dayTotal(u), a.totalTokens + c.totalTokens);
    });

    it('through a chain: every model called has its own call, the one in between failed too', async () => {
      const u = await createUser(t, 'Fox', { tokensPerDay: 1_000_000 });
      const { usage, lastRun } = await run(u, body('provider_a', 'sim-a-large', sim({ status: 503, failOn: ['provider_a', 'provider_c'], reply: 'answered by b' })));
      const rows = await usageOf(u);
      assert.deepEqual([...rows.keys()].sort(), ['provider_a/sim-a-large', 'provider_b/sim-b-large', 'provider_c/sim-c-large']);
      assert.deepEqual([...rows.values()].map((r) => r.calls), [1, 1, 1]);
      assert.equal(rows.get('provider_b/sim-b-large')!.totalTokens, usage.totalTokens);
      assert.deepEqual([lastRun.provider, lastRun.model, lastRun.fallback.from, lastRun.fallback.to], ['provider_b', 'sim-b-large', 'provider_a/sim-a-large', 'provider_b/sim-b-large']);
      const calls = await callsOf(u);
      assert.deepEqual(calls.map((x) => [x.provider, x.status]), [['provider_a', 'failed'], ['provider_c', 'failed'], ['provider_b', 'succeeded']]);
      assert.match(calls[1]!.error!, /^provider_c error 503: /);
      assert.equal(await dayTotal(u), usage.totalTokens);
    });

    it('after text went out: provider_b\'s continuation is its own call with its tokens; the cut call is failed, with none reported', async () => {
      const u = await createUser(t, 'Flo', { tokensPerDay: 1_000_000 });
      const reply = 'abcdefghijklmnopqrst';
      const { usage, lastRun } = await run(u, body('provider_c', 'sim-c-large', sim({ reply, deltas: 5, failAfter: 2, failMode: 'disconnect', failOn: ['provider_c'] })));
      const rows = await usageOf(u);
      assert.deepEqual([...rows.keys()].sort(), ['provider_b/sim-b-large', 'provider_c/sim-c-large']);
      // Chat Completions report usage in a stream's last chunk, which a cut stream never sends.
      const cut = rows.get('provider_c/sim-c-large')!;
      assert.deepEqual([cut.calls, cut.totalTokens], [1, 0]);
      const b = rows.get('provider_b/sim-b-large')!;
      assert.deepEqual([b.calls, b.inputTokens, b.outputTokens, b.totalTokens], [1, usage.inputTokens, usage.outputTokens, usage.totalTokens]);
      assert.deepEqual([lastRun.provider, lastRun.model, lastRun.status, lastRun.fallback.from], ['provider_b', 'sim-b-large', 'succeeded', 'provider_c/sim-c-large']);
      assert.deepEqual(lastRun.usage, usage);
      const calls = await callsOf(u);
      assert.deepEqual(calls.map((x) => [x.provider, x.status, x.total]), [['provider_c', 'failed', null], ['provider_b', 'succeeded', usage.totalTokens]]);
      assert.ok(calls[0]!.error, 'the cut call keeps its error');
      assert.equal(await dayTotal(u), cut.totalTokens + b.totalTokens);
    });

    it('a later round that fell back: each model keeps the tokens of the rounds it answered', async () => {
      const u = await createUser(t, 'Fern', { tokensPerDay: 1_000_000 });
      // Round one asks provider_a for a search that the engine holds until provider_a is down.
      const gate = gateName('later-round');
      const query = `tide pools SIM ${JSON.stringify({ searchGate: gate })}`;
      const directive = { tools: [{ name: 'web_search', args: { query } }], reply: 'answered by c', usage: { input: 100, output: 10 } };
      const streamed = run(u, { ...body('provider_a', 'sim-a-large', sim(directive)), enabledTools: ['web_search'] });
      try {
        await waitFor(() => t.sim.heldAt(gate) === 1, 20_000, 'the search held');
        t.sim.setFaults([{ upstream: 'provider_a', status: 503 }]);
        t.sim.openGate(gate);
        const { lastRun, answer } = await streamed;
        assert.equal(answer.content, 'answered by c');
        assert.deepEqual([lastRun.provider, lastRun.fallback.from, lastRun.fallback.to], ['provider_c', 'provider_a/sim-a-large', 'provider_c/sim-c-large']);
      } finally {
        t.sim.setFaults([]);
      }
      const rows = await usageOf(u);
      const a = rows.get('provider_a/sim-a-large')!;
      const c = rows.get('provider_c/sim-c-large')!;
      assert.deepEqual([a.calls, a.inputTokens, a.outputTokens, a.totalTokens], [1, 100, 10, 110]);
      assert.deepEqual([c.calls, c.inputTokens, c.outputTokens, c.totalTokens], [1, 100, 10, 110]);
      assert.equal(await dayTotal(u), 220);
    });
  });
}
