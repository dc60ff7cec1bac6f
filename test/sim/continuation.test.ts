// The Messages API continues a trailing assistant turn; the simulator does too, through the real
// @anthropic-ai/sdk: a prefix of the scripted answer is continued with the rest only (streamed and
// not), anything else answers as before.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

const ANSWER = 'The tide comes in twice a day, pulled by the moon.';
const ASK = `tides\nSIM ${JSON.stringify({ reply: ANSWER, deltas: 10 })}`;
let sim: SimHandle;
let b: Anthropic;

before(async () => {
  sim = await startSimulator({ defaultReply: { mode: 'echo' } });
  b = new Anthropic({ apiKey: 'k', baseURL: sim.urls.provider_b, maxRetries: 0 });
});
after(() => sim.close());

const ask = (assistant: string): Anthropic.MessageParam[] => [
  { role: 'user', content: ASK },
  { role: 'assistant', content: assistant },
];

async function streamed(messages: Anthropic.MessageParam[]): Promise<string[]> {
  const s = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, stream: true, messages });
  const pieces: string[] = [];
  for await (const ev of s) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') pieces.push(ev.delta.text);
  return pieces;
}

describe('provider_b continuation of a trailing assistant turn', () => {
  test('streamed: only the rest, from where the prefix ends', async () => {
    const prefix = ANSWER.slice(0, 17);
    const pieces = await streamed(ask(prefix));
    assert.equal(prefix + pieces.join(''), ANSWER);
    assert.ok(pieces.length < 10, `fewer pieces than the whole answer's ten (${pieces.length})`);
  });

  test('non-streaming: the rest as the message, fewer output tokens', async () => {
    const whole = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, messages: [{ role: 'user', content: ASK }] });
    const m = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, messages: ask(ANSWER.slice(0, 30)) });
    const text = m.content.map((x) => (x.type === 'text' ? x.text : '')).join('');
    assert.equal(ANSWER.slice(0, 30) + text, ANSWER);
    assert.ok(m.usage.output_tokens < whole.usage.output_tokens);
  });

  test('a trailing turn that is no prefix of the answer gets the whole answer', async () => {
    assert.equal((await streamed(ask('Something else'))).join(''), ANSWER);
  });
});
