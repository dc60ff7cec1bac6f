// provider_a through the real openai SDK: the Responses API, streaming and not, tool rounds,
// stored/stateless chaining, typed errors and mid-stream failures.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('sim/responses', () => {
  const SIM = (o: object): string => `SIM ${JSON.stringify(o)}`;
  let sim: SimHandle;
  let client: OpenAI;

  before(async () => {
    sim = await startSimulator({ defaultReply: { mode: 'echo' } });
    client = new OpenAI({ apiKey: 'test-key', baseURL: sim.urls.provider_a, maxRetries: 0 });
  });
  after(() => sim.close());

  describe('provider_a text answers', () => {
    test('non-streaming default reply with usage', async () => {
      const r = await client.responses.create({ model: 'sim-a-large', input: 'Hello there, simulator' });
      assert.equal(r.object, 'response');
      assert.equal(r.status, 'completed');
      assert.equal(r.output_text, 'Simulated reply to: Hello there, simulator');
      assert.ok(r.usage && r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
      assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    });

    test('create({stream:true}) emits the full ordered sequence with sequence numbers', async () => {
      const stream = await client.responses.create({
        model: 'sim-a-large',
        input: [{ role: 'user', content: [{ type: 'input_text', text: `Hi\n${SIM({ reply: 'Sunny and warm today', deltas: 3 })}` }] }],
        stream: true,
      });
      const types: string[] = [];
      const seqs: number[] = [];
      let text = '';
      for await (const ev of stream) {
        types.push(ev.type);
        seqs.push(ev.sequence_number);
        if (ev.type === 'response.output_text.delta') text += ev.delta;
        if (ev.type === 'response.completed') assert.equal(ev.response.usage?.output_tokens, 3);
      }
      assert.deepEqual(types, [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      assert.deepEqual(seqs, types.map((_, i) => i));
      assert.equal(text, 'Sunny and warm today');
    });

    test('responses.stream() accumulates the final response', async () => {
      let deltas = 0;
      const stream = client.responses
        .stream({ model: 'sim-a-mini', input: `Q\n${SIM({ reply: 'one two three four five six' })}` })
        .on('response.output_text.delta', () => deltas++);
      const final = await stream.finalResponse();
      assert.equal(final.output_text, 'one two three four five six');
      assert.ok(deltas >= 3);
    });

    test('echoSystem and echoInput report what arrived', async () => {
      const r = await client.responses.create({
        model: 'sim-a-large',
        instructions: 'You are terse.',
        input: `x\n${SIM({ echoSystem: true })}`,
      });
      assert.equal(r.output_text, 'SYSTEM:You are terse.');
      const img = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
      const r2 = await client.responses.create({
        model: 'sim-a-large',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: SIM({ echoInput: true }) },
              { type: 'input_image', image_url: img, detail: 'auto' },
            ],
          },
        ],
      });
      const echo = JSON.parse(r2.output_text);
      assert.deepEqual(echo.parts, ['input_text', 'input_image']);
      assert.equal(echo.attachments[0].mediaType, 'image/png');
      assert.equal(echo.attachments[0].bytes, 70);
    });
  });

  describe('provider_a function calls', () => {
    const tools = [
      { type: 'function' as const, name: 'web_search', parameters: { type: 'object', properties: {} }, strict: false },
      { type: 'function' as const, name: 'fetch_url', parameters: { type: 'object', properties: {} }, strict: false },
    ];
    const script = SIM({
      tools: [
        { name: 'web_search', args: { query: 'tide pools' } },
        { name: 'fetch_url', args: { url: 'https://example.org/a' } },
      ],
      toolRounds: 2,
    });

    test('stored mode: previous_response_id + function_call_output, two rounds, parallel calls', async () => {
      let r = await client.responses.create({ model: 'sim-a-large', input: `Research\n${script}`, tools });
      for (let round = 0; round < 2; round++) {
        assert.equal(r.output[0]!.type, 'reasoning');
        const calls = r.output.filter((o) => o.type === 'function_call');
        assert.deepEqual(
          calls.map((c) => [c.name, JSON.parse(c.arguments)]),
          [
            ['web_search', { query: 'tide pools' }],
            ['fetch_url', { url: 'https://example.org/a' }],
          ],
        );
        r = await client.responses.create({
          model: 'sim-a-large',
          previous_response_id: r.id,
          tools,
          input: calls.map((c) => ({ type: 'function_call_output' as const, call_id: c.call_id, output: `result of ${c.name} round ${round}` })),
        });
      }
      assert.equal(r.output_text, 'Tool results: result of fetch_url round 1');
    });

    test('streamed function calls arrive as added / arguments deltas / done', async () => {
      const stream = client.responses.stream({ model: 'sim-a-large', input: `Research\n${script}`, tools });
      const types: string[] = [];
      let argDeltas = 0;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'response.function_call_arguments.delta') argDeltas++;
      }
      const final = await stream.finalResponse();
      assert.deepEqual(types.slice(0, 4), [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.output_item.done',
      ]);
      assert.ok(argDeltas >= 4, 'at least two fragments per call');
      const calls = final.output.filter((o) => o.type === 'function_call');
      assert.equal(calls.length, 2);
      assert.equal(calls[1]!.arguments, '{"url":"https://example.org/a"}');
    });

    test('stateless mode: reasoning and function_call items are replayed', async () => {
      const first = await client.responses.create({ model: 'sim-a-large', store: false, input: `Go\n${SIM({ tools: [{ name: 'web_search', args: {} }] })}` });
      const replay = first.output.filter((o) => o.type === 'reasoning' || o.type === 'function_call');
      const call = first.output.find((o) => o.type === 'function_call')!;
      const base = [{ role: 'user' as const, content: `Go\n${SIM({ tools: [{ name: 'web_search', args: {} }], reply: 'done' })}` }];
      const ok = await client.responses.create({
        model: 'sim-a-large',
        store: false,
        input: [...base, ...(replay as any[]), { type: 'function_call_output', call_id: call.call_id, output: 'r' }],
      });
      assert.equal(ok.output_text, 'done');
      // Without the reasoning item the real API refuses the function_call item.
      await assert.rejects(
        client.responses.create({
          model: 'sim-a-large',
          store: false,
          input: [...base, call as any, { type: 'function_call_output', call_id: call.call_id, output: 'r' }],
        }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && /required 'reasoning' item/.test(e.message),
      );
      // Not stored: it cannot be chained.
      await assert.rejects(
        client.responses.create({ model: 'sim-a-large', previous_response_id: first.id, input: 'x' }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'previous_response_not_found',
      );
    });

    test('mismatched or missing call ids are rejected like the real API', async () => {
      const r = await client.responses.create({ model: 'sim-a-large', input: `Go\n${SIM({ tools: [{ name: 'web_search', args: {} }] })}` });
      await assert.rejects(
        client.responses.create({
          model: 'sim-a-large',
          previous_response_id: r.id,
          input: [{ type: 'function_call_output', call_id: 'call_nope', output: 'x' }],
        }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && /No tool call found for function call output with call_id call_nope/.test(e.message),
      );
      await assert.rejects(
        client.responses.create({ model: 'sim-a-large', previous_response_id: r.id, input: 'ignore the tools' }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && /No tool output found for function call/.test(e.message),
      );
    });

    test('unknown previous_response_id → previous_response_not_found', async () => {
      await assert.rejects(
        client.responses.create({ model: 'sim-a-large', previous_response_id: 'resp_missing', input: 'x' }),
        (e: unknown) =>
          e instanceof OpenAI.BadRequestError &&
          e.status === 400 &&
          e.param === 'previous_response_id' &&
          e.message.includes("Previous response with id 'resp_missing' not found."),
      );
    });
  });

  describe('provider_a errors', () => {
    test('429 with retry-after → RateLimitError', async () => {
      await assert.rejects(
        client.responses.create({ model: 'm', input: SIM({ status: 429, retryAfter: 7 }) }),
        (e: unknown) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.headers.get('retry-after') === '7',
      );
    });

    test('500 → InternalServerError; a retried call succeeds after failAttempts', async () => {
      await assert.rejects(client.responses.create({ model: 'm', input: SIM({ status: 500 }) }), OpenAI.InternalServerError);
      sim.clearRequests();
      const retrying = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_a, maxRetries: 2 });
      const r = await retrying.responses.create({ model: 'm', input: `x\n${SIM({ status: 503, failAttempts: 2, retryAfterMs: 5, reply: 'finally' })}` });
      assert.equal(r.output_text, 'finally');
      assert.deepEqual(sim.requests.map((q) => q.retryCount), ['0', '1', '2']);
    });

    test('missing key → AuthenticationError; invalid request → BadRequestError', async () => {
      const res = await fetch(`${sim.urls.provider_a}/responses`, { method: 'POST', body: '{"model":"m","input":"x"}' });
      assert.equal(res.status, 401);
      const body = (await res.json()) as { error: { code: string; type: string; param: null } };
      assert.equal(body.error.code, 'invalid_api_key');
      assert.equal(body.error.type, 'invalid_request_error');
      const noKey = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_a, maxRetries: 0, defaultHeaders: { Authorization: null } });
      await assert.rejects(noKey.responses.create({ model: 'm', input: 'x' }), OpenAI.AuthenticationError);
      await assert.rejects(
        client.responses.create({ input: 'x' } as any),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'model' && e.code === 'missing_required_parameter',
      );
      await assert.rejects(
        client.responses.create({ model: 'm', input: [{ role: 'bot', content: 'x' }] } as any),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'input[0].role',
      );
      await assert.rejects(
        client.responses.create({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: { url: 'x' } }] }] } as any),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'invalid_type',
      );
    });

    test('mid-stream failures: error event throws, response.failed is delivered, disconnect throws', async () => {
      const collect = async (mode: string): Promise<{ types: string[]; error: unknown }> => {
        const types: string[] = [];
        try {
          const s = await client.responses.create({ model: 'm', input: SIM({ deltas: 5, failAfter: 2, failMode: mode }), stream: true });
          for await (const ev of s) types.push(ev.type);
          return { types, error: null };
        } catch (error) {
          return { types, error };
        }
      };
      const ev = await collect('event');
      assert.ok(ev.error instanceof OpenAI.APIError && ev.error.status === undefined);
      assert.equal(ev.types.filter((t) => t === 'response.output_text.delta').length, 2);
      const failed = await collect('failed');
      assert.equal(failed.error, null);
      assert.equal(failed.types.at(-1), 'response.failed');
      const cut = await collect('disconnect');
      assert.ok(cut.error instanceof Error);
      assert.equal(cut.types.filter((t) => t === 'response.output_text.delta').length, 2);
    });
  });

  test('provider_a model list mixes chat and non-chat models', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    for (const id of ['sim-a-large', 'sim-a-mini', 'gpt-4.1-nano', 'text-embedding-3-small', 'whisper-1', 'dall-e-3']) {
      assert.ok(ids.includes(id), id);
    }
  });
});
