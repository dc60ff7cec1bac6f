// provider_b (Messages API) against the simulator.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { isAbortError } from '../../src/providers/errors.ts';
import { DEFAULT_MAX_TOKENS } from '../../src/providers/provider-b.ts';
import { ProviderError, type ProviderAdapter } from '../../src/providers/types.ts';
import { abortMidStream, collect, failure, PNG, request, setup, TOOLS, type Sim } from './helpers.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/provider-b', () => {
  let sim: Sim;
  let b: ProviderAdapter;
  const bodies = () => sim.requests.filter((r) => r.upstream === 'provider_b' && r.path.endsWith('/v1/messages')).map((r) => r.body);

  before(async () => {
    const s = await setup();
    sim = s.sim;
    b = s.get('provider_b');
  });
  after(() => sim.close());
  beforeEach(() => sim.clearRequests());

  for (const stream of [true, false]) {
    test(`text and usage (${stream ? 'streamed' : 'whole'})`, async () => {
      const r = await collect(b.startSession(request({ reply: 'A red square.', deltas: 4, usage: { input: 20, output: 6 } }, { stream, temperature: 0.2 })));
      assert.equal(r.text, 'A red square.');
      assert.equal(r.deltas, stream ? 4 : 1);
      assert.deepEqual(r.end.usage, { inputTokens: 20, outputTokens: 6, totalTokens: 26 });
      assert.equal(r.end.finishReason, 'end_turn');
      assert.deepEqual(r.end.toolCalls, []);
      const raw = r.end.raw as Record<string, unknown>;
      assert.match(String(raw.id), /^msg_/);
      if (!stream) assert.equal(raw.type, 'message');
      const [body] = bodies();
      assert.equal(body.max_tokens, DEFAULT_MAX_TOKENS);
      assert.equal(body.temperature, 0.2);
    });
  }

  test('sends the functions it is offered (a client’s) as Messages tools, none otherwise; maxTokens becomes max_tokens', async () => {
    await collect(b.startSession(request({ reply: 'ok' }, { tools: TOOLS, maxTokens: 99 })));
    await collect(b.startSession(request({ reply: 'ok' })));
    const [offered, none] = bodies();
    assert.deepEqual(offered.tools.map((t: { name: string; input_schema: { type: string } }) => [t.name, t.input_schema.type]), TOOLS.map((t) => [t.name, 'object']));
    assert.ok(!('tool_choice' in offered));
    assert.equal(offered.max_tokens, 99);
    assert.ok(!('tools' in none));
  });

  test('system goes to `system`; same-role runs merge; tool history becomes user text', async () => {
    const req = request({ echoSystem: true }, { stream: false });
    req.messages = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'answer' },
      { role: 'tool', content: 'result text', name: 'fetch_url' },
      { role: 'system', content: 'Cite sources.' },
      ...req.messages,
    ];
    const r = await collect(b.startSession(req));
    assert.equal(r.text, 'SYSTEM:Be terse.\n\nCite sources.');
    const [body] = bodies();
    // The system prompt and the history before the last user turn are the stable prefix, cached (prompt caching).
    assert.deepEqual(body.system, [{ type: 'text', text: 'Be terse.\n\nCite sources.', cache_control: { type: 'ephemeral' } }]);
    assert.deepEqual(body.messages.map((m: { role: string }) => m.role), ['user', 'assistant', 'user']);
    assert.deepEqual(body.messages[1].content, [{ type: 'text', text: 'answer', cache_control: { type: 'ephemeral' } }]);
    assert.ok(body.messages[2].content.every((b: Record<string, unknown>) => !('cache_control' in b)), 'the new turn is not part of the prefix');
    assert.equal(body.messages[2].content[0].text, 'Tool result (fetch_url):\nresult text');
    assert.equal(body.messages[2].content.length, 2);
  });

  test('attachments go as base64 image blocks and text blocks', async () => {
    const req = request({ echoInput: true });
    req.messages[0]!.attachments = [
      { kind: 'image', id: 'i1', filename: 'dot.png', mimeType: 'image/png', sizeBytes: 70, dataUrl: PNG },
      { kind: 'text', id: 't1', filename: 'a.csv', mimeType: 'text/csv', sizeBytes: 3, text: '1,2', truncated: true },
    ];
    const r = await collect(b.startSession(req));
    const echo = JSON.parse(r.text);
    assert.equal(echo.attachments[0].type, 'image');
    assert.equal(echo.attachments[0].mediaType, 'image/png');
    const content = bodies()[0].messages[0].content;
    assert.deepEqual(content[0], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.slice(PNG.indexOf(',') + 1) } });
    assert.equal(content[1].type, 'text');
    assert.match(content[1].text, /^Attached file a\.csv \(text\/csv\) \[truncated[^\]]*\]:\n1,2$/);
    assert.equal(content[2].type, 'text');
  });

  test('HTTP errors keep their status (429, 529 after retries)', async () => {
    const e = await failure(b.startSession(request({ status: 429, failAttempts: 5, retryAfterMs: 1 })));
    assert.ok(e instanceof ProviderError);
    assert.equal(e.status, 429);
    assert.match(e.message, /^provider_b error 429: Number of request tokens/);

    const o = await failure(b.startSession(request({ status: 529, retryAfterMs: 1 }, { stream: false })));
    assert.equal((o as ProviderError).status, 529);
    assert.equal(o.message, 'provider_b error 529: Overloaded');
  });

  test('a 5xx that clears on retry succeeds', async () => {
    const r = await collect(b.startSession(request({ status: 500, failAttempts: 1, retryAfterMs: 1, reply: 'fine' })));
    assert.equal(r.text, 'fine');
    // The service's retry: the same request again (the SDK retries none).
    assert.deepEqual(sim.requests.map((x) => x.retryCount ?? '0'), ['0', '0']);
  });

  test('mid-stream error event and disconnect reject with ProviderError', async () => {
    let seen = 0;
    const ev = await failure(b.startSession(request({ deltas: 6, failAfter: 3, failMode: 'event' })), (n) => (seen = n));
    assert.equal(seen, 3);
    assert.ok(ev instanceof ProviderError);
    assert.equal(ev.status, undefined);
    assert.equal(ev.message, 'provider_b stream error (overloaded_error): Overloaded');

    const cut = await failure(b.startSession(request({ deltas: 6, failAfter: 3, failMode: 'disconnect' })));
    assert.ok(cut instanceof ProviderError && !isAbortError(cut));
    assert.match(cut.message, /^provider_b stream (interrupted|ended)/);
  });

  test('aborting the signal stops the stream and reads as an abort', async () => {
    const err = await abortMidStream(sim, b, 3);
    assert.ok(isAbortError(err) && err instanceof ProviderError, String(err));
  });

  test('an already-aborted signal never reaches the provider', async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await failure(b.startSession(request({ reply: 'x' }, { signal: ac.signal, stream: false })));
    assert.ok(isAbortError(err));
    assert.equal(bodies().length, 0);
  });

  test('listModels returns every model of the paged list', async () => {
    assert.deepEqual(await b.listModels(), ['sim-b-large', 'sim-b-small', 'sim-b-haiku']);
  });
});
