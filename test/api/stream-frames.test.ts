// Two fields of the chat stream's frames (spec, "Chat stream events") no other suite pins:
// `tool_call.startedAt`, a timestamp on every tool_call event, set when the tool starts (the same on the
// initiated and the terminal event, never after the tool's result), and `done.usage`, present with the
// provider's token counts and left out (not null, not zeros) when the provider reports none. The actors
// run on a worker thread here, so the frames checked are the ones that crossed the thread boundary.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type SseEvent, type TestServer } from '../helpers/server.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('chat stream frames: tool_call.startedAt and done.usage', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ actorThreads: 1 });
  });
  after(() => t.close());

  const body = (provider: string, content: string, extra: Record<string, unknown> = {}) => ({ provider, model: 'm', messages: [{ role: 'user', content }], ...extra });

  for (const provider of ['provider_a', 'provider_c']) {
    it(`${provider}: every tool_call carries startedAt, set when the tool starts and not after its result`, async () => {
      const tools = [{ name: 'web_search', args: { query: 'tide pools' } }, { name: 'no_such_tool', args: {} }];
      // Milliseconds, floored like the service's own timestamps, so "not before the request" holds to the ms.
      const sentAt = Date.now();
      const receivedAt = new Map<SseEvent, number>();
      const r = await t.stream('/v1/chat-completions/stream', body(provider, sim({ tools, reply: 'Found them.' })), {
        stopAfter: (ev) => {
          receivedAt.set(ev, Date.now());
          return false;
        },
      });
      assert.equal(r.events.at(-1)!.event, 'done', JSON.stringify(r.events.at(-1)));
      const calls = r.events.filter((e) => e.event === 'tool_call');
      assert.equal(calls.length, 4, 'initiated and terminal for each of the two calls');
      const chatId = r.events[0]!.data.chatId;
      const stored = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat.messages.filter((m: any) => m.role === 'tool');
      assert.equal(stored.length, 2);
      for (const ev of calls) {
        const { startedAt } = ev.data;
        assert.match(startedAt, ISO_MS, `${ev.data.name} ${ev.data.status}`);
        assert.ok(Date.parse(startedAt) >= sentAt, 'not before the request was sent');
        assert.ok(Date.parse(startedAt) <= receivedAt.get(ev)!, 'not after the event that carries it arrived');
      }
      for (const [name, status] of [['web_search', 'completed'], ['no_such_tool', 'failed']]) {
        const [initiated, terminal] = calls.filter((e) => e.data.name === name).map((e) => e.data);
        assert.deepEqual([initiated.status, terminal.status], ['initiated', status]);
        assert.equal(terminal.startedAt, initiated.startedAt, 'the terminal event keeps the start time');
        assert.ok(terminal.startedAt <= terminal.completedAt, 'started before it completed');
        assert.equal(terminal.durationMs, Date.parse(terminal.completedAt) - Date.parse(terminal.startedAt));
        const message = stored.find((m: any) => m.metadata.toolCallId === terminal.toolCallId);
        assert.equal(message.metadata.startedAt, terminal.startedAt, 'the stored tool message has the same start');
        assert.ok(Date.parse(terminal.startedAt) <= Date.parse(message.createdAt), 'started before its result was stored');
      }
    });
  }

  for (const provider of ['provider_a', 'provider_c', 'provider_d']) {
    it(`${provider}: done carries usage when the provider reports it, and leaves it out when not`, async () => {
      const counted = await t.stream('/v1/chat-completions/stream', body(provider, sim({ reply: 'four words right here', usage: { input: 7, output: 3 } }), { enabledTools: [] }));
      const done = counted.events.at(-1)!;
      assert.equal(done.event, 'done');
      assert.deepEqual(done.data, { type: 'done', text: 'four words right here', usage: { inputTokens: 7, outputTokens: 3, totalTokens: 10 } });

      for (const persist of [true, false]) {
        const r = await t.stream('/v1/chat-completions/stream', body(provider, sim({ reply: 'no counts here', noUsage: true }), { enabledTools: [], persist }));
        const end = r.events.at(-1)!;
        assert.equal(end.event, 'done', JSON.stringify(end.data));
        assert.deepEqual(end.data, { type: 'done', text: 'no counts here' }, `persist ${persist}: no usage key at all`);
        if (!persist) continue;
        const chat = (await t.call('GET', `/v1/chats/${r.events[0]!.data.chatId}`)).body.chat;
        assert.deepEqual([chat.lastRun.status, chat.lastRun.usage], ['succeeded', null], 'the call is stored without invented counts');
      }
    });
  }
});
