// Providers fail, answers don't (through the HTTP API, against the simulator): a 429 that outlives the
// retries reaches the client as 429 with the provider's Retry-After; an open breaker answers 503 with
// the message and Retry-After at once, without calling the provider; a run whose provider fails before
// any output goes on on the next model of PROVIDER_FALLBACKS, and one that fails after text went out
// goes on on provider_b by prefill, with one stream, one stored answer equal to it, metadata.fallback
// and lastRun saying so. Decided by events, stored rows and the simulator's request log.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sim, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';

const CHAINS = 'provider_a=provider_c/sim-c-large;provider_c=provider_b/sim-b-large';

describe('provider resilience', () => {
  let t: TestServer;
  /** Same simulator; no retries and breakers that open after 2 failures. */
  let strict: TestServer;
  before(async () => {
    t = await startTestServer({ env: { PROVIDER_FALLBACKS: CHAINS } });
    strict = await startTestServer({ sim: t.sim, env: { PROVIDER_RETRIES: '0', PROVIDER_BREAKER_FAILURES: '2', PROVIDER_BREAKER_OPEN_MS: '60000' } });
  });
  after(async () => {
    await strict.close();
    await t.close();
  });
  beforeEach(() => {
    t.sim.setFaults([]);
    t.sim.clearRequests();
  });

  const body = (provider: string, model: string, content: string, extra: Record<string, unknown> = {}) => ({
    provider,
    model,
    enabledTools: [],
    messages: [{ role: 'user', content }],
    ...extra,
  });
  const chatOf = async (chatId: string) => (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;

  describe('a provider 429 past the retries', () => {
    it('reaches the client as 429 with the provider\'s Retry-After (within the max wait: after 2 retries)', async () => {
      const r = await t.call('POST', '/v1/chat-completions', body('provider_d', 'sim-d-agent', sim({ status: 429, retryAfterMs: 2 })));
      assert.equal(r.status, 429);
      assert.match(r.body.message, /^provider_d error 429: /);
      assert.equal(r.headers.get('retry-after'), '1');
      assert.equal(t.sim.calls('provider_d'), 3);
    });

    it('a wait longer than PROVIDER_RETRY_MAX_WAIT_MS is not waited: 429 at once, Retry-After the provider\'s', async () => {
      const r = await t.call('POST', '/v1/chat-completions', body('provider_d', 'sim-d-agent', sim({ status: 429, retryAfter: 30 })));
      assert.equal(r.status, 429);
      assert.equal(r.headers.get('retry-after'), '30');
      assert.equal(t.sim.calls('provider_d'), 1);
    });

    it('a stream that already sent meta ends with the error event', async () => {
      const s = await t.stream('/v1/chat-completions/stream', body('provider_d', 'sim-d-agent', sim({ status: 429, retryAfter: 30 })));
      assert.deepEqual(s.events.map((e) => e.event), ['meta', 'error']);
      assert.match(s.events[1]!.data.message, /^provider_d error 429: /);
    });

    it('a 503 past the retries stays the spec\'s 502', async () => {
      const r = await t.call('POST', '/v1/chat-completions', body('provider_d', 'sim-d-agent', sim({ status: 503 })));
      assert.equal(r.status, 502);
      assert.equal(r.headers.get('retry-after'), null);
      assert.equal(t.sim.calls('provider_d'), 3);
    });
  });

  describe('waiting to retry', () => {
    it('keeps the stream open with heartbeats; a stop meanwhile ends the run and the retry never goes out', async () => {
      const beating = await startTestServer({ sim: t.sim, env: { SSE_HEARTBEAT_MS: '100' } });
      try {
        // The provider asks for 10 s (PROVIDER_RETRY_MAX_WAIT_MS): the run waits that long before its retry.
        const res = await fetch(`${beating.url}/v1/chat-completions/stream`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body('provider_d', 'sim-d-agent', sim({ status: 503, retryAfter: 10 }))),
        });
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        // Two heartbeats after meta: the stream is alive while its run waits.
        while ((text.match(/^: ping$/gm) ?? []).length < 2) {
          const r = await reader.read();
          assert.equal(r.done, false, `the stream ended while waiting: ${text}`);
          text += decoder.decode(r.value, { stream: true });
        }
        assert.match(text, /^event: meta$/m);
        assert.doesNotMatch(text, /^event: (delta|error|done)$/m);
        assert.equal(t.sim.calls('provider_d'), 1);
        const chatId = JSON.parse(/^event: meta\ndata: (.*)$/m.exec(text)![1]!).chatId as string;
        assert.equal((await beating.call('POST', `/v1/chats/${chatId}/stream/stop`)).status, 200);
        for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
        assert.match(text, /^event: (done|error)$/m);
        assert.equal(t.sim.calls('provider_d'), 1);
      } finally {
        await beating.close();
      }
    });
  });

  describe('breakers', () => {
    it('open after PROVIDER_BREAKER_FAILURES failures: 503 with the message and Retry-After, no call; a stream\'s error says the same', async () => {
      for (let i = 0; i < 2; i++) {
        const r = await strict.call('POST', '/v1/chat-completions', body('provider_d', 'sim-d-small', sim({ status: 503 })));
        assert.equal(r.status, 502);
      }
      assert.equal(t.sim.calls('provider_d'), 2);
      const refused = await strict.call('POST', '/v1/chat-completions', body('provider_d', 'sim-d-small', sim({ reply: 'not asked' })));
      assert.equal(refused.status, 503);
      assert.deepEqual(refused.body, { message: 'provider_d is unavailable, retry later' });
      const wait = Number(refused.headers.get('retry-after'));
      assert.ok(wait > 0 && wait <= 60, `Retry-After ${wait}`);
      const s = await strict.stream('/v1/chat-completions/stream', body('provider_d', 'sim-d-small', sim({ reply: 'not asked' })));
      assert.deepEqual(s.events.map((e) => e.event), ['meta', 'error']);
      assert.equal(s.events[1]!.data.message, 'provider_d is unavailable, retry later');
      assert.equal(t.sim.calls('provider_d'), 2);
    });
  });

  describe('fallbacks', () => {
    it('before any output: the next model of the chain answers; one stream, meta names the first, the answer is marked', async () => {
      const s = await t.stream('/v1/chat-completions/stream', body('provider_a', 'sim-a-large', sim({ status: 503, failOn: ['provider_a'], reply: 'answered by c' })));
      assert.deepEqual(s.events.map((e) => e.event), ['meta', 'delta', 'delta', 'done']);
      const meta = s.events[0]!.data;
      assert.deepEqual([meta.provider, meta.model], ['provider_a', 'sim-a-large']);
      const done = s.events.at(-1)!.data;
      assert.equal(done.text, 'answered by c');
      // provider_a: the call and its 2 retries; then provider_c once.
      assert.equal(t.sim.calls('provider_a'), 3);
      assert.equal(t.sim.calls('provider_c'), 1);
      const chat = await chatOf(meta.chatId);
      const answer = chat.messages.at(-1);
      assert.equal(answer.content, 'answered by c');
      const fallback = { from: 'provider_a/sim-a-large', to: 'provider_c/sim-c-large', reason: answer.metadata.fallback.reason };
      assert.match(fallback.reason, /^provider_a error 503: /);
      assert.deepEqual(answer.metadata.fallback, fallback);
      assert.deepEqual(chat.lastRun.fallback, fallback);
      assert.equal(chat.lastRun.status, 'succeeded');
      assert.deepEqual(chat.lastRun.usage, done.usage);
    });

    it('after text went out: provider_b continues the answer by prefill; the stored answer is the streamed one', async () => {
      const reply = 'abcdefghijklmnopqrst';
      const s = await t.stream(
        '/v1/chat-completions/stream',
        body('provider_c', 'sim-c-large', sim({ reply, deltas: 5, failAfter: 2, failMode: 'disconnect', failOn: ['provider_c'] })),
      );
      const kinds = s.events.map((e) => e.event);
      assert.equal(kinds[0], 'meta');
      assert.equal(kinds.at(-1), 'done');
      const streamed = s.events.filter((e) => e.event === 'delta').map((e) => e.data.text ?? e.data.delta ?? '').join('');
      const done = s.events.at(-1)!.data;
      assert.equal(done.text, reply);
      assert.equal(streamed, reply);
      assert.equal(t.sim.calls('provider_c'), 1);
      assert.equal(t.sim.calls('provider_b'), 1);
      // provider_b got the text so far as a trailing assistant turn.
      const sent = t.sim.requests.find((r) => r.upstream === 'provider_b')!.body;
      assert.equal(sent.messages.at(-1).role, 'assistant');
      assert.match(JSON.stringify(sent.messages.at(-1).content), /abcdefgh/);
      const chat = await chatOf(s.events[0]!.data.chatId);
      const answers = chat.messages.filter((m: { role: string }) => m.role === 'assistant');
      assert.equal(answers.length, 1);
      assert.equal(answers[0].content, reply);
      assert.equal(answers[0].metadata.interrupted, undefined);
      assert.deepEqual([answers[0].metadata.fallback.from, answers[0].metadata.fallback.to], ['provider_c/sim-c-large', 'provider_b/sim-b-large']);
      assert.equal(chat.lastRun.fallback.to, 'provider_b/sim-b-large');
    });

    it('after text went out, a model that would start the answer again is passed over for one that continues it', async () => {
      const reply = 'ABCDEFGHIJKLMNOPQRST';
      const s = await t.stream(
        '/v1/chat-completions/stream',
        body('provider_a', 'sim-a-large', sim({ reply, deltas: 5, failAfter: 2, failMode: 'event', failOn: ['provider_a'] })),
      );
      assert.equal(s.events.at(-1)!.data.text, reply);
      // provider_c (Chat Completions) cannot continue a turn: the chain goes on to provider_b.
      assert.deepEqual([t.sim.calls('provider_a'), t.sim.calls('provider_c'), t.sim.calls('provider_b')], [1, 0, 1]);
      const chat = await chatOf(s.events[0]!.data.chatId);
      assert.equal(chat.lastRun.fallback.to, 'provider_b/sim-b-large');
      assert.equal(chat.messages.at(-1).content, reply);
    });

    it('a provider without a chain fails as before (the spec\'s 502)', async () => {
      const r = await t.call('POST', '/v1/chat-completions', body('provider_b', 'sim-b-large', sim({ status: 529 })));
      assert.equal(r.status, 502);
      assert.equal(t.sim.calls('provider_b'), 3);
    });
  });

  describe('metrics', () => {
    /** One sample of /metrics, 0 when absent. */
    const sample = async (name: string, labels: string): Promise<number> => {
      const text = (await t.call('GET', '/metrics')).body as string;
      const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };

    it('count calls by outcome, retries, fallbacks, and show an open breaker', async () => {
      const before = {
        ok: await sample('css_provider_calls_total', 'provider="provider_c",outcome="ok"'),
        unavailable: await sample('css_provider_calls_total', 'provider="provider_a",outcome="unavailable"'),
        retries: await sample('css_provider_retries_total', 'provider="provider_a"'),
        fallbacks: await sample('css_runs_fallback_total', 'from="provider_a",to="provider_c"'),
      };
      const s = await t.stream('/v1/chat-completions/stream', body('provider_a', 'sim-a-large', sim({ status: 503, failOn: ['provider_a'], reply: 'counted' })));
      assert.equal(s.events.at(-1)!.event, 'done');
      assert.equal(await sample('css_provider_calls_total', 'provider="provider_c",outcome="ok"'), before.ok + 1);
      assert.equal(await sample('css_provider_calls_total', 'provider="provider_a",outcome="unavailable"'), before.unavailable + 3);
      assert.equal(await sample('css_provider_retries_total', 'provider="provider_a"'), before.retries + 2);
      assert.equal(await sample('css_runs_fallback_total', 'from="provider_a",to="provider_c"'), before.fallbacks + 1);
      // The strict server's provider_d breaker opened above (both servers share this process's count).
      assert.equal(await sample('css_provider_breaker_open', 'provider="provider_d"'), 1);
    });

    it('an actor thread\'s counts reach the main thread\'s /metrics', async () => {
      const threaded = await startTestServer({ sim: t.sim, actorThreads: 1, env: { PROVIDER_FALLBACKS: 'provider_d=provider_b/sim-b-large' } });
      try {
        const s = await threaded.stream('/v1/chat-completions/stream', body('provider_d', 'sim-d-agent', sim({ status: 503, failOn: ['provider_d'], reply: 'from b' })));
        assert.equal(s.events.at(-1)!.data.text, 'from b');
        const fallbacks = async () => {
          const text = (await threaded.call('GET', '/metrics')).body as string;
          return text.split('\n').find((l) => l.startsWith('css_runs_fallback_total{from="provider_d",to="provider_b"}')) ?? '';
        };
        // The thread posts its counts when they changed, once a second: wait for that post.
        await waitFor(async () => (await fallbacks()) !== '', 10_000, 'the worker\'s fallback count on /metrics');
        assert.equal((await fallbacks()).split(' ').at(-1), '1');
      } finally {
        await threaded.close();
      }
    });
  });
});
