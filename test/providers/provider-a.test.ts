// provider_a (Responses API) against the simulator: what goes on the wire and how it is normalized.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { isAbortError } from '../../src/providers/errors.ts';
import { ProviderError, type ProviderAdapter } from '../../src/providers/types.ts';
import { abortMidStream, collect, failure, PNG, request, setup, TOOLS, type Sim } from './helpers.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/provider-a', () => {
  let sim: Sim;
  let a: ProviderAdapter;
  const bodies = () => sim.requests.filter((r) => r.upstream === 'provider_a' && r.path.endsWith('/responses')).map((r) => r.body);

  before(async () => {
    const s = await setup();
    sim = s.sim;
    a = s.get('provider_a');
  });
  after(() => sim.close());
  beforeEach(() => sim.clearRequests());

  for (const stream of [true, false]) {
    test(`text and usage (${stream ? 'streamed' : 'whole'})`, async () => {
      const r = await collect(a.startSession(request({ reply: 'Sunny and warm', deltas: 3, usage: { input: 11, output: 7 } }, { stream, maxTokens: 64, temperature: 0.3 })));
      assert.equal(r.text, 'Sunny and warm');
      assert.equal(r.deltas, stream ? 3 : 1);
      assert.deepEqual(r.end.usage, { inputTokens: 11, outputTokens: 7, totalTokens: 18 });
      assert.deepEqual(r.end.toolCalls, []);
      assert.equal(r.end.finishReason, 'completed');
      const raw = r.end.raw as Record<string, unknown>;
      assert.match(String(raw.id), /^resp_/);
      if (stream) assert.deepEqual(Object.keys(raw).sort(), ['id', 'model', 'status', 'usage']);
      else assert.equal(raw.object, 'response');
      const [body] = bodies();
      assert.equal(body.max_output_tokens, 64);
      assert.equal(body.temperature, 0.3);
      assert.equal(body.stream ?? false, stream);
      // No tools: no tools field at all, and nothing stored.
      assert.ok(!('tools' in body));
      assert.equal(body.store, false);
      assert.ok(!('previous_response_id' in body));
    });
  }

  test('system messages become joined instructions, the rest input messages', async () => {
    const req = request({ echoSystem: true }, { stream: false });
    req.messages = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
      { role: 'tool', content: '{"hits":1}', name: 'web_search' },
      { role: 'system', content: 'Cite sources.' },
      ...req.messages,
    ];
    const r = await collect(a.startSession(req));
    assert.equal(r.text, 'SYSTEM:Be terse.\n\nCite sources.');
    const [body] = bodies();
    assert.equal(body.instructions, 'Be terse.\n\nCite sources.');
    assert.deepEqual(body.input.map((m: { role: string }) => m.role), ['user', 'assistant', 'user', 'user']);
    assert.equal(body.input[2].content, 'Tool result (web_search):\n{"hits":1}');
  });

  test('attachments go as input_image and input_text parts', async () => {
    const req = request({ echoInput: true }, { stream: true });
    req.messages[0]!.attachments = [
      { kind: 'image', id: 'i1', filename: 'dot.png', mimeType: 'image/png', sizeBytes: 70, dataUrl: PNG },
      { kind: 'text', id: 't1', filename: 'notes.txt', mimeType: 'text/plain', sizeBytes: 5, text: 'hello', truncated: false },
    ];
    const r = await collect(a.startSession(req));
    const echo = JSON.parse(r.text);
    assert.deepEqual(echo.parts, ['input_text', 'input_image', 'input_text']);
    assert.equal(echo.attachments[0].type, 'input_image');
    assert.equal(echo.attachments[0].mediaType, 'image/png');
    const parts = bodies()[0].input[0].content;
    assert.deepEqual(parts[1], { type: 'input_image', image_url: PNG, detail: 'auto' });
    assert.deepEqual(parts[2], { type: 'input_text', text: 'Attached file notes.txt (text/plain):\nhello' });
  });

  for (const stream of [true, false]) {
    test(`tool round trip via previous_response_id (${stream ? 'streamed' : 'whole'})`, async () => {
      const req = request({ tools: [{ name: 'web_search', args: { query: 'weather' } }], reply: 'It is sunny.' }, { stream, tools: TOOLS });
      req.messages.unshift({ role: 'system', content: 'Use tools.' });
      const session = a.startSession(req);
      const first = await collect(session);
      assert.equal(first.text, '');
      assert.equal(first.end.toolCalls.length, 1);
      const call = first.end.toolCalls[0]!;
      assert.equal(call.name, 'web_search');
      assert.deepEqual(JSON.parse(call.arguments), { query: 'weather' });
      assert.ok(call.callId);

      const second = await collect(session, [{ callId: call.callId, name: call.name, output: 'sunny, 25C' }]);
      assert.equal(second.text, 'It is sunny.');
      assert.deepEqual(second.end.toolCalls, []);

      const [b1, b2] = bodies();
      assert.equal(b1.store, true);
      assert.deepEqual(b1.tools, [{ type: 'function', name: 'web_search', description: TOOLS[0]!.description, parameters: TOOLS[0]!.parameters, strict: false }]);
      assert.equal(b2.previous_response_id, (first.end.raw as { id: string }).id);
      assert.equal(b2.store, true);
      assert.deepEqual(b2.input, [{ type: 'function_call_output', call_id: call.callId, output: 'sunny, 25C' }]);
      assert.deepEqual(b2.tools, b1.tools);
      assert.equal(b2.instructions, 'Use tools.');
    });
  }

  test('HTTP errors keep their status; 5xx is retried by the service first (PROVIDER_RETRIES, the SDK retries none)', async () => {
    const e4 = await failure(a.startSession(request({ status: 400 })));
    assert.ok(e4 instanceof ProviderError);
    assert.equal(e4.status, 400);
    assert.match(e4.message, /^provider_a error 400: Simulated error with status 400/);

    sim.clearRequests();
    const e5 = await failure(a.startSession(request({ status: 503, retryAfterMs: 1 }, { stream: false })));
    assert.equal((e5 as ProviderError).status, 503);
    assert.match(e5.message, /^provider_a error 503: /);
    // Three identical calls: the first and PROVIDER_RETRIES (2) more, none of them an SDK retry.
    assert.deepEqual(sim.requests.map((r) => r.retryCount ?? '0'), ['0', '0', '0']);
  });

  test('mid-stream error event, response.failed and disconnect all reject with ProviderError', async () => {
    let seen = 0;
    const ev = await failure(a.startSession(request({ deltas: 5, failAfter: 2, failMode: 'event' })), (n) => (seen = n));
    assert.equal(seen, 2);
    assert.ok(ev instanceof ProviderError && !isAbortError(ev));
    assert.match(ev.message, /^provider_a stream error \(server_error\): .*mid-stream failure/);

    const failed = await failure(a.startSession(request({ deltas: 5, failAfter: 2, failMode: 'failed' })));
    assert.ok(failed instanceof ProviderError);
    assert.match(failed.message, /^provider_a response failed \(server_error\): .*mid-stream failure/);

    const cut = await failure(a.startSession(request({ deltas: 5, failAfter: 2, failMode: 'disconnect' })));
    assert.ok(cut instanceof ProviderError && !isAbortError(cut));
    assert.match(cut.message, /^provider_a stream (interrupted|ended)/);

    const whole = await failure(a.startSession(request({ failAfter: 0, failMode: 'failed' }, { stream: false })));
    assert.match(whole.message, /^provider_a response failed/);
  });

  test('aborting the signal stops the stream and reads as an abort', async () => {
    const err = await abortMidStream(sim, a, 2);
    assert.ok(isAbortError(err), String(err));
    assert.ok(err instanceof ProviderError);
  });

  test('listModels drops models the Responses call cannot serve', async () => {
    const ids = await a.listModels();
    assert.deepEqual(ids, ['gpt-4.1-nano', 'sim-a-large', 'sim-a-mini', 'sim-a-nano']);
  });
});
