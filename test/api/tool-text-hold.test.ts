// The default path (enabledTools omitted: every tool on) through the simulator: a round's text is
// held only briefly while it may still end in tool calls (TOOL_TEXT_HOLD_MS), so an answer's first
// delta reaches the client while its provider round is still streaming, not when the round ends.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';

/** 400 words at 4 a second: the round lasts 100 s, far past any hold and this test's deadline. */
const words = Array.from({ length: 400 }, (_, i) => `w${i}`);
const reply = words.join(' ');

describe('the tool text hold on the default path', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => t.close());

  for (const provider of ['provider_c', 'provider_a']) {
    it(`${provider} with tools on: the first delta comes while the round is still streaming`, { timeout: 30_000 }, async () => {
      const body = { provider, model: 'm', persist: false, messages: [{ role: 'user', content: sim({ reply, deltas: words.length, rate: 4 }) }] };
      const r = await t.stream('/v1/chat-completions/stream', body, { stopAfter: (e) => e.event !== 'meta' });
      assert.equal(r.status, 200);
      const [meta, first] = r.events;
      assert.equal(meta?.event, 'meta');
      assert.equal(first?.event, 'delta', 'no tool_call and no terminal event before the first delta');
      const text: string = first.data.text;
      assert.ok(reply.startsWith(text), 'the held text is the answer\'s start');
      assert.ok(text.length > 0 && text.length < reply.length, 'out before the round ended');
      assert.ok(text.length < 512, 'let out by the hold\'s age, before its size bound');
    });
  }
});
