// A run's later round falls back too (PROVIDER_FALLBACKS): once a tool round went well on provider_c, the
// next round's call failing for good before any of its output goes on on the chain's next model with the
// whole conversation (the request, the model's tool calls and their results), and one failing after some
// of its text went out is continued by provider_b by prefill; a failure whose retry the budget refuses goes
// to the fallback as one whose retries are spent. Through the real adapters and SDKs against
// the simulator; which upstream got what is read in its request log.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createProviders } from '../../src/providers/index.ts';
import { BUDGET_FLOOR_PER_S } from '../../src/providers/resilience/budget.ts';
import { createResilience, settingsFrom } from '../../src/providers/resilience/index.ts';
import type { ProviderAdapter } from '../../src/providers/types.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { collect, request, resilienceConfig } from './helpers.ts';

describe('providers/resilience: fallbacks of later rounds and of refused retries', () => {
  let sim: SimHandle;
  let c: ProviderAdapter;
  before(async () => {
    sim = await startSimulator({ defaultReply: { mode: 'echo' } });
  });
  after(() => sim.close());
  const config = () => resilienceConfig(sim, { PROVIDER_FALLBACKS: { provider_c: { provider: 'provider_b' as const, model: 'sim-b-large' } } });
  beforeEach(() => {
    sim.setFaults([]);
    sim.clearRequests();
    c = createProviders(config()).get('provider_c')!;
  });

  const search = { name: 'web_search', description: 'search the web', parameters: { type: 'object', properties: { query: { type: 'string' } } } };
  const reply = 'the tide pools are at the north end';
  /** A session whose first round asks for web_search, then answers `reply` in `deltas` deltas. */
  const session = (deltas: number) =>
    c.startSession(request({ tools: [{ name: 'web_search', args: { query: 'tide pools' } }], reply, deltas }, { model: 'sim-c-large', tools: [search] }));
  const results = (callId: string) => [{ callId, name: 'web_search', output: 'pools: north end' }];
  const lastBody = (upstream: string) => sim.requests.filter((r) => r.upstream === upstream).at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };

  test('before any output of the second round: the next model answers it from the whole conversation', async () => {
    const s = session(4);
    const first = await collect(s);
    assert.equal(first.end.toolCalls.length, 1);
    assert.equal(first.end.fallback, undefined);
    // provider_c goes down after its first round.
    sim.setFaults([{ upstream: 'provider_c', status: 503 }]);
    const second = await collect(s, results(first.end.toolCalls[0]!.callId));
    assert.equal(second.text, reply);
    assert.equal(second.end.fallback?.from, 'provider_c/sim-c-large');
    assert.equal(second.end.fallback?.to, 'provider_b/sim-b-large');
    assert.match(second.end.fallback!.reason, /503/);
    assert.deepEqual(second.end.fallbackCalls?.failed.map((f) => f.provider), ['provider_c']);
    // provider_c: the first round, then the second's call and its 2 retries; provider_b: once, with the tool
    // call and its result after the user's message.
    assert.equal(sim.calls('provider_c'), 4);
    assert.equal(sim.calls('provider_b'), 1);
    const sent = JSON.stringify(lastBody('provider_b').messages);
    assert.match(sent, /"type":"tool_use"/);
    assert.match(sent, /"type":"tool_result"/);
    assert.match(sent, /pools: north end/);
  });

  test('after text of the second round went out: provider_b continues it by prefill, the text whole once', async () => {
    const s = session(8);
    const first = await collect(s);
    // The second round's stream breaks after 3 deltas.
    sim.setFaults([{ upstream: 'provider_c', dieAfter: 3, failMode: 'disconnect' }]);
    const second = await collect(s, results(first.end.toolCalls[0]!.callId));
    assert.equal(second.text, reply);
    assert.equal(second.end.fallback?.to, 'provider_b/sim-b-large');
    // Not retried (its text was out): one call for each round on provider_c, one continuation on provider_b.
    assert.equal(sim.calls('provider_c'), 2);
    assert.equal(sim.calls('provider_b'), 1);
    const last = lastBody('provider_b').messages.at(-1)!;
    assert.equal(last.role, 'assistant');
    assert.ok(reply.startsWith(String((last.content as Array<{ text: string }>)[0]!.text)), JSON.stringify(last));
  });

  test('a failure whose retry the budget refuses goes to the fallback at once, as one whose retries are spent', async () => {
    const now = 4_000_000;
    const r = createResilience(settingsFrom({ ...config(), PROVIDER_RETRY_BUDGET_PERCENT: 0 }), { now: () => now });
    for (let i = 0; i < BUDGET_FLOOR_PER_S; i++) assert.equal(await r.budget.withdraw('provider_c'), true);
    const answered = await collect(createProviders(config(), r).get('provider_c')!.startSession(request({ status: 503, failOn: ['provider_c'], reply: 'from b' }, { model: 'sim-c-large' })));
    assert.equal(answered.text, 'from b');
    assert.equal(answered.end.fallback?.to, 'provider_b/sim-b-large');
    assert.equal(sim.calls('provider_c'), 1);
    assert.equal(r.stats.retries.provider_c, undefined);
  });
});
