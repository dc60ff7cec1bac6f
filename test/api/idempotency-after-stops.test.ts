// Issue 35, "a defect found from outside": on one instance, after two other runs that ended in a stop
// (a stopped chat stream, a stopped non-streaming completion, a stopped search run, a stop answered
// 404), a keyed provider_a stream retried while it runs was said to answer 200 with
// `Idempotent-Replayed: true` and an empty body. Here every kind of stop comes first, then the retries:
// a stream's retry must attach (meta, the same text, one done), a whole completion's must wait for the
// same answer, and the provider must be called once for each pair. On both databases, with the actors
// on the main thread and on a worker thread. Every retry goes once an event shows the run is going.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { keyed, rebuilt, wholeWithRetry } from '../helpers/idempotency.ts';
import { apiDatabases, readSse, sim, startTestServer, variantTag, waitFor, type StreamResult, type TestServer } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

// As reported: no enabledTools, so the service's default tools are offered and the run holds its first
// text up to a second (actors/text-gate.ts) before the first delta, which the retry waits for.
const body = (content: string, extra: Record<string, unknown> = {}) => ({ provider: 'provider_a', model: 'm', messages: [{ role: 'user', content }], ...extra });
const post = (t: TestServer, path: string, payload: unknown, headers: Record<string, string> = {}) =>
  fetch(t.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload) });

/** The four ways a run ends in a stop, each answered as the spec says. */
async function stopEveryKind(t: TestServer): Promise<void> {
  // A chat stream stopped once its first delta is out (held there at a gate nobody opens).
  let chatId = '';
  let streamStop = 0;
  const streamed = await readSse(await post(t, '/v1/chat-completions/stream', body(sim({ deltas: 200, rate: 20, gate: gateName(), gateAfter: 1 }, 'stop me'))), new AbortController(), undefined, async (ev) => {
    if (ev.event === 'meta') chatId = ev.data.chatId;
    if (ev.event === 'delta' && !streamStop) streamStop = (await t.call('POST', `/v1/chats/${chatId}/stream/stop`)).status;
  });
  assert.equal(streamStop, 200);
  assert.equal(streamed.at(-1)!.data.stopped, true);

  // A non-streaming completion stopped while the provider holds its answer back (at a gate nobody opens).
  const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
  const whole = t.call('POST', '/v1/chat-completions', body(sim({ gate: gateName() }), { chatId: chat.id }));
  await waitFor(async () => (await t.call('GET', '/v1/active-runs')).body.chats.includes(chat.id), 10_000, 'the completion to start');
  assert.equal((await t.call('POST', `/v1/chats/${chat.id}/stream/stop`)).status, 200);
  assert.equal((await whole).status, 200);

  // A search run stopped between its results and its answer (held at a gate nobody opens).
  const query = `tide pools SIM ${JSON.stringify({ answerGate: gateName() })}`;
  const search = (await t.call('POST', '/v1/searches', { query })).body.search;
  let searchStop = 0;
  const searchEvents = await readSse(await post(t, `/v1/searches/${search.id}/run/stream`, {}), new AbortController(), undefined, async (ev) => {
    if (ev.event === 'search_results' && !searchStop) searchStop = (await t.call('POST', `/v1/searches/${search.id}/run/stop`)).status;
  });
  assert.equal(searchStop, 200);
  assert.deepEqual(searchEvents.at(-1), { event: 'error', data: { message: 'search run stopped' } });

  // A stop with nothing to stop: the chat exists (a real lookup), its run has ended.
  assert.deepEqual((await t.call('POST', `/v1/chats/${chatId}/stream/stop`)).body, { message: 'active chat stream not found' });
}

for (const db of apiDatabases()) {
  for (const threads of [0, 1]) {
    describe(`a keyed retry after stopped runs (ACTOR_THREADS=${threads}) ${variantTag(db)}`, () => {
      let t: TestServer;
      before(async () => {
        t = await startTestServer({ db, actorThreads: threads });
        await stopEveryKind(t);
      });
      after(() => t.close());

      const providerCalls = () => t.sim.requests.filter((r) => r.upstream === 'provider_a' && r.method === 'POST').length;

      it('a stream retried while it runs attaches: meta, the same text, done', async () => {
        const key = randomUUID();
        // Held after its first delta until the retry's first frame has come and the run was checked going.
        const gate = gateName();
        const b = body(sim({ deltas: 200, rate: 40, gate, gateAfter: 1 }, 'attach me'));
        const calls = providerCalls();
        let retry: Promise<StreamResult> | undefined;
        let chatId = '';
        let activeAtRetry: Promise<boolean> | undefined;
        const first = await readSse(await post(t, '/v1/chat-completions/stream', b, keyed(key)), new AbortController(), undefined, (ev) => {
          if (ev.event === 'meta') chatId = ev.data.chatId;
          if (ev.event !== 'delta' || retry) return;
          retry = t.stream('/v1/chat-completions/stream', b, {
            headers: keyed(key),
            stopAfter: (_ev, all) => {
              // The retry's first frame: was the run still going then (an attach, not a replay)?
              if (all.length === 1) {
                activeAtRetry = t.call('GET', '/v1/active-runs').then((r) => r.body.chats.includes(chatId));
                void activeAtRetry.finally(() => t.sim.openGate(gate));
              }
              return false;
            },
          });
        });
        const again = await retry!;
        assert.equal(first.at(-1)!.event, 'done', 'the first stream finishes normally');
        assert.equal(again.status, 200);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.notEqual(again.events.length, 0, 'the retry has a body');
        assert.deepEqual(again.events[0], first[0], 'the same meta: chatId and callId');
        assert.equal(again.events.at(-1)!.event, 'done');
        assert.deepEqual(again.events.at(-1)!.data, first.at(-1)!.data);
        assert.equal(rebuilt(again.events), rebuilt(first));
        assert.equal(providerCalls(), calls + 1, 'one provider call for both');
        assert.equal(await activeAtRetry, true, 'the retry came while the run was going');
      });

      it('a whole completion retried while it runs waits for it and gets the same answer', async () => {
        const { chatId, calls, first, waiting } = await wholeWithRetry(t, (id, gate) => body(sim({ reply: 'the same answer', gate }), { chatId: id }), providerCalls);
        assert.equal(first.status, 200);
        assert.equal(first.body.message.content, 'the same answer');
        assert.deepEqual([waiting.status, waiting.headers.get('idempotent-replayed'), waiting.body], [200, 'true', first.body]);
        assert.equal(providerCalls(), calls + 1);
        const stored = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
        assert.equal(stored.messages.filter((m: any) => m.role === 'assistant').length, 1);
      });
    });
  }
}
