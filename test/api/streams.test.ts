// Backend-owned chat streams: one run per chat under a start storm, attach (replay then live),
// disconnect (the run goes on and stores its result), heartbeats, and slow clients dropped
// without slowing anyone else.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { readSse, sim, startStorm, stopAfterFirstDelta, startTestServer, waitFor, type SseEvent, type StreamResult, type TestServer } from '../helpers/server.ts';
import { runVariants } from '../helpers/variants.ts';
import { gateName, onFrame } from '../helpers/wait.ts';

/** The text a subscriber can rebuild: the replayed delta carries all earlier text, live ones follow. */
const rebuilt = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');

for (const v of runVariants()) {
  describe(`chat streams, ${v.name}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db: v.db, actorThreads: v.actorThreads, env: { SSE_HEARTBEAT_MS: '150', SSE_MAX_QUEUED_BYTES: String(16 * 1024 * 1024) } });
    });
    after(() => t.close());

    // `hold`: a simulator gate the run waits at (before its first delta, or after `gateAfter` of them)
    // until the test opens it, so the run is known to be going while the test acts.
    const slow = (deltas: number, rate: number, hold: { gate?: string; gateAfter?: number } = {}) => ({
      provider: 'provider_c',
      model: 'm',
      enabledTools: [],
      messages: [{ role: 'user', content: sim({ deltas, rate, ...hold }) }],
    });

    it('a start storm on one chat runs exactly once; the others get 409', async () => {
      const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
      const { won, refused, statuses } = await startStorm(25, () => t.url, { ...slow(200, 20, { gate: gateName(), gateAfter: 1 }), chatId: chat.id });
      assert.equal(won.length, 1, statuses);
      assert.deepEqual(refused, Array(24).fill({ message: 'an active chat stream already exists for this chat' }));
      const { events, stopStatus } = await stopAfterFirstDelta(won[0]!, () => t.call('POST', `/v1/chats/${chat.id}/stream/stop`));
      assert.equal(stopStatus, 200);
      assert.deepEqual([events.at(-1)?.event, events.at(-1)?.data.stopped], ['done', true]);
      const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.equal(detail.messages.filter((m: any) => m.role === 'assistant').length, 1);
      const calls = await t.server.ctx.pool.query('SELECT count(*)::int AS n FROM llm_calls WHERE chat_id = $1', [chat.id]);
      assert.equal(calls.rows[0].n, 1);
    });

    it('a second start right after meta gets 409, even before the new chat is stored', async () => {
      // meta goes out before the run's first write; the chat is held by its run from the start.
      for (let i = 0; i < 10; i++) {
        const gate = gateName();
        const first = await t.stream('/v1/chat-completions/stream', slow(20, 100, { gate }), { stopAfter: (e) => e.event === 'meta' });
        const chatId = first.events[0]!.data.chatId;
        const second = await t.stream('/v1/chat-completions/stream', { ...slow(2, 0), chatId });
        assert.deepEqual([second.status, second.body?.message], [409, 'an active chat stream already exists for this chat']);
        t.sim.openGate(gate);
      }
    });

    it('a client that disconnects leaves the run going; it is listed as active, then stored', async () => {
      const gate = gateName();
      const first = await t.stream('/v1/chat-completions/stream', slow(30, 60, { gate, gateAfter: 1 }), { stopAfter: (e) => e.event === 'delta' });
      const chatId = first.events[0]!.data.chatId;
      assert.ok((await t.call('GET', '/v1/active-runs')).body.chats.includes(chatId));
      t.sim.openGate(gate);
      await waitFor(async () => !(await t.call('GET', '/v1/active-runs')).body.chats.includes(chatId), 10_000, 'the run to end');
      const detail = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
      const answer = detail.messages.find((m: any) => m.role === 'assistant');
      assert.ok(answer, 'the answer is stored although nobody was listening');
      assert.ok(answer.content.startsWith(first.events[1]!.data.text));
      const att = await t.call('POST', `/v1/chats/${chatId}/stream/attach`);
      assert.deepEqual([att.status, att.body.message], [404, 'active chat stream not found']);
    });

    it('an unpersisted stream stops when its client disconnects (nobody could re-attach)', async () => {
      t.sim.clearRequests();
      // Held after its first delta and never let go: only the cancel can end it.
      const body = { ...slow(100, 20, { gate: gateName(), gateAfter: 1 }), persist: false };
      const r = await t.stream('/v1/chat-completions/stream', body, { stopAfter: (e) => e.event === 'delta' });
      assert.equal(r.events[0]!.data.chatId, null);
      await waitFor(() => t.server.ctx.supervisor.activeCount === 0, 2000, 'the run to be cancelled');
      const metrics = await (await fetch(`${t.url}/metrics`)).text();
      assert.match(metrics, /css_run_errors_total\{kind="chat",provider="provider_c"\} [1-9]/, 'it ended as cancelled, not done');
    });

    it('a whole completion nobody can read any more (no chat, no key) stops when its client disconnects', async () => {
      const gate = gateName();
      const client = new AbortController();
      const pending = fetch(`${t.url}/v1/chat-completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ reply: 'never read', gate }) }] }),
        signal: client.signal,
      }).catch(() => null);
      await waitFor(() => t.sim.heldAt(gate) === 1, 10_000, 'the provider call');
      client.abort();
      await pending;
      // Held at the gate for good: only the cancel can end it (and free its run slots).
      await waitFor(() => t.server.ctx.supervisor.activeCount === 0, 10_000, 'the run to be cancelled');
      await waitFor(() => t.sim.heldAt(gate) === 0, 10_000, 'the provider call to be given up');
    });

    it('attaching at random moments always yields the stored text exactly, nothing lost or doubled', async () => {
      // The run holds after its first half until all eight attaches are in, so none comes too late.
      const gate = gateName();
      const res = await fetch(`${t.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(slow(80, 80, { gate, gateAfter: 40 })) });
      // Eight attaches at random moments of the run's first half, counted in its own deltas.
      const moments = Array.from({ length: 8 }, (_, i) => i * 5 + Math.floor(Math.random() * 5));
      const attaches: Promise<StreamResult>[] = [];
      let meta = '';
      let deltas = 0;
      let replayed = 0;
      const countReplay = onFrame('meta', () => replayed++);
      const origin = readSse(res, new AbortController(), undefined, (ev) => {
        if (ev.event === 'meta') meta = ev.data.chatId;
        if (ev.event !== 'delta') return;
        for (const m of moments) if (m === deltas) attaches.push(t.stream(`/v1/chats/${meta}/stream/attach`, undefined, { stopAfter: countReplay }));
        deltas++;
      });
      await waitFor(() => replayed === 8, 20_000, 'the eight attaches to be replayed to');
      t.sim.openGate(gate);
      const own = await origin;
      const others = await Promise.all(attaches);
      assert.equal(others.length, 8);
      const stored = (await t.call('GET', `/v1/chats/${meta}`)).body.chat.messages.find((m: any) => m.role === 'assistant').content;
      assert.equal(rebuilt(own as SseEvent[]), stored);
      for (const r of others) {
        assert.equal(r.status, 200);
        const names = r.events.map((e) => e.event);
        assert.equal(names[0], 'meta', 'replay starts with meta');
        assert.equal(names.at(-1), 'done');
        assert.equal(names.filter((n) => n === 'done' || n === 'error').length, 1);
        assert.equal(rebuilt(r.events), stored);
        assert.equal(r.events.at(-1)!.data.text, stored);
      }
    });

    it('streams and attaches under the /api proxy prefix too', async () => {
      const gate = gateName();
      const first = await t.stream('/api/v1/chat-completions/stream', slow(20, 40, { gate, gateAfter: 1 }), { stopAfter: (e) => e.event === 'delta' });
      assert.equal(first.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const chatId = first.events[0]!.data.chatId;
      const att = await t.stream(`/api/v1/chats/${chatId}/stream/attach`, undefined, { stopAfter: onFrame('meta', () => t.sim.openGate(gate)) });
      assert.equal(att.events[0]!.event, 'meta');
      assert.equal(att.events.at(-1)!.event, 'done');
    });

    it('sends heartbeat comments on open streams', async () => {
      // Held before its first delta until a heartbeat has come: the open stream's only traffic.
      const gate = gateName();
      const res = await fetch(`${t.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(slow(4, 5, { gate })) });
      let raw = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        raw += decoder.decode(chunk, { stream: true });
        if (/^: ping$/m.test(raw)) t.sim.openGate(gate);
      }
      assert.match(raw, /^: ping$/m);
      assert.match(raw, /event: done/);
    });

    it('drops a client that does not read, without slowing the run or a reading client', async () => {
      const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
      const gate = gateName();
      const big = { provider: 'provider_c', model: 'm', enabledTools: [], chatId: chat.id, messages: [{ role: 'user', content: sim({ reply: 'x'.repeat(24_000_000), deltas: 600, rate: 100, gate, gateAfter: 1 }) }] };
      const payload = JSON.stringify(big);
      // A raw socket that sends the request and never reads a byte of the answer. The answer is paced
      // (4 MB/s) so that the reading client, even on a loaded machine, stays within the 16 MB cap (four
      // seconds of slack: 8 MB/s against 4 and 8 MB caps dropped the reader on a loaded 2-core machine
      // running four test files at once). The stuck one still passes the cap: 24 MB less the kernel's buffers.
      const stuck = net.connect(t.server.port, '127.0.0.1');
      // Paused: it never reads, so it never sees the server close it either; the metric tells.
      stuck.pause();
      stuck.on('error', () => undefined);
      stuck.write(`POST /v1/chat-completions/stream HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
      // The request carries the 24 MB reply script: reading, parsing and forwarding it took over 10 s on a
      // loaded, slow CI machine. The deadline only bounds a failure; the wait ends when the run is listed.
      await waitFor(async () => (await t.call('GET', '/v1/active-runs')).body.chats.includes(chat.id), 90_000, 'the run to start');
      // Held after its first delta until the reader is attached, so it cannot end before.
      const reader = await t.stream(`/v1/chats/${chat.id}/stream/attach`, undefined, { stopAfter: onFrame('meta', () => t.sim.openGate(gate)) });
      assert.equal(reader.events.at(-1)!.event, 'done');
      assert.equal(rebuilt(reader.events).length, 24_000_000);
      const metrics = await (await fetch(`${t.url}/metrics`)).text();
      stuck.destroy();
      assert.match(metrics, /css_slow_clients_dropped_total [1-9]/);
      const stored = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat.messages.find((m: any) => m.role === 'assistant');
      assert.equal(stored.content.length, 24_000_000);
    });
  });
}
