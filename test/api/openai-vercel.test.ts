// The Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`) against the OpenAI-compatible API: it validates
// every streamed chunk against its schema, so a chunk of the wrong shape fails here even where the `openai`
// SDK would let it pass.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';
import { ADMIN_TOKEN } from '../helpers/users.ts';

const MODEL = 'provider_c/sim-c-large';

describe('the Vercel AI SDK on /openai/v1', () => {
  let t: TestServer;
  let model: ReturnType<ReturnType<typeof createOpenAICompatible>>;
  before(async () => {
    t = await startTestServer({ env: { ADMIN_TOKEN } });
    const provider = createOpenAICompatible({ name: 'css', baseURL: `${t.url}/openai/v1`, apiKey: ADMIN_TOKEN, includeUsage: true });
    model = provider(MODEL);
  });
  after(() => t.close());

  it('streams a chat: every chunk passes its schema, the text and usage arrive', async () => {
    const errors: unknown[] = [];
    const result = streamText({ model, prompt: sim({ reply: 'alpha beta gamma delta', deltas: 4 }), maxRetries: 0, onError: ({ error }) => void errors.push(error) });
    let text = '';
    for await (const part of result.textStream) text += part;
    assert.deepEqual(errors, []);
    assert.equal(text, 'alpha beta gamma delta');
    assert.equal(await result.finishReason, 'stop');
    const usage = await result.usage;
    assert.ok((usage.totalTokens ?? 0) > 0, JSON.stringify(usage));
  });

  it('answers whole, and hands over a tool call', async () => {
    const whole = await generateText({ model, prompt: 'hello there', maxRetries: 0 });
    assert.equal(whole.text, 'Simulated reply to: hello there');
    const called = await generateText({
      model,
      maxRetries: 0,
      prompt: sim({ tools: [{ name: 'get_weather', args: { city: 'Rome' } }], reply: 'Warm.' }, 'weather?'),
      tools: { get_weather: tool({ description: 'Weather of a city', inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }) }) },
    });
    assert.equal(called.finishReason, 'tool-calls');
    assert.deepEqual(called.toolCalls.map((c) => [c.toolName, c.input]), [['get_weather', { city: 'Rome' }]]);
  });
});
