// Slow readers beyond what streams.test.ts pins (a client that never reads is dropped at the cap
// without slowing anyone): a client that stalls BELOW the cap is not dropped and loses nothing, even
// when it only starts reading after the run has ended and the rest of the answer waits in the queue.
// Its own file: streams.test.ts already runs close to the per-file time limit on a loaded machine.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readSse, sim, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';

describe('slow readers', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ actorThreads: 1, env: { SSE_MAX_QUEUED_BYTES: String(4 * 1024 * 1024) } });
  });
  after(() => t.close());

  const droppedSoFar = async () => Number(/css_slow_clients_dropped_total (\d+)/.exec(await (await fetch(`${t.url}/metrics`)).text())?.[1]);

  it('a client that stalls below the cap loses nothing: it reads the whole stream after the run ended', async () => {
    const before = await droppedSoFar();
    const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
    // 3 MB, under the 4 MB cap: what the socket does not take waits in the server's queue.
    const body = { provider: 'provider_c', model: 'm', enabledTools: [], chatId: chat.id, messages: [{ role: 'user', content: sim({ reply: 'z'.repeat(3_000_000), deltas: 300, rate: 1000 }) }] };
    const res = await fetch(`${t.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    // Not a byte read until the run is over and stored: the stream's end must wait for the queue to drain.
    await waitFor(async () => !(await t.call('GET', '/v1/active-runs')).body.chats.includes(chat.id), 30_000, 'the run to end');
    const events = await readSse(res, new AbortController());
    assert.equal(events.at(-1)!.event, 'done');
    const text = events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');
    assert.equal(text.length, 3_000_000);
    assert.equal(await droppedSoFar(), before, 'a slow client under the cap is not dropped');
  });
});
