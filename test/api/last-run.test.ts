// chat.lastRun on GET /v1/chats/:chatId: how the chat's newest run went, for every status (a crash:
// last-run-crash.test.ts; a stop: stop.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readSse, sim, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';
import { runVariants } from '../helpers/variants.ts';
import { gateName } from '../helpers/wait.ts';

for (const v of runVariants()) {
  describe(`chat lastRun ${v.name}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db: v.db, actorThreads: v.actorThreads });
    });
    after(() => t.close());

    const chatOf = async (chatId: string) => (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
    const newChat = async () => (await t.call('POST', '/v1/chats', { title: 'runs' })).body.chat.id as string;

    it('is null before any run; a succeeded run carries usage, latency and times', async () => {
      const chatId = await newChat();
      assert.equal((await chatOf(chatId)).lastRun, null);
      const r = await t.call('POST', '/v1/chat-completions', {
        chatId, provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: sim({ reply: 'fine' }) }],
      });
      assert.equal(r.status, 200);
      const run = (await chatOf(chatId)).lastRun;
      assert.deepEqual(Object.keys(run).sort(), ['callId', 'error', 'fallback', 'finishedAt', 'latencyMs', 'model', 'provider', 'startedAt', 'status', 'usage']);
      assert.equal(run.fallback, null);
      assert.deepEqual([run.provider, run.model, run.status, run.error], ['provider_c', 'sim-c-large', 'succeeded', null]);
      assert.deepEqual(run.usage, r.body.usage);
      assert.ok(Number.isInteger(run.latencyMs) && run.latencyMs >= 0);
      assert.ok(run.finishedAt >= run.startedAt);
      assert.equal((await t.call('GET', '/v1/chats')).body.chats.find((c: any) => c.id === chatId).lastRun, undefined, 'lists stay ChatSummary');
    });

    it('a failed run carries the error', async () => {
      const chatId = await newChat();
      const r = await t.call('POST', '/v1/chat-completions', {
        chatId, provider: 'provider_a', model: 'sim-a-large', messages: [{ role: 'user', content: sim({ status: 400 }) }],
      });
      assert.equal(r.status, 502);
      const run = (await chatOf(chatId)).lastRun;
      assert.deepEqual([run.status, run.error, run.usage], ['failed', r.body.message, null]);
      assert.ok(run.finishedAt);
    });

    it('a run in progress reads running, then its end', async () => {
      const chatId = await newChat();
      const controller = new AbortController();
      // Held after its first delta until lastRun has been read as running.
      const gate = gateName();
      const res = await fetch(`${t.url}/v1/chat-completions/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId, provider: 'provider_b', model: 'sim-b-large', messages: [{ role: 'user', content: sim({ reply: 'slow answer here', deltas: 30, rate: 30, gate, gateAfter: 1 }) }] }),
        signal: controller.signal,
      });
      let sawRunning = false;
      const events = await readSse(res, controller, undefined, async (ev) => {
        if (ev.event === 'delta' && !sawRunning) {
          await waitFor(async () => (await chatOf(chatId)).lastRun?.status === 'running', 10_000, 'lastRun running');
          const run = (await chatOf(chatId)).lastRun;
          assert.deepEqual([run.finishedAt, run.latencyMs, run.usage, run.error], [null, null, null, null]);
          sawRunning = true;
          t.sim.openGate(gate);
        }
      });
      assert.equal(events.at(-1)!.event, 'done');
      assert.ok(sawRunning);
      const run = (await chatOf(chatId)).lastRun;
      assert.deepEqual([run.callId, run.status], [events[0]!.data.callId, 'succeeded']);
    });
  });
}
