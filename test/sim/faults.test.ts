// The simulator failing on purpose: faults set with POST /sim/faults (N calls, a share of calls, a
// time, resets, a stream that dies after K deltas) and the prompt's own script (failAttempts counted
// per identical request, failOn naming the upstreams that fail), read through the real SDKs.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

describe('sim/faults', () => {
  const SIM = (o: object): string => `SIM ${JSON.stringify(o)}`;
  let sim: SimHandle;
  let c: OpenAI;
  let b: Anthropic;
  let origin: string;

  before(async () => {
    sim = await startSimulator({ defaultReply: { mode: 'echo' } });
    c = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_c, maxRetries: 0 });
    b = new Anthropic({ apiKey: 'k', baseURL: sim.urls.provider_b, maxRetries: 0 });
    origin = new URL(sim.urls.provider_c).origin;
  });
  after(() => sim.close());
  beforeEach(() => {
    sim.setFaults([]);
    sim.clearRequests();
  });

  const ask = (text: string) => c.chat.completions.create({ model: 'sim-c-large', messages: [{ role: 'user', content: text }] });
  const statusOf = (p: Promise<unknown>) =>
    p.then(
      () => 200,
      (e: { status?: number }) => e.status ?? 'connection',
    );

  async function postFaults(body: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${origin}/sim/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, json: await res.json() };
  }

  test('POST /sim/faults: the next N calls of one upstream answer the status with its retry headers, then it answers', async () => {
    const set = await postFaults({ upstream: 'provider_c', status: 429, count: 2, retryAfterMs: 40, retryAfter: 1 });
    assert.equal(set.status, 200);
    assert.deepEqual(set.json.faults, [{ upstream: 'provider_c', status: 429, count: 2, retryAfterMs: 40, retryAfter: 1 }]);
    const err = await ask('one').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.headers.get('retry-after-ms'), '40');
    assert.equal(err.headers.get('retry-after'), '1');
    assert.equal(await statusOf(ask('two')), 429);
    assert.equal((await ask('three')).choices[0]!.message.content, 'Simulated reply to: three');
    // provider_b was never touched by provider_c's fault.
    assert.equal(sim.calls('provider_c'), 3);
    assert.equal(sim.calls('provider_b'), 0);
    assert.deepEqual((await (await fetch(`${origin}/sim/faults`)).json()).faults, []);
  });

  test('a share of the calls fails, spread evenly; DELETE clears it', async () => {
    await postFaults({ faults: [{ upstream: 'provider_c', status: 503, percent: 30 }] });
    const outcomes: (number | string)[] = [];
    for (let i = 0; i < 10; i++) outcomes.push(await statusOf(ask(`share ${i}`)));
    assert.deepEqual(outcomes, [200, 200, 200, 503, 200, 200, 503, 200, 200, 503]);
    await fetch(`${origin}/sim/faults`, { method: 'DELETE' });
    assert.equal(await statusOf(ask('after')), 200);
  });

  test('a fault for a time ends by itself; 529 reaches the Messages SDK as overloaded', async () => {
    sim.setFaults([{ upstream: 'provider_b', status: 529, forMs: 60_000 }]);
    const err = await b.messages.create({ model: 'sim-b-large', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.APIError);
    assert.equal(err.status, 529);
    sim.setFaults([{ upstream: 'provider_b', status: 529, forMs: 0 }]);
    const ok = await b.messages.create({ model: 'sim-b-large', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(ok.content[0]!.type, 'text');
  });

  test('a reset closes the connection before any response', async () => {
    sim.setFaults([{ upstream: 'provider_c', reset: true, count: 1 }]);
    const err = await ask('reset me').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIConnectionError, String(err));
    assert.equal(await statusOf(ask('reset me')), 200);
  });

  test('dieAfter: the stream breaks after K deltas', async () => {
    sim.setFaults([{ upstream: 'provider_c', dieAfter: 2, failMode: 'disconnect', count: 1 }]);
    const s = await c.chat.completions.create({ model: 'sim-c-large', stream: true, messages: [{ role: 'user', content: SIM({ reply: 'abcdef', deltas: 6 }) }] });
    let text = '';
    const err = await (async () => {
      for await (const ch of s) text += ch.choices[0]?.delta?.content ?? '';
    })().catch((e: unknown) => e);
    assert.ok(err instanceof Error);
    assert.equal(text, 'ab');
  });

  test('bad faults are refused with what is wrong', async () => {
    assert.deepEqual(await postFaults({ upstream: 'provider_x', status: 503 }), { status: 400, json: { error: `'upstream' must be one of provider_a, provider_b, provider_c, provider_d` } });
    assert.equal((await postFaults({ upstream: 'provider_c' })).json.error, `a fault needs exactly one of 'status', 'reset' or 'dieAfter'`);
    assert.equal((await postFaults({ upstream: 'provider_c', status: 503, percent: 0 })).json.error, `'percent' must be from 1 to 100`);
  });

  test('script: failAttempts counts identical requests (no SDK retry header needed); failOn spares other upstreams', async () => {
    const text = SIM({ status: 503, failAttempts: 2, reply: 'third time' });
    assert.equal(await statusOf(ask(text)), 503);
    assert.equal(await statusOf(ask(text)), 503);
    assert.equal((await ask(text)).choices[0]!.message.content, 'third time');

    const only = SIM({ status: 529, failOn: ['provider_b'], reply: 'c answers' });
    assert.equal((await ask(only)).choices[0]!.message.content, 'c answers');
    const err = await b.messages.create({ model: 'sim-b-large', max_tokens: 10, messages: [{ role: 'user', content: only }] }).catch((e: unknown) => e);
    assert.equal((err as { status?: number }).status, 529);
  });

  test('script: reset with failAttempts', async () => {
    const text = SIM({ reset: true, failAttempts: 1, reply: 'back' });
    assert.equal(await statusOf(ask(text)), 'connection');
    assert.equal((await ask(text)).choices[0]!.message.content, 'back');
  });
});
