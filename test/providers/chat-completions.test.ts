// provider_c and provider_d (Chat Completions) against the simulator.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { isAbortError } from '../../src/providers/errors.ts';
import { createProviders } from '../../src/providers/index.ts';
import { ProviderError, type ProviderAdapter, type ProviderName } from '../../src/providers/types.ts';
import { abortMidStream, collect, failure, PNG, request, setup, TOOLS, type Sim } from './helpers.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/chat-completions', () => {
  let sim: Sim;
  let get: (n: ProviderName) => ProviderAdapter;
  const bodies = (name: ProviderName) =>
    sim.requests.filter((r) => r.upstream === name && r.path.endsWith('/chat/completions')).map((r) => r.body);

  before(async () => {
    const s = await setup({ AGENT_PROVIDER_MODEL: 'agent-extra' });
    sim = s.sim;
    get = s.get;
  });
  after(() => sim.close());
  beforeEach(() => sim.clearRequests());

  for (const name of ['provider_c', 'provider_d'] as const) {
    for (const stream of [true, false]) {
      test(`${name}: text and usage (${stream ? 'streamed' : 'whole'})`, async () => {
        const r = await collect(get(name).startSession(request({ reply: 'Hello there', deltas: 3, usage: { input: 14, output: 3 } }, { stream, maxTokens: 50, temperature: 0 })));
        assert.equal(r.text, 'Hello there');
        assert.equal(r.deltas, stream ? 3 : 1);
        assert.deepEqual(r.end.usage, { inputTokens: 14, outputTokens: 3, totalTokens: 17 });
        assert.equal(r.end.finishReason, 'stop');
        const [body] = bodies(name);
        assert.equal(body.max_completion_tokens, 50);
        assert.equal(body.temperature, 0);
        if (stream) assert.deepEqual(body.stream_options, { include_usage: true });
        assert.ok(!('tools' in body));
      });
    }

    test(`${name}: attachments as image_url and text parts; system stays a system message`, async () => {
      const req = request({ echoInput: true });
      req.messages.unshift({ role: 'system', content: 'Be terse.' });
      req.messages[1]!.attachments = [
        { kind: 'image', id: 'i1', filename: 'dot.png', mimeType: 'image/png', sizeBytes: 70, dataUrl: PNG },
        { kind: 'text', id: 't1', filename: 'n.txt', mimeType: 'text/plain', sizeBytes: 2, text: 'hi', truncated: false },
      ];
      const r = await collect(get(name).startSession(req));
      assert.deepEqual(JSON.parse(r.text).parts, ['text', 'image_url', 'text']);
      const [body] = bodies(name);
      assert.deepEqual(body.messages[0], { role: 'system', content: 'Be terse.' });
      assert.deepEqual(body.messages[1].content.slice(1), [
        { type: 'image_url', image_url: { url: PNG, detail: 'auto' } },
        { type: 'text', text: 'Attached file n.txt (text/plain):\nhi' },
      ]);
    });
  }

  for (const stream of [true, false]) {
    test(`provider_c: tool round trip appends assistant tool_calls and tool messages (${stream ? 'streamed' : 'whole'})`, async () => {
      const script = { tools: [{ name: 'web_search', args: { query: 'a' } }, { name: 'web_search', args: { query: 'b' } }], reply: 'Both done.' };
      const session = get('provider_c').startSession(request(script, { stream, tools: TOOLS }));
      const first = await collect(session);
      assert.equal(first.end.finishReason, 'tool_calls');
      assert.deepEqual(first.end.toolCalls.map((c) => JSON.parse(c.arguments)), [{ query: 'a' }, { query: 'b' }]);
      const results = first.end.toolCalls.map((c, i) => ({ callId: c.callId, name: c.name, output: `result ${i}` }));
      const second = await collect(session, results);
      assert.equal(second.text, 'Both done.');

      const [b1, b2] = bodies('provider_c');
      assert.deepEqual(b1.tools, [{ type: 'function', function: TOOLS[0] }]);
      assert.deepEqual(b2.tools, b1.tools);
      assert.equal(b2.messages.length, b1.messages.length + 3);
      const [assistant, t0, t1] = b2.messages.slice(-3);
      assert.equal(assistant.role, 'assistant');
      assert.deepEqual(
        assistant.tool_calls,
        first.end.toolCalls.map((c) => ({ id: c.callId, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      );
      assert.deepEqual(t0, { role: 'tool', tool_call_id: results[0]!.callId, content: 'result 0' });
      assert.deepEqual(t1, { role: 'tool', tool_call_id: results[1]!.callId, content: 'result 1' });
    });
  }

  test('provider_d gets the functions it is offered (only an OpenAI-compatible client’s: service tools never reach it), none otherwise', async () => {
    const r = await collect(get('provider_d').startSession(request({ reply: 'agent answer' }, { tools: TOOLS })));
    assert.equal(r.text, 'agent answer');
    assert.deepEqual((bodies('provider_d')[0] as { tools: Array<{ function: { name: string } }> }).tools.map((t) => t.function.name), TOOLS.map((t) => t.name));
    await collect(get('provider_d').startSession(request({ reply: 'agent answer' })));
    assert.ok(!('tools' in bodies('provider_d')[1]!));
  });

  test('provider_d custom agent frames are dropped', async () => {
    const r = await collect(get('provider_d').startSession(request({ reply: 'clean text', deltas: 2, custom: true })));
    assert.equal(r.text, 'clean text');
    assert.equal(r.deltas, 2);
    assert.equal(r.end.finishReason, 'stop');
  });

  test('HTTP errors keep their status', async () => {
    const e = await failure(get('provider_c').startSession(request({ status: 401 })));
    assert.ok(e instanceof ProviderError);
    assert.equal(e.status, 401);
    assert.equal(e.message, 'provider_c error 401: Incorrect API key provided (simulated).');
    const e5 = await failure(get('provider_d').startSession(request({ status: 500, retryAfterMs: 1 }, { stream: false })));
    assert.equal((e5 as ProviderError).status, 500);
  });

  for (const name of ['provider_c', 'provider_d'] as const) {
    test(`${name}: mid-stream error frame and disconnect reject with ProviderError`, async () => {
      let seen = 0;
      const ev = await failure(get(name).startSession(request({ deltas: 5, failAfter: 2, failMode: 'event', custom: true })), (n) => (seen = n));
      assert.equal(seen, 2);
      assert.ok(ev instanceof ProviderError && !isAbortError(ev));
      assert.match(ev.message, new RegExp(`^${name} stream error \\(server_error\\): .*mid-stream failure`));

      const cut = await failure(get(name).startSession(request({ deltas: 5, failAfter: 2, failMode: 'disconnect' })));
      assert.ok(cut instanceof ProviderError && !isAbortError(cut));
      assert.match(cut.message, new RegExp(`^${name} stream (interrupted|ended)`));
    });
  }

  test('aborting the signal stops the stream and reads as an abort', async () => {
    const err = await abortMidStream(sim, get('provider_c'), 2);
    assert.ok(isAbortError(err) && err instanceof ProviderError, String(err));
  });

  test('model lists: c as listed; d adds AGENT_PROVIDER_MODEL and falls back to it when listing fails', async () => {
    assert.deepEqual(await get('provider_c').listModels(), ['sim-c-large', 'sim-c-small']);
    assert.deepEqual(await get('provider_d').listModels(), ['agent-extra', 'sim-d-agent', 'sim-d-small']);
    const control = (failModels: string[]) =>
      fetch(new URL('/__control', sim.urls.provider_a), { method: 'POST', body: JSON.stringify({ failModels }) });
    await control(['provider_c', 'provider_d']);
    try {
      assert.deepEqual(await get('provider_d').listModels(), ['agent-extra']);
      await assert.rejects(get('provider_c').listModels(), (e: unknown) => e instanceof ProviderError && e.status === 500);
      const bare = createProviders({ PROVIDER_TIMEOUT_MS: 5000, AGENT_PROVIDER_API_KEY: 'k', AGENT_PROVIDER_API_BASE_URL: sim.urls.provider_d });
      await assert.rejects(bare.get('provider_d')!.listModels(), ProviderError);
    } finally {
      await control([]);
    }
  });
});
