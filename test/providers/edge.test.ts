// Wire shapes the simulator does not produce, served verbatim by a tiny local server: the flat
// Responses `error` event, `response.incomplete`, streams that close without their terminal event,
// the odd chunk shapes OpenAI-compatible agent endpoints send, and error bodies sent with status 200.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createProviders } from '../../src/providers/index.ts';
import { ProviderError, type ProviderAdapter, type ProviderName } from '../../src/providers/types.ts';
import { collect, failure, request, TOOLS } from './helpers.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/edge', () => {
  let server: Server;
  let providers: Map<ProviderName, ProviderAdapter>;
  /** The raw SSE body the next request gets, and its media type. */
  let body = '';
  let type = 'text/event-stream';
  let status = 200;

  const sse = (frames: unknown[], event?: (f: any) => string | undefined) =>
    frames.map((f) => (event?.(f) ? `event: ${event(f)}\n` : '') + `data: ${typeof f === 'string' ? f : JSON.stringify(f)}\n\n`).join('');
  const responses = (frames: unknown[]) => sse(frames, (f) => f.type);
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    providers = createProviders({
      PROVIDER_TIMEOUT_MS: 5000,
      PROVIDER_A_API_KEY: 'k', PROVIDER_A_BASE_URL: `${base}/v1`,
      PROVIDER_B_API_KEY: 'k', PROVIDER_B_BASE_URL: base,
      PROVIDER_C_API_KEY: 'k', PROVIDER_C_BASE_URL: `${base}/v1`,
      AGENT_PROVIDER_API_KEY: 'k', AGENT_PROVIDER_API_BASE_URL: `${base}/v1`,
    });
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    type = 'text/event-stream';
    status = 200;
  });

  const resp = (status: string, extra: Record<string, unknown> = {}) => ({
    id: 'resp_1', object: 'response', status, model: 'm', output: [], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 }, ...extra,
  });

  test('provider_a: the flat in-stream error form is a ProviderError', async () => {
    body = responses([
      { type: 'response.created', sequence_number: 0, response: resp('in_progress') },
      { type: 'error', sequence_number: 1, code: 'too_many_requests', message: 'Slow down', param: null },
    ]);
    const e = await failure(providers.get('provider_a')!.startSession(request({})));
    assert.ok(e instanceof ProviderError);
    assert.equal(e.message, 'provider_a stream error (too_many_requests): Slow down');
  });

  test('provider_a: incomplete at max_output_tokens ends normally, other reasons fail', async () => {
    body = responses([
      { type: 'response.output_text.delta', sequence_number: 0, item_id: 'm', output_index: 0, content_index: 0, delta: 'Partial' },
      { type: 'response.incomplete', sequence_number: 1, response: resp('incomplete', { incomplete_details: { reason: 'max_output_tokens' } }) },
    ]);
    const r = await collect(providers.get('provider_a')!.startSession(request({})));
    assert.equal(r.text, 'Partial');
    assert.equal(r.end.finishReason, 'max_output_tokens');

    body = responses([{ type: 'response.incomplete', sequence_number: 0, response: resp('incomplete', { incomplete_details: { reason: 'content_filter' } }) }]);
    const e = await failure(providers.get('provider_a')!.startSession(request({})));
    assert.equal(e.message, 'provider_a response incomplete: content_filter');
  });

  // An answer the provider's filter cut is no answer: it fails as provider_a's `incomplete: content_filter`
  // does, instead of ending (and being stored) as a normal, possibly empty, answer.
  for (const stream of [true, false]) {
    test(`a content-filter finish (provider_c, provider_d) and a refusal stop (provider_b) fail the round (${stream ? 'streamed' : 'whole'})`, async () => {
      type = stream ? 'text/event-stream' : 'application/json';
      for (const name of ['provider_c', 'provider_d'] as const) {
        body = stream
          ? sse([chunk({ content: 'Part' }), chunk({}, 'content_filter'), { choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }, '[DONE]'])
          : JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Part' }, finish_reason: 'content_filter' }] });
        const e = await failure(providers.get(name)!.startSession(request({}, { stream })));
        assert.ok(e instanceof ProviderError);
        assert.equal(e.message, `${name} response stopped by the provider's content filter (finish_reason: content_filter)`);
      }
      const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } };
      body = stream
        ? sse(
            [
              { type: 'message_start', message },
              { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
              { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Part' } },
              { type: 'content_block_stop', index: 0 },
              { type: 'message_delta', delta: { stop_reason: 'refusal', stop_sequence: null }, usage: { output_tokens: 2 } },
              { type: 'message_stop' },
            ],
            (f) => f.type,
          )
        : JSON.stringify({ ...message, content: [{ type: 'text', text: 'Part' }], stop_reason: 'refusal' });
      const b = await failure(providers.get('provider_b')!.startSession(request({}, { stream })));
      assert.ok(b instanceof ProviderError);
      assert.equal(b.message, 'provider_b declined to go on with the answer (stop_reason: refusal)');
    });
  }

  // A call the token limit cut has arguments that end mid-JSON: running it would fail on them and loop the
  // model on an error it did not make. provider_a fails such a response (incomplete with calls); so does c.
  for (const stream of [true, false]) {
    test(`provider_c: a length finish that cut a tool call fails the round (${stream ? 'streamed' : 'whole'})`, async () => {
      type = stream ? 'text/event-stream' : 'application/json';
      const cut = { id: 'call_a', type: 'function', function: { name: 'web_search', arguments: '{"query":"tide po' } };
      body = stream
        ? sse([chunk({ tool_calls: [{ index: 0, ...cut }] }), chunk({}, 'length'), '[DONE]'])
        : JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [cut] }, finish_reason: 'length' }] });
      const e = await failure(providers.get('provider_c')!.startSession(request({}, { stream, tools: TOOLS })));
      assert.ok(e instanceof ProviderError);
      assert.equal(e.message, 'provider_c response incomplete: the token limit (finish_reason: length) cut a tool call');

      // A text answer cut by the limit is still an answer (the caller's own maxTokens).
      body = stream
        ? sse([chunk({ content: 'Partial' }), chunk({}, 'length'), '[DONE]'])
        : JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Partial' }, finish_reason: 'length' }] });
      const r = await collect(providers.get('provider_c')!.startSession(request({}, { stream, tools: TOOLS })));
      assert.equal(r.text, 'Partial');
      assert.equal(r.end.finishReason, 'length');
    });
  }

  // A reasoning model can spend the whole maxTokens on reasoning: the limit ends the answer before it had
  // any text. That ended as an empty `done.text`, stored as an empty assistant message, with nothing to say why.
  for (const stream of [true, false]) {
    test(`the token limit reached before any answer text fails the round, every provider (${stream ? 'streamed' : 'whole'})`, async () => {
      type = stream ? 'text/event-stream' : 'application/json';
      const limit = resp('incomplete', { incomplete_details: { reason: 'max_output_tokens' }, output: [{ id: 'rs_1', type: 'reasoning', summary: [] }] });
      body = stream
        ? responses([
            { type: 'response.output_item.added', sequence_number: 0, output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } },
            { type: 'response.incomplete', sequence_number: 1, response: limit },
          ])
        : JSON.stringify(limit);
      const a = await failure(providers.get('provider_a')!.startSession(request({}, { stream })));
      assert.equal(a.message, 'provider_a reached the token limit (max_output_tokens) before any answer text');

      for (const name of ['provider_c', 'provider_d'] as const) {
        body = stream
          ? sse([chunk({ role: 'assistant', content: '' }), chunk({}, 'length'), '[DONE]'])
          : JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'length' }] });
        const c = await failure(providers.get(name)!.startSession(request({}, { stream })));
        assert.equal(c.message, `${name} reached the token limit (finish_reason: length) before any answer text`);
      }

      const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } };
      body = stream
        ? sse(
            [
              { type: 'message_start', message },
              { type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 1 } },
              { type: 'message_stop' },
            ],
            (f) => f.type,
          )
        : JSON.stringify({ ...message, stop_reason: 'max_tokens' });
      const b = await failure(providers.get('provider_b')!.startSession(request({}, { stream })));
      assert.equal(b.message, 'provider_b reached the token limit (stop_reason: max_tokens) before any answer text');
    });
  }

  // A proxy or CDN in front of a provider answers with its own HTML page (Cloudflare's block page is 403).
  // Its whole markup, scripts and all, was the run's error: shown to the client and stored on the LlmCall.
  test('an HTML error page reads as its title; an over-long provider message is cut', async () => {
    status = 403;
    type = 'text/html';
    const page = `<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title><script>${'var x=1;'.repeat(2000)}</script></head><body>blocked</body></html>`;
    for (const name of ['provider_a', 'provider_b', 'provider_c'] as const) {
      body = page;
      const e = await failure(providers.get(name)!.startSession(request({})));
      assert.ok(e instanceof ProviderError);
      assert.equal(e.status, 403);
      assert.equal(e.message, `${name} error 403: Attention Required! | Cloudflare (an HTML page)`);
    }
    body = '<html><body>no title</body></html>';
    const untitled = await failure(providers.get('provider_c')!.startSession(request({})));
    assert.equal(untitled.message, 'provider_c error 403: an HTML page');

    status = 400;
    type = 'application/json';
    body = JSON.stringify({ error: { message: 'y'.repeat(5000), type: 'invalid_request_error' } });
    const long = await failure(providers.get('provider_c')!.startSession(request({})));
    assert.equal(long.message, `provider_c error 400: ${'y'.repeat(1000)}…`);
  });

  test('streams that close without their terminal event fail instead of passing as complete', async () => {
    body = responses([{ type: 'response.output_text.delta', sequence_number: 0, item_id: 'm', output_index: 0, content_index: 0, delta: 'Hal' }]);
    const a = await failure(providers.get('provider_a')!.startSession(request({})));
    assert.equal(a.message, 'provider_a stream ended before the response was complete');

    body = sse([chunk({ content: 'Hal' })]);
    const c = await failure(providers.get('provider_c')!.startSession(request({})));
    assert.equal(c.message, 'provider_c stream ended before the response was complete');

    body = sse(
      [
        { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 1, output_tokens: 1 } } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hal' } },
      ],
      (f) => f.type,
    );
    const b = await failure(providers.get('provider_b')!.startSession(request({})));
    assert.equal(b.message, 'provider_b stream ended before the response was complete');
  });

  test('provider_d: odd chunk shapes are skipped, text-bearing custom frames kept, its own tool calls ignored when offered no functions', async () => {
    body =
      `event: agent.tool\ndata: ${JSON.stringify({ tool: 'search', status: 'running' })}\n\n` +
      sse([
        null, 42, '"a string"', [], { choices: null }, { choices: [null] }, { choices: [{ delta: null }] },
        { choices: [{ delta: { content: 7, tool_calls: 'nope' } }] },
        chunk({ content: 'One ' }),
        { type: 'agent.message', text: 'two ' },
        { delta: { content: 'three' } },
        chunk({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'internal', arguments: '{}' } }] }),
        chunk({}, 'stop'),
        { choices: [], usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 } },
        '[DONE]',
      ]);
    const r = await collect(providers.get('provider_d')!.startSession(request({})));
    assert.equal(r.text, 'One two three');
    assert.deepEqual(r.end.toolCalls, []);
    assert.deepEqual(r.end.usage, { inputTokens: 4, outputTokens: 3, totalTokens: 7 });
  });

  test('provider_d: a frame that is not JSON at all ends the round with a clear ProviderError', async () => {
    body = sse([chunk({ content: 'One' }), 'keep-alive', chunk({}, 'stop')]);
    const e = await failure(providers.get('provider_d')!.startSession(request({})));
    assert.ok(e instanceof ProviderError);
    assert.match(e.message, /^provider_d sent an unreadable stream frame: /);
  });

  test('provider_c: tool-call fragments assemble by index; custom frames carry no text for c', async () => {
    body = sse([
      chunk({ role: 'assistant', content: 'Looking. ' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'web_search', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'fetch_url', arguments: '{"url":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"query":' } }] }),
      { type: 'agent.message', text: 'ignored' },
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }, { index: 1, function: { arguments: '"u"}' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ]);
    const r = await collect(providers.get('provider_c')!.startSession(request({}, { tools: TOOLS })));
    assert.equal(r.text, 'Looking. ');
    assert.deepEqual(r.end.toolCalls, [
      { callId: 'call_a', name: 'web_search', arguments: '{"query":"x"}' },
      { callId: 'call_b', name: 'fetch_url', arguments: '{"url":"u"}' },
    ]);
  });

  // Ollama, LiteLLM and Gemini's compatible endpoint give every parallel call index 0; only the id tells them
  // apart. Merged, the calls became one with `{…}{…}` arguments (no valid JSON) and the others were lost.
  test('provider_c: parallel calls that share an index but not an id stay separate calls', async () => {
    const call = (id: string, name: string, args: string) => ({ index: 0, id, type: 'function', function: { name, arguments: args } });
    body = sse([
      chunk({ tool_calls: [call('call_a', 'web_search', '{"query":"x"}')] }),
      chunk({ tool_calls: [call('call_b', 'fetch_url', '{"url":"u"}')] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ]);
    const whole = await collect(providers.get('provider_c')!.startSession(request({}, { tools: TOOLS })));
    assert.deepEqual(whole.end.toolCalls, [
      { callId: 'call_a', name: 'web_search', arguments: '{"query":"x"}' },
      { callId: 'call_b', name: 'fetch_url', arguments: '{"url":"u"}' },
    ]);

    // Fragmented: the id comes on each call's first fragment only; the same id repeated is the same call.
    body = sse([
      chunk({ tool_calls: [call('call_a', 'web_search', '')] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"query":' } }] }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { arguments: '"x' } }] }),
      // A server that stamps each fragment with a fresh id: without a name it begins no call.
      chunk({ tool_calls: [{ index: 0, id: 'call_zz', function: { arguments: '"}' } }] }),
      chunk({ tool_calls: [call('call_b', 'fetch_url', '')] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"url":"u"}' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ]);
    const pieces = await collect(providers.get('provider_c')!.startSession(request({}, { tools: TOOLS })));
    assert.deepEqual(pieces.end.toolCalls, whole.end.toolCalls);
  });

  test('chat completions: chunks before an error frame still arrive; nothing after [DONE] counts; a data-less event is ignored', async () => {
    // One response body, so these frames typically arrive in a single socket read.
    body = sse([chunk({ content: 'One ' }), chunk({ content: 'two' }), { error: { message: 'Overloaded', type: 'server_error', code: 'overloaded' } }, chunk({}, 'stop')]);
    let seen = 0;
    const e = await failure(providers.get('provider_c')!.startSession(request({})), (n) => (seen = n));
    assert.equal(seen, 2);
    assert.ok(e instanceof ProviderError);
    assert.equal(e.message, 'provider_c stream error (overloaded): Overloaded');

    body = sse([chunk({ content: 'Done' }), chunk({}, 'stop'), '[DONE]', chunk({ content: ' late' }), 'not json', { error: { message: 'late' } }]);
    const r = await collect(providers.get('provider_c')!.startSession(request({})));
    assert.equal(r.text, 'Done');
    assert.equal(r.end.finishReason, 'stop');

    // An SSE event without any data line is not dispatched (the SSE spec; eventsource-parser).
    body = 'event: agent.heartbeat\n\n' + sse([chunk({ content: 'x' }), chunk({}, 'stop')]);
    const d = await collect(providers.get('provider_d')!.startSession(request({})));
    assert.equal(d.text, 'x');
  });

  test('provider_b: only named events count (pings and data-only frames are skipped)', async () => {
    const start = { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 1, output_tokens: 1 } } };
    const delta = (text: string) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });
    body =
      sse([start, { type: 'ping' }, delta('Hal')], (f) => f.type) +
      sse([delta(' unnamed')]) +
      sse([delta('lo'), { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }, { type: 'message_stop' }], (f) => f.type);
    const r = await collect(providers.get('provider_b')!.startSession(request({})));
    assert.equal(r.text, 'Hallo');
    assert.equal(r.end.finishReason, 'end_turn');
    assert.deepEqual(r.end.usage, { inputTokens: 1, outputTokens: 2, totalTokens: 3 });
  });

  // Gateways and compatible servers answer some failures with status 200 and an error body; the SDKs throw
  // only for a non-2xx, so the adapter must not read it as an empty answer.
  const ERROR_BODIES = {
    provider_a: [{ error: { message: 'upstream model overloaded', type: 'server_error', code: null } }, 'provider_a response error (server_error): upstream model overloaded'],
    provider_b: [{ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'provider_b response error (overloaded_error): Overloaded'],
    provider_c: [{ error: { message: 'upstream model overloaded', type: 'server_error' } }, 'provider_c response error (server_error): upstream model overloaded'],
    provider_d: [{ error: 'agent unavailable' }, 'provider_d response error: agent unavailable'],
  } as const;
  for (const [name, [errorBody, message]] of Object.entries(ERROR_BODIES) as [ProviderName, (typeof ERROR_BODIES)[ProviderName]][]) {
    for (const stream of [false, true]) {
      test(`${name}: a 200 whose JSON body is an error fails with the provider's message (${stream ? 'streamed' : 'whole'})`, async () => {
        type = 'application/json';
        body = JSON.stringify(errorBody);
        const e = await failure(providers.get(name)!.startSession(request({}, { stream })));
        assert.ok(e instanceof ProviderError);
        assert.equal(e.message, message);
      });
    }
  }

  test('a whole 200 without its answer field fails, quoting the body; a streamed one with JSON that is no error says so', async () => {
    type = 'application/json';
    body = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] });
    const c = await failure(providers.get('provider_c')!.startSession(request({}, { stream: false })));
    assert.equal(c.message, `provider_c response has no choices: ${body}`);
    body = JSON.stringify({ id: 'resp_1', status: 'completed' });
    const a = await failure(providers.get('provider_a')!.startSession(request({}, { stream: false })));
    assert.equal(a.message, `provider_a response has no output: ${body}`);
    body = JSON.stringify({ id: 'msg_1', type: 'message', stop_reason: 'end_turn' });
    const b = await failure(providers.get('provider_b')!.startSession(request({}, { stream: false })));
    assert.equal(b.message, `provider_b response has no content: ${body}`);
    body = JSON.stringify({ detail: 'x'.repeat(300) });
    const long = await failure(providers.get('provider_c')!.startSession(request({}, { stream: false })));
    assert.equal(long.message, `provider_c response has no choices: ${body.slice(0, 200)}…`);

    body = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }] });
    const streamed = await failure(providers.get('provider_c')!.startSession(request({})));
    assert.equal(streamed.message, `provider_c sent JSON instead of an event stream: ${body}`);
  });
});
