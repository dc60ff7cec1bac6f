// Idempotent starts (docs/api-notes.md, "Retrying a start safely"): a retry with the same
// Idempotency-Key and body attaches to the active run or replays the finished one without calling
// the provider again; another body is 422; a burst with one key starts one run.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { OFFLOAD_BODY_BYTES } from '../../src/http/body-pool.ts';
import { keyed, rebuilt, wholeWithRetry } from '../helpers/idempotency.ts';
import { readSse, sim, startTestServer, waitFor, type SseEvent, type StreamResult, type TestServer } from '../helpers/server.ts';
import { runVariants } from '../helpers/variants.ts';
import { gateName, onFrame } from '../helpers/wait.ts';

const body = (content: string, extra: Record<string, unknown> = {}) => ({
  provider: 'provider_c',
  model: 'm',
  enabledTools: [],
  messages: [{ role: 'user', content }],
  ...extra,
});

for (const v of runVariants()) {
  describe(`Idempotency-Key on completions, ${v.name}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db: v.db, actorThreads: v.actorThreads });
    });
    after(() => t.close());

    const providerCalls = () => t.sim.requests.filter((r) => r.upstream === 'provider_c' && r.method === 'POST').length;

    it('a stream retried after its end replays meta, one delta and done, without calling the provider', async () => {
      const key = randomUUID();
      const b = body(sim({ deltas: 6 }, 'replay me'));
      const first = await t.stream('/v1/chat-completions/stream', b, { headers: keyed(key) });
      assert.equal(first.headers.get('idempotent-replayed'), null, 'the first request started the run');
      const calls = providerCalls();
      const again = await t.stream('/v1/chat-completions/stream', b, { headers: keyed(key) });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(providerCalls(), calls, 'no new provider call');
      assert.deepEqual(again.events.map((e) => e.event), ['meta', 'delta', 'done']);
      assert.deepEqual(again.events[0]!.data, first.events[0]!.data, 'the same chatId and callId');
      assert.equal(again.events[1]!.data.text, rebuilt(first.events));
      assert.deepEqual(again.events[2]!.data, first.events.at(-1)!.data);
      const chat = (await t.call('GET', `/v1/chats/${first.events[0]!.data.chatId}`)).body.chat;
      assert.equal(chat.messages.filter((m: any) => m.role === 'assistant').length, 1);
    });

    it('a stream retried while its run is active attaches to it: the same text, one run', async () => {
      const key = randomUUID();
      // Held after its first delta until the retry is attached (its replay has come).
      const gate = gateName();
      const b = body(sim({ deltas: 30, rate: 30, gate, gateAfter: 1 }, 'attach me'));
      const calls = providerCalls();
      const res = await fetch(`${t.url}/v1/chat-completions/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...keyed(key) },
        body: JSON.stringify(b),
      });
      // The retry goes once the run is streaming: its first delta is out.
      let retry: Promise<StreamResult> | undefined;
      const one = {
        events: await readSse(res, new AbortController(), undefined, (ev) => {
          const attached = onFrame('meta', () => t.sim.openGate(gate));
          if (ev.event === 'delta') retry ??= t.stream('/v1/chat-completions/stream', b, { headers: keyed(key), stopAfter: attached });
        }),
      };
      const again = await retry!;
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.events.at(-1)!.event, 'done');
      assert.equal(rebuilt(again.events), rebuilt(one.events));
      assert.equal(again.events[0]!.data.chatId, one.events[0]!.data.chatId);
      assert.equal(providerCalls(), calls + 1, 'one provider call for both');
    });

    it('a whole completion retried while running waits for it, and after its end gets the same body', async () => {
      const { chatId, key, body: b, calls, first, waiting } = await wholeWithRetry(t, (id, gate) => body(sim({ reply: 'the same answer', gate }), { chatId: id }), providerCalls);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.deepEqual([waiting.status, waiting.body], [200, first.body]);
      assert.equal(waiting.headers.get('idempotent-replayed'), 'true');
      const later = await t.call('POST', '/v1/chat-completions', { ...b, messages: [...b.messages] }, keyed(key));
      assert.deepEqual([later.status, later.body], [200, first.body]);
      assert.equal(providerCalls(), calls + 1);
      const stored = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
      assert.equal(stored.messages.filter((m: any) => m.role === 'assistant').length, 1);
    });

    it('a failed first run replays its failure', async () => {
      const key = randomUUID();
      const b = body(sim({ status: 400 }));
      const first = await t.call('POST', '/v1/chat-completions', b, keyed(key));
      assert.ok(first.status >= 400);
      const calls = providerCalls();
      const again = await t.call('POST', '/v1/chat-completions', b, keyed(key));
      assert.deepEqual([again.status, again.body], [first.status, first.body]);
      assert.equal(providerCalls(), calls);
    });

    it('the same key with another body is 422; a malformed key is 400; a key on persist:false is 400', async () => {
      const key = randomUUID();
      await t.stream('/v1/chat-completions/stream', body(sim({ deltas: 2 }), {}), { headers: keyed(key) });
      const other = await t.stream('/v1/chat-completions/stream', body(sim({ deltas: 3 })), { headers: keyed(key) });
      assert.deepEqual([other.status, other.body], [422, { message: 'Idempotency-Key was used with a different request' }]);
      const otherEndpoint = await t.call('POST', '/v1/chat-completions', body(sim({ deltas: 2 })), keyed(key));
      assert.equal(otherEndpoint.status, 422);
      const bad = await t.call('POST', '/v1/chat-completions', body('hi'), keyed('x'.repeat(256)));
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /Idempotency-Key/);
      const unpersisted = await t.stream('/v1/chat-completions/stream', body('hi', { persist: false }), { headers: keyed(randomUUID()) });
      assert.equal(unpersisted.status, 400);
      assert.match(unpersisted.body.message, /persist/);
    });

    it('a retry of a request with an attachment sent without an id replays it, whole and stream; another attachment id is another request', async () => {
      const content = sim({ deltas: 3 }, 'read the note');
      const withNote = (text: string, id?: string) => body(content, { messages: [{ role: 'user', content, attachments: [{ kind: 'text', id, filename: 'note.txt', mimeType: 'text/plain', text }] }] });
      const whole = (b: unknown, key: string) => t.call('POST', '/v1/chat-completions', b, keyed(key));
      const stream = (b: unknown, key: string) => t.stream('/v1/chat-completions/stream', b, { headers: keyed(key) });
      // The stream's body is big enough to be parsed, and fingerprinted, in the CPU pool.
      const cases = [
        { mode: 'whole', post: whole, text: 'the attached note', offloaded: 0 },
        { mode: 'stream', post: stream, text: 'n'.repeat(OFFLOAD_BODY_BYTES), offloaded: 3 },
      ];
      for (const { mode, post, text, offloaded } of cases) {
        const key = randomUUID();
        const pooled = t.server.bodies.offloaded;
        const first = await post(withNote(text), key);
        assert.equal(first.status, 200, mode);
        const calls = providerCalls();
        const again = await post(withNote(text), key);
        assert.equal(again.status, 200, `${mode}: the same body with the same key is a retry, not another request`);
        assert.equal(again.headers.get('idempotent-replayed'), 'true', mode);
        assert.equal(providerCalls(), calls, `${mode}: no new provider call`);
        const otherId = await post(withNote(text, 'client-chosen'), key);
        assert.equal(otherId.status, 422, `${mode}: an attachment id the client chose makes another request`);
        assert.equal(t.server.bodies.offloaded - pooled, offloaded, mode);
      }
      const key = randomUUID();
      assert.equal((await whole(withNote('the attached note', 'a'), key)).status, 200);
      assert.equal((await whole(withNote('the attached note', 'b'), key)).status, 422, 'two client-chosen ids differ');
    });

    it('a burst of simultaneous requests with one key starts one run', async () => {
      const key = randomUUID();
      const b = body(sim({ deltas: 10, rate: 40 }, 'burst'));
      const calls = providerCalls();
      const results = await Promise.all(Array.from({ length: 10 }, () => t.stream('/v1/chat-completions/stream', b, { headers: keyed(key) })));
      assert.deepEqual(results.map((r) => r.status), Array(10).fill(200));
      assert.equal(providerCalls(), calls + 1, 'one provider call');
      const chatIds = new Set(results.map((r) => r.events[0]!.data.chatId));
      assert.equal(chatIds.size, 1, 'every answer is about one chat');
      const texts = new Set(results.map((r) => rebuilt(r.events)));
      assert.equal(texts.size, 1, 'and one text');
      assert.equal(results.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 9);
      const [chatId] = [...chatIds];
      const n = await t.server.ctx.pool.query('SELECT count(*)::int AS n FROM llm_calls WHERE chat_id = $1', [chatId]);
      assert.equal(n.rows[0].n, 1);
      const metrics = (await t.call('GET', '/metrics')).body as string;
      assert.match(metrics, /css_idempotent_replays_total\{mode="stream"\} [1-9]/);
    });
  });
}
