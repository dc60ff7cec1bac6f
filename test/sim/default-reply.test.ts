// The unscripted answer: Markdown in word-sized deltas at a model's pace by default; the instant
// one-line echo when the environment or the caller asks for it; directives keep winning.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { DEFAULT_RATE, DefaultReplyConfigError, defaultReplyFromEnv } from '../../src/sim/default-reply.ts';
import { plan, type Conversation } from '../../src/sim/script.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('sim/default-reply', () => {
  const ask = (text: string): Conversation => ({ system: [], turns: [{ kind: 'user', text, parts: ['string'], attachments: [] }] });
  const MARKDOWN = { mode: 'markdown', rate: DEFAULT_RATE } as const;

  let sim: SimHandle;
  before(async () => {
    // Unpaced, so the stream test does not wait on the clock; the pace is checked on the plan.
    sim = await startSimulator({ defaultReply: { mode: 'markdown', rate: 0 } });
  });
  after(() => sim.close());

  test('the environment picks the mode and the pace, and rejects nonsense with a reason', () => {
    assert.deepEqual(defaultReplyFromEnv({}), { mode: 'markdown', rate: DEFAULT_RATE });
    assert.ok(DEFAULT_RATE >= 30 && DEFAULT_RATE <= 60, 'a model-like pace');
    assert.deepEqual(defaultReplyFromEnv({ SIM_DEFAULT_REPLY: 'echo', SIM_DEFAULT_RATE: '0' }), { mode: 'echo', rate: 0 });
    assert.deepEqual(defaultReplyFromEnv({ SIM_DEFAULT_RATE: '55' }), { mode: 'markdown', rate: 55 });
    assert.throws(() => defaultReplyFromEnv({ SIM_DEFAULT_REPLY: 'poetry' }), (e) => e instanceof DefaultReplyConfigError && /markdown or echo/.test(e.message));
    assert.throws(() => defaultReplyFromEnv({ SIM_DEFAULT_RATE: '-3' }), /SIM_DEFAULT_RATE: must be a non-negative number/);
  });

  test('unscripted: Markdown with a heading, a list and a code block, in word-sized deltas at the default pace', () => {
    const p = plan(ask('How do tide pools form?'), MARKDOWN);
    assert.equal(p.directive.rate, DEFAULT_RATE);
    const text = p.deltas.text;
    assert.match(text, /^## /m);
    assert.match(text, /^- /m);
    assert.match(text, /^```ts\n[\s\S]+\n```$/m);
    assert.match(text, /How do tide pools form\?/);
    assert.ok(p.deltas.count > 50, `many deltas (${p.deltas.count})`);
    for (const piece of p.deltas.pieces) assert.ok(piece.trim().split(/\s+/).length <= 2, `word-sized: ${JSON.stringify(piece)}`);
  });

  test('a directive still scripts the answer, and echo mode keeps the one-line reply', () => {
    const scripted = plan(ask('x\nSIM {"reply":"fixed","deltas":2}'), MARKDOWN);
    assert.equal(scripted.deltas.text, 'fixed');
    assert.equal(scripted.directive.rate, undefined);
    const echo = plan(ask('Hello there'), { mode: 'echo', rate: DEFAULT_RATE });
    assert.equal(echo.deltas.text, 'Simulated reply to: Hello there');
    assert.equal(echo.directive.rate, undefined);
    assert.equal(plan(ask('Hello there')).deltas.text, 'Simulated reply to: Hello there', 'plan without defaults echoes');
  });

  test('over the wire: the streamed Markdown arrives in many deltas and joins to the whole answer', async () => {
    const c = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_c, maxRetries: 0 });
    const stream = await c.chat.completions.create({ model: 'sim-c-large', stream: true, messages: [{ role: 'user', content: 'Hello' }] });
    const pieces: string[] = [];
    for await (const ch of stream) if (ch.choices[0]?.delta?.content) pieces.push(ch.choices[0].delta.content);
    assert.equal(pieces.join(''), plan(ask('Hello'), MARKDOWN).deltas.text);
    assert.ok(pieces.length > 50);
  });
});
