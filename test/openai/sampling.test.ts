// `top_p` and `stop` of the OpenAI-compatible API reach the provider that answers (src/openai/sampling.ts),
// driven by the official `openai` SDK against the simulator, which records what each provider was sent:
// Chat Completions providers get `top_p` and `stop`, provider_b `top_p` and `stop_sequences`, provider_a's
// Responses API `top_p`; `stop` for provider_a, which has none, and values out of OpenAI's ranges are a 400
// naming the field. Nothing is stored: one database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { ADMIN_TOKEN } from '../helpers/users.ts';
import { openaiServer } from '../helpers/openai.ts';
import { gateName } from '../helpers/wait.ts';

describe('OpenAI-compatible top_p and stop', () => {
  const s = openaiServer({ env: { ADMIN_TOKEN } }, ADMIN_TOKEN);

  /** The body the provider was sent for the request whose prompt holds `marker`. */
  const sent = (marker: string) => {
    const found = s.t.sim.requests.filter((r) => JSON.stringify(r.body ?? '').includes(marker));
    assert.equal(found.length, 1, `one provider call for ${marker}`);
    return found[0]!.body as Record<string, unknown>;
  };

  for (const [model, stopField] of [['provider_c/sim-c-large', 'stop'], ['provider_d/sim-d-agent', 'stop'], ['provider_b/sim-b-large', 'stop_sequences']] as const) {
    it(`${model.split('/')[0]}: a chat completion's top_p and stop reach it as ${stopField}`, async () => {
      const marker = gateName();
      const whole = await s.ai.chat.completions.create({ model, messages: [{ role: 'user', content: `hi ${marker}` }], top_p: 0.25, stop: ['END', '###'] });
      assert.equal(whole.choices[0]!.finish_reason, 'stop');
      assert.deepEqual([sent(marker).top_p, sent(marker)[stopField]], [0.25, ['END', '###']]);
      const one = gateName();
      await s.ai.chat.completions.stream({ model, messages: [{ role: 'user', content: `hi ${one}` }], stop: 'DONE' }).finalChatCompletion();
      assert.deepEqual([sent(one).top_p, sent(one)[stopField]], [undefined, ['DONE']]);
    });
  }

  it('provider_a: a response\'s top_p reaches it and is echoed; stop, which its API has not, is a 400', async () => {
    const marker = gateName();
    const r = await s.ai.responses.create({ model: 'provider_a/sim-a-large', input: `hi ${marker}`, top_p: 0.5 });
    assert.equal(sent(marker).top_p, 0.5);
    assert.equal(r.top_p, 0.5);
    const refused = s.ai.chat.completions.create({ model: 'provider_a/sim-a-large', messages: [{ role: 'user', content: 'hi' }], stop: 'END' });
    await assert.rejects(refused, (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === 'stop' && /provider_a .* has no stop sequences/.test(err.message));
  });

  it('values out of OpenAI\'s ranges are a 400 naming the field', async () => {
    const chat = (body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>) => s.ai.chat.completions.create({ model: 'provider_c/sim-c-large', messages: [{ role: 'user', content: 'hi' }], ...body });
    await assert.rejects(chat({ top_p: 1.5 }), (err: unknown) => err instanceof OpenAI.BadRequestError && /top_p/.test(err.message));
    await assert.rejects(chat({ stop: ['a', 'b', 'c', 'd', 'e'] }), (err: unknown) => err instanceof OpenAI.BadRequestError && /stop/.test(err.message) && /at most 4/.test(err.message));
    await assert.rejects(s.ai.responses.create({ model: 'provider_c/sim-c-large', input: 'hi', top_p: -1 }), (err: unknown) => err instanceof OpenAI.BadRequestError && /top_p/.test(err.message));
  });
});
