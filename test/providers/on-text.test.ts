// ProviderSession.round: every provider hands its text to the callback synchronously, in order, before
// the round resolves with its end, streamed and whole; and what a stream tells before its end (onHint),
// so the chat run lets a round's text out, or keeps it as commentary, as soon as the wire says which.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RoundHint } from '../../src/providers/types.ts';
import { request, setup, TOOLS, type Sim } from './helpers.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/on-text', () => {
  let sim: Sim;
  let get: Awaited<ReturnType<typeof setup>>['get'];
  before(async () => {
    const s = await setup();
    sim = s.sim;
    get = s.get;
  });
  after(() => sim.close());

  for (const name of ['provider_a', 'provider_b', 'provider_c', 'provider_d'] as const) {
    for (const stream of [true, false]) {
      test(`${name} (${stream ? 'streamed' : 'whole'}): text to the callback, then the round's end`, async () => {
        const session = get(name).startSession(request({ reply: 'one two three', deltas: 3 }, { stream }));
        const texts: string[] = [];
        let textAfterEnd = false;
        let resolved = false;
        const end = await session.round(null, (t) => {
          if (resolved) textAfterEnd = true;
          texts.push(t);
        });
        resolved = true;
        assert.deepEqual(end.toolCalls, []);
        assert.equal(textAfterEnd, false);
        assert.equal(texts.join(''), 'one two three');
        assert.equal(texts.length, stream ? 3 : 1);
      });
    }
  }

  /** The round's text pieces and hints, in the order the callbacks heard them. */
  async function heard(name: 'provider_a' | 'provider_c', script: Record<string, unknown>) {
    const session = get(name).startSession(request(script, { tools: TOOLS }));
    const order: string[] = [];
    let ended = false;
    const end = await session.round(
      null,
      (t) => order.push(`text:${t}`),
      (hint: RoundHint) => {
        assert.equal(ended, false, 'a hint after the round ended');
        order.push(`hint:${hint}`);
      },
    );
    ended = true;
    return { order, end };
  }

  for (const name of ['provider_a', 'provider_c'] as const) {
    test(`${name}: an answer's text item ends with text_end, after all its text`, async () => {
      const { order, end } = await heard(name, { reply: 'one two three', deltas: 3 });
      assert.deepEqual(end.toolCalls, []);
      assert.deepEqual(order, ['text:one ', 'text:two ', 'text:three', 'hint:text_end']);
    });

    test(`${name}: a round of tool calls says tool_call once, before the round ends, and never text_end`, async () => {
      const script = { tools: [{ name: 'web_search', args: { query: 'a' } }, { name: 'web_search', args: { query: 'b' } }] };
      const { order, end } = await heard(name, script);
      assert.equal(end.toolCalls.length, 2);
      assert.deepEqual(order, ['hint:tool_call']);
    });
  }

  test('provider_c without tools offered: a tool_calls fragment is not ours, so it tells nothing', async () => {
    const session = get('provider_c').startSession(request({ tools: [{ name: 'web_search', args: {} }] }, { tools: [] }));
    const hints: RoundHint[] = [];
    await session.round(null, () => {}, (h) => hints.push(h));
    assert.ok(!hints.includes('tool_call'));
  });
});
