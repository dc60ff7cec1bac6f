// Issue 53, the two steps as reported from outside: (1) a non-streaming completion on chat B, stopped
// while provider_a has sent nothing yet, not even its status line, and answered by the provider late,
// after the service has let the call go; (2) on chat D a keyed stream, left unread, and its retry with
// the same key while it runs, over the same keep-alive client (Node's global fetch). The retry must
// attach: meta, the same text, one done, and the provider is called once for both. The provider here
// is a node:http / h2c server speaking the real wire format (test/helpers/late-provider.ts), so that
// the late answer to the aborted call really goes out, on HTTP/1.1 and on HTTP/2. Each step goes on an
// event (a call held, a hang-up seen, the retry's first frame), never on a delay.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { keyed, rebuilt } from '../helpers/idempotency.ts';
import { startLateProvider, type LateProvider } from '../helpers/late-provider.ts';
import { readSse, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';

const completion = (chatId: string, content: string) => ({ chatId, provider: 'provider_a', model: 'm', enabledTools: [], messages: [{ role: 'user', content }] });
const post = (t: TestServer, path: string, payload: unknown, headers: Record<string, string> = {}) =>
  fetch(t.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload) });

for (const { h2c, threads } of [
  { h2c: false, threads: 1 },
  { h2c: true, threads: 0 },
]) {
  describe(`a keyed retry after a stopped completion the provider answers late (${h2c ? 'h2c' : 'HTTP/1.1'}, ACTOR_THREADS=${threads})`, () => {
    let provider: LateProvider;
    let t: TestServer;
    before(async () => {
      provider = await startLateProvider({ h2c });
      const env: Record<string, string> = { PROVIDER_A_BASE_URL: provider.url };
      if (h2c) env.PROVIDER_H2C_ORIGINS = new URL(provider.url).origin;
      t = await startTestServer({ actorThreads: threads, env });
    });
    after(async () => {
      await t.close();
      await provider.close();
    });

    it('attaches: meta, the same text, one done, one provider call', async () => {
      // Step 1: the whole completion, stopped while the provider holds its answer back.
      const chatB: string = (await t.call('POST', '/v1/chats', {})).body.chat.id;
      const whole = post(t, '/v1/chat-completions', completion(chatB, 'stop me'));
      await waitFor(() => provider.wholeCalls === 1, 10_000, 'the completion to call the provider');
      assert.deepEqual((await t.call('POST', `/v1/chats/${chatB}/stream/stop`)).body, { stopped: true });
      const stopped = await whole;
      assert.equal(stopped.status, 200);
      assert.equal((await stopped.json()).message.content, '');
      await waitFor(() => provider.wholeAbandoned === 1, 10_000, 'the service to hang up on the stopped call');

      // Step 2: a keyed stream on chat D, not read yet, and its retry while it runs.
      const chatD: string = (await t.call('POST', '/v1/chats', {})).body.chat.id;
      const key = randomUUID();
      const body = completion(chatD, 'attach me');
      const first = await post(t, '/v1/chat-completions/stream', body, keyed(key));
      assert.equal(first.status, 200);
      await waitFor(() => provider.streamCalls === 1, 10_000, 'the stream to call the provider');
      provider.sendDeltas(['one ', 'two ']);
      const retry = await post(t, '/v1/chat-completions/stream', body, keyed(key));
      assert.equal(retry.status, 200);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      // The provider's late answer to the stopped call goes out while the retry is attached, then the
      // stream goes on to its end.
      const again = await readSse(retry, new AbortController(), undefined, (ev) => {
        if (ev.event !== 'meta') return;
        provider.answerWhole();
        provider.sendDeltas(['three']);
        provider.finishStreams();
      });
      const events = await readSse(first, new AbortController());

      assert.notEqual(again.length, 0, 'the retry has events');
      assert.deepEqual(again[0], events[0], 'the same meta: chatId and callId');
      assert.equal(events.at(-1)!.event, 'done');
      assert.deepEqual(again.at(-1), events.at(-1), 'the same done');
      assert.equal(again.filter((e) => e.event === 'done').length, 1);
      assert.equal(rebuilt(again), 'one two three');
      assert.equal(rebuilt(events), 'one two three');
      assert.equal(provider.streamCalls, 1, 'one provider call for both');
    });
  });
}
