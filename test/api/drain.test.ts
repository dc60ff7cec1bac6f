// SIGTERM drains (SHUTDOWN_GRACE_MS): the real entry point with real signals. While it drains /ready
// is 503, new runs are refused with 503 and Retry-After, everything else is served, running runs go
// to their natural end (attach, stop and idempotent retries included) and the process exits 0 once
// the last has ended. At the grace's end, or on a second signal, the runs still going are cut and
// keep what they streamed (metadata.interrupted).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startSimulator } from '../../src/sim/server.ts';
import { simCompletion, type ServiceProcess } from '../helpers/process.ts';
import { assistantMessages, chatIdOf, deltaText, follow, metric, openChatStream, readyIs, startDrainService, storedRun, type LiveStream } from '../helpers/drain.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { sim, simEnv, waitFor } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const CUT = 'run cancelled: server is shutting down';
const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('drain on SIGTERM', () => {
  it('refuses new runs, serves the rest, lets running runs end and exits 0', async () => {
    // The service talks to this process's simulator, so the test can hold the runs that must still be
    // going at the signal (a gate each) and let them go once the drain has begun.
    const simulator = await startSimulator({ defaultReply: { mode: 'echo' } });
    const gate = gateName('drain');
    const { service, stop } = await startDrainService({ SHUTDOWN_GRACE_MS: '600000', ...simEnv(simulator) });
    try {
      const { url } = service;
      const chat = await fetch(`${url}/v1/chats`, json({})).then((r) => r.json());
      const named = await fetch(`${url}/v1/chats`, json({ title: 'Named already' })).then((r) => r.json());
      const search = await fetch(`${url}/v1/searches`, json({ query: 'drain' })).then((r) => r.json());
      // `short` ends by itself during the drain; `held` keeps the instance draining until it is stopped.
      const key = { 'idempotency-key': 'drain-held-1' };
      const short = await openChatStream(url, 120, 40, {}, { gate, gateAfter: 1 });
      const held = await openChatStream(url, 100_000, 20, key);
      await Promise.all([short.firstDelta, held.firstDelta]);
      const heldChat = (await held.meta).data.chatId as string;
      // A search run and a title run going at the signal drain too: both end by themselves.
      const slowSearch = await fetch(`${url}/v1/searches`, json({ query: `tides SIM ${JSON.stringify({ searchGate: gate, answerGate: gate })}` })).then((r) => r.json());
      const searching = follow(await fetch(`${url}/v1/searches/${slowSearch.search.id}/run/stream`, json({})));
      const titledChat = await fetch(`${url}/v1/chats`, json({})).then((r) => r.json());
      const titled = fetch(`${url}/v1/chats/title/suggest`, json({ chatId: titledChat.chat.id, content: sim({ gate, reply: 'Tide pools' }) }));
      await waitFor(async () => (await metric(url, 'css_active_runs{kind="title"}')) === 1 && (await metric(url, 'css_active_runs{kind="search"}')) === 1, 30_000, 'the search and title runs to be going');

      service.child.kill('SIGTERM');
      await readyIs(url, 503);
      simulator.openGate(gate);
      const ready = await fetch(`${url}/ready`);
      assert.deepEqual(await ready.json(), { message: 'server is draining' });
      assert.equal((await fetch(`${url}/health`)).status, 200, '/health stays 200');

      // Every way to start a run is refused, with Retry-After.
      const starts = [
        fetch(`${url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: simCompletion('hi') }),
        fetch(`${url}/v1/chat-completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: simCompletion('hi') }),
        fetch(`${url}/v1/searches/${search.search.id}/run/stream`, json({})),
        fetch(`${url}/v1/searches/${search.search.id}/run`, json({})),
        fetch(`${url}/v1/chats/title/suggest`, json({ chatId: chat.chat.id, content: 'a title please' })),
      ];
      for (const res of await Promise.all(starts)) {
        assert.equal(res.status, 503, res.url);
        assert.ok(Number(res.headers.get('retry-after')) > 0, `Retry-After on ${res.url}`);
        assert.deepEqual(await res.json(), { message: 'server is draining' });
      }
      // Decided before the body is read: a start whose body never ends is answered all the same.
      const unfinished = await rawExchange(Number(new URL(url).port), 'POST /v1/chat-completions/stream HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{"provider":');
      assert.equal(unfinished.status, 503, unfinished.head);
      assert.deepEqual(JSON.parse(unfinished.body), { message: 'server is draining' });
      // The rest is served: a titled chat's suggestion too (it is the chat as it is, no run).
      assert.equal((await fetch(`${url}/v1/chats`)).status, 200);
      const suggested = await fetch(`${url}/v1/chats/title/suggest`, json({ chatId: named.chat.id, content: 'a title please' }));
      assert.deepEqual([suggested.status, (await suggested.json()).chat], [200, named.chat]);
      assert.equal((await fetch(`${url}/v1/chats`, json({}))).status, 200, 'a chat is created');
      // Attach to a running run, and the idempotent retry of its start, both follow it.
      const attached = follow(await fetch(`${url}/v1/chats/${heldChat}/stream/attach`, { method: 'POST' }));
      const retried = await fetch(`${url}/v1/chat-completions/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...key },
        body: simCompletion(sim({ deltas: 100_000, rate: 20 })),
      });
      assert.equal(retried.status, 200);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true');
      const retry = follow(retried);
      await Promise.all([attached.firstDelta, retry.firstDelta]);

      assert.equal((await searching.events).at(-1)!.event, 'done', 'the search run ends by itself');
      const title = await titled;
      assert.equal(title.status, 200, 'the title run ends by itself');
      assert.equal((await title.json()).chat.title, 'Tide pools');

      // The short run ends by itself with its whole answer, stored.
      const events = await short.events;
      const done = events.at(-1)!;
      assert.equal(done.event, 'done', JSON.stringify(done));
      assert.equal(done.data.stopped, undefined);
      assert.equal(deltaText(events), done.data.text);
      const stored = await assistantMessages(url, chatIdOf(events));
      assert.deepEqual(stored.map((m) => m.content), [done.data.text]);
      assert.ok(!stored[0]!.metadata?.interrupted);

      assert.equal(await metric(url, 'css_draining'), 1);
      assert.ok((await metric(url, 'css_runs_refused_total{reason="draining"}')) >= starts.length + 1);

      // Stop still works; once the last run has ended the process exits 0 by itself.
      assert.equal((await fetch(`${url}/v1/chats/${heldChat}/stream/stop`, { method: 'POST' })).status, 200);
      const heldEnd = (await held.events).at(-1)!;
      assert.equal(heldEnd.data.stopped, true);
      for (const s of [attached, retry]) assert.deepEqual((await s.events).at(-1), heldEnd, 'attach and retry see the same end');
      assert.equal(await service.exited, 0, service.output());
    } finally {
      await stop();
      await simulator.close();
    }
  });

  it('cuts a run longer than the grace, storing its partial text as interrupted', () => assertLongRunCut('1500'));

  it('cuts at once on a second signal', () =>
    assertLongRunCut('600000', async (service) => {
      await readyIs(service.url, 503);
      service.child.kill('SIGINT');
    }));
});

/**
 * A long run on a service with SHUTDOWN_GRACE_MS = `graceMs`, then SIGTERM and `afterTerm`: the run
 * must be cut (assertCut).
 */
async function assertLongRunCut(graceMs: string, afterTerm: (service: ServiceProcess) => Promise<void> = async () => {}) {
  const { service, dbEnv, stop } = await startDrainService({ SHUTDOWN_GRACE_MS: graceMs });
  try {
    const long = await openChatStream(service.url, 100_000, 20);
    await long.firstDelta;
    service.child.kill('SIGTERM');
    await afterTerm(service);
    await assertCut(long, service.exited, dbEnv, () => service.output());
  } finally {
    await stop();
  }
}

/** The stream ended with the cut's error, the process exited 0, and what the client saw is stored as interrupted. */
async function assertCut(s: LiveStream, exited: Promise<number | null>, dbEnv: Record<string, string>, output: () => string) {
  const events = await s.events;
  assert.deepEqual(events.at(-1), { event: 'error', data: { type: 'error', message: CUT } });
  assert.equal(await exited, 0, output());
  const seen = deltaText(events);
  assert.ok(seen.length > 0);
  const { answers, calls } = await storedRun(dbEnv, chatIdOf(events));
  assert.deepEqual(answers, [{ content: seen, metadata: { interrupted: true } }]);
  assert.deepEqual(calls, [{ status: 'failed', error: CUT }]);
}
