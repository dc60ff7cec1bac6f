// OTEL_GENAI_CAPTURE_CONTENT=true (docs/operations.md, "Traces and GenAI metrics"): the provider
// call's span records the prompt and the answer, and a tool's span its arguments and result; the
// operator asked for it (traces.test.ts pins that nothing is recorded otherwise).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type TestServer, waitFor } from '../helpers/server.ts';
import { startOtlpReceiver, traceTo, type OtlpReceiver } from '../helpers/otlp-receiver.ts';

describe('traces with content captured', () => {
  let receiver: OtlpReceiver;
  let t: TestServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    traceTo(receiver, { OTEL_GENAI_CAPTURE_CONTENT: 'true' });
    t = await startTestServer({ actorThreads: 1 });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('records the prompt, the answer and the tool call on their spans', async () => {
    const prompt = sim({ tools: [{ name: 'web_search', args: { query: 'tide pools' } }], reply: 'anemones and crabs' }, 'what lives in a tide pool?');
    const r = await t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: ['web_search'], messages: [{ role: 'user', content: prompt }] });
    assert.equal(r.events.at(-1)!.event, 'done');
    const traceId = r.headers.get('x-trace-id')!;
    const calls = () => receiver.spans.filter((s) => s.traceId === traceId && s.kind === 3 /* CLIENT */ && s.name === 'chat m');
    await waitFor(() => calls().length === 2 && receiver.spans.some((s) => s.traceId === traceId && s.name === 'execute_tool web_search'), 10_000, 'the provider calls and the tool');
    const [first, second] = calls().sort((a, b) => Number(a.attributes['gen_ai.round']) - Number(b.attributes['gen_ai.round']));
    assert.match(String(first!.attributes['gen_ai.input.messages']), /what lives in a tide pool\?/);
    assert.match(String(second!.attributes['gen_ai.output.messages']), /anemones and crabs/);
    const tool = receiver.spans.find((s) => s.traceId === traceId && s.name === 'execute_tool web_search')!;
    assert.deepEqual(JSON.parse(String(tool.attributes['gen_ai.tool.call.arguments'])), { query: 'tide pools' });
    assert.equal(typeof tool.attributes['gen_ai.tool.call.result'], 'string');
  });
});
