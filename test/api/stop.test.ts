// Stopping a run (docs/api-notes.md, "Stopping a run"): a chat stream ends with `done` carrying the
// partial text and `stopped: true`, that text is stored with metadata.stopped and the LlmCall ends
// `stopped`; the provider sees its connection closed; a waiting non-streaming completion answers
// with the partial message; a search ends with `search run stopped` and keeps what had arrived. A
// chat or search deleted while its run goes ends that run with an error: nothing it does can be stored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readSse, sim, startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';
import { runVariants } from '../helpers/variants.ts';
import { gateName } from '../helpers/wait.ts';

/** Opens a stream, sends `method` `stopPath` once `when` holds for an event, and reads the stream to its end. */
async function streamAndStop(
  t: TestServer,
  path: string,
  body: unknown,
  stopPath: (first: SseEvent) => string,
  when: (ev: SseEvent, seen: number) => boolean,
  method = 'POST',
  /** Awaited before the stop is sent (e.g. until the chat is stored). */
  ready: (first: SseEvent) => Promise<void> = async () => {},
): Promise<{ events: SseEvent[]; stop: { status: number; body: any } | null }> {
  const controller = new AbortController();
  const res = await fetch(t.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  let first: SseEvent | null = null;
  let seen = 0;
  let stop: { status: number; body: any } | null = null;
  const events = await readSse(res, controller, undefined, async (ev) => {
    first ??= ev;
    seen++;
    if (!stop && when(ev, seen)) {
      await ready(first);
      stop = await t.call(method, stopPath(first));
    }
  });
  return { events, stop };
}

const chatBody = (content: string, extra: Record<string, unknown> = {}) => ({
  provider: 'provider_c',
  model: 'm',
  enabledTools: [],
  messages: [{ role: 'user', content }],
  ...extra,
});
const reply = Array.from({ length: 60 }, (_, i) => `w${i + 1}`).join(' ');
const rebuilt = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');

for (const v of runVariants()) {
  describe(`stopping runs, ${v.name}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db: v.db, actorThreads: v.actorThreads });
    });
    after(() => t.close());

    it('a stopped chat stream ends with done, the partial text and stopped: true, stored as stopped', async () => {
      t.sim.clearRequests();
      const { events, stop } = await streamAndStop(
        t,
        '/v1/chat-completions/stream',
        // Held after five deltas at a gate nobody opens: only the stop can end it.
        chatBody(sim({ reply, deltas: 60, gate: gateName(), gateAfter: 5 })),
        (meta) => `/v1/chats/${meta.data.chatId}/stream/stop`,
        (ev, seen) => ev.event === 'delta' && seen >= 5,
      );
      assert.deepEqual([stop!.status, stop!.body], [200, { stopped: true }]);
      const done = events.at(-1)!;
      assert.equal(done.event, 'done');
      assert.equal(done.data.stopped, true);
      assert.equal(done.data.text, rebuilt(events), 'done carries exactly what was streamed');
      assert.ok(done.data.text.length > 0 && done.data.text.length < reply.length && reply.startsWith(done.data.text));
      const chatId = events[0]!.data.chatId;
      const chat = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
      const answer = chat.messages.find((m: any) => m.role === 'assistant');
      assert.equal(answer.content, done.data.text);
      assert.equal(answer.metadata.stopped, true);
      assert.equal(chat.lastRun.status, 'stopped');
      assert.equal(chat.lastRun.error, null);
      assert.deepEqual((await t.call('GET', '/v1/active-runs')).body.chats, []);
      const upstream = t.sim.requests.find((r) => r.upstream === 'provider_c' && r.method === 'POST')!;
      await waitFor(() => upstream.closedEarly, 5_000, 'the provider to see its connection closed');
    });

    it('a run stopped before any text stores no message and still ends with done', async () => {
      const { events } = await streamAndStop(
        t,
        '/v1/chat-completions/stream',
        chatBody(sim({ reply, deltas: 5, gate: gateName() })),
        (meta) => `/v1/chats/${meta.data.chatId}/stream/stop`,
        (ev) => ev.event === 'meta',
      );
      assert.deepEqual([events.at(-1)!.event, events.at(-1)!.data.text, events.at(-1)!.data.stopped], ['done', '', true]);
      const chat = (await t.call('GET', `/v1/chats/${events[0]!.data.chatId}`)).body.chat;
      assert.equal(chat.messages.filter((m: any) => m.role === 'assistant').length, 0);
      assert.equal(chat.lastRun.status, 'stopped');
    });

    it('a waiting non-streaming completion is stopped too and answers 200 with what it has', async () => {
      // A whole completion gets its text only at the end, so stopped while waiting it has none.
      const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
      // The provider holds its answer at a gate nobody opens: only the stop can answer the call.
      const pending = t.call('POST', '/v1/chat-completions', { ...chatBody(sim({ reply, gate: gateName() })), chatId: chat.id });
      await waitFor(async () => (await t.call('GET', '/v1/active-runs')).body.chats.includes(chat.id), 5_000, 'the run to start');
      assert.equal((await t.call('POST', `/v1/chats/${chat.id}/stream/stop`)).status, 200);
      const r = await pending;
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.message, { role: 'assistant', content: '' });
      const stored = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.equal(stored.lastRun.status, 'stopped');
      assert.equal(stored.messages.filter((m: any) => m.role === 'assistant').length, 0);
    });

    it('nothing running: 404 with the spec messages', async () => {
      const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
      const c = await t.call('POST', `/v1/chats/${chat.id}/stream/stop`);
      assert.deepEqual([c.status, c.body], [404, { message: 'active chat stream not found' }]);
      const search = (await t.call('POST', '/v1/searches', { query: 'tide pools' })).body.search;
      const s = await t.call('POST', `/v1/searches/${search.id}/run/stop`);
      assert.deepEqual([s.status, s.body], [404, { message: 'active search stream not found' }]);
    });

    it('a stopped search ends with `search run stopped` and keeps the results that had arrived', async () => {
      // The results arrive at once; the answer is held at a gate nobody opens, so the stop lands between them.
      const query = `tide pools SIM ${JSON.stringify({ answerGate: gateName() })}`;
      const search = (await t.call('POST', '/v1/searches', { query })).body.search;
      const { events, stop } = await streamAndStop(
        t,
        `/v1/searches/${search.id}/run/stream`,
        {},
        () => `/v1/searches/${search.id}/run/stop`,
        (ev) => ev.event === 'search_results',
      );
      assert.equal(stop!.status, 200);
      assert.deepEqual(events.at(-1), { event: 'error', data: { message: 'search run stopped' } });
      const stored = (await t.call('GET', `/v1/searches/${search.id}`)).body.search;
      const results = events.find((e) => e.event === 'search_results')!.data.results;
      assert.ok(results.length > 0);
      assert.deepEqual(stored.results.map((r: any) => r.url), results.map((r: any) => r.url));
      assert.equal(stored.answerError, 'search run stopped');
      assert.deepEqual(events.find((e) => e.event === 'answer_error')?.data, { error: stored.answerError }, 'the part cut short is streamed as it is stored');
      assert.deepEqual((await t.call('GET', '/v1/active-runs')).body.searches, []);
    });

    it('deleting a chat ends its stream with `run cancelled: chat deleted`, and the provider call with it', async () => {
      t.sim.clearRequests();
      const { events, stop } = await streamAndStop(
        t,
        '/v1/chat-completions/stream',
        chatBody(sim({ reply, deltas: 60, gate: gateName(), gateAfter: 5 })),
        (meta) => `/v1/chats/${meta.data.chatId}`,
        (ev, seen) => ev.event === 'delta' && seen >= 5,
        'DELETE',
        // The chat's row goes in beside the first provider round: deltas may come before it is stored.
        (meta) => waitFor(async () => (await t.call('GET', `/v1/chats/${meta.data.chatId}`)).status === 200, 10_000, 'the chat to be stored'),
      );
      assert.deepEqual([stop!.status, stop!.body], [200, { deleted: true }]);
      assert.deepEqual(events.at(-1), { event: 'error', data: { type: 'error', message: 'run cancelled: chat deleted' } });
      const chatId = events[0]!.data.chatId;
      assert.deepEqual((await t.call('GET', '/v1/active-runs')).body.chats, []);
      assert.equal((await t.call('GET', `/v1/chats/${chatId}`)).status, 404);
      const again = await t.call('POST', '/v1/chat-completions', chatBody('hi', { chatId }));
      assert.deepEqual([again.status, again.body], [404, { message: 'chat not found' }], 'the key is free and the chat gone');
      const upstream = t.sim.requests.find((r) => r.upstream === 'provider_c' && r.method === 'POST')!;
      await waitFor(() => upstream.closedEarly, 5_000, 'the provider to see its connection closed');
    });

    it('deleting a search ends its run with `run cancelled: search deleted`', async () => {
      const query = `rock pools SIM ${JSON.stringify({ answerGate: gateName() })}`;
      const search = (await t.call('POST', '/v1/searches', { query })).body.search;
      const { events, stop } = await streamAndStop(
        t,
        `/v1/searches/${search.id}/run/stream`,
        {},
        () => `/v1/searches/${search.id}`,
        (ev) => ev.event === 'search_results',
        'DELETE',
      );
      assert.deepEqual([stop!.status, stop!.body], [200, { deleted: true }]);
      assert.deepEqual(events.at(-1), { event: 'error', data: { message: 'run cancelled: search deleted' } });
      assert.deepEqual((await t.call('GET', '/v1/active-runs')).body.searches, []);
      assert.equal((await t.call('GET', `/v1/searches/${search.id}`)).status, 404);
    });

    it('counts stops and start conflicts in /metrics', async () => {
      const text = (await t.call('GET', '/metrics')).body as string;
      assert.match(text, /css_runs_stopped_total\{kind="chat"\} [1-9]/);
      assert.match(text, /css_runs_stopped_total\{kind="search"\} 1/);
    });
  });
}
