// Traces (docs/operations.md, "Traces and GenAI metrics"): the spans a stream sends to an OTLP receiver form one trace
// with the right parents, from the HTTP request through the run (in an actor thread) to its provider
// calls, its tool and its database statement; an incoming traceparent is continued; an attach links to
// the run it follows; no prompt or answer text is recorded unless asked.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type TestServer, waitFor } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';
import { startOtlpReceiver, traceTo, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';

const SECRET = 'the-prompt-text-nobody-may-see';

describe('traces', () => {
  let receiver: OtlpReceiver;
  let t: TestServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    traceTo(receiver, { OTEL_SERVICE_NAME: 'css-under-test' });
    // Two actor threads: the run's work is traced in a thread of its own.
    t = await startTestServer({ actorThreads: 2 });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);
  const one = (spans: ReceivedSpan[], name: string): ReceivedSpan => {
    const found = spans.filter((s) => s.name === name);
    assert.equal(found.length, 1, `one span ${name} in ${JSON.stringify(spans.map((s) => s.name))}`);
    return found[0]!;
  };

  it('a stream with a tool round is one trace: request, run, provider calls, tool, database', async () => {
    const script = sim({ tools: [{ name: 'web_search', args: { query: 'tide pools' } }], reply: 'a b c' }, SECRET);
    const r = await t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: ['web_search'], messages: [{ role: 'user', content: script }] });
    assert.equal(r.events.at(-1)!.event, 'done', JSON.stringify(r.events));
    const traceId = r.headers.get('x-trace-id')!;
    assert.match(traceId, /^[0-9a-f]{32}$/);
    // The run's span ends with the run, after the request's: wait for both provider calls' and the run's.
    await waitFor(() => inTrace(traceId).filter((s) => s.name === 'chat m').length === 3, 10_000, 'the run and its two provider calls');
    const spans = inTrace(traceId);
    const request = one(spans, 'POST /v1/chat-completions/stream');
    assert.equal(request.parentSpanId, '');
    assert.equal(request.attributes['http.response.status_code'], 200);
    assert.equal(request.service, 'css-under-test');
    // Each thread's exports say which thread made their spans (src/telemetry/resource.ts).
    assert.equal(request.thread, 'main');
    const run = spans.find((s) => s.name === 'chat m' && s.attributes['run.kind'] === 'chat')!;
    assert.equal(run.parentSpanId, request.spanId, 'the run is a child of the request that started it');
    const calls = spans.filter((s) => s.name === 'chat m' && s !== run);
    for (const c of calls) {
      assert.equal(c.parentSpanId, run.spanId, 'a provider call is a child of its run');
      assert.match(c.thread, /^actor \d+$/, 'a provider call is made in an actor thread');
      assert.equal(c.attributes['gen_ai.provider.name'], 'provider_c');
      assert.equal(c.attributes['gen_ai.request.model'], 'm');
      assert.equal(typeof c.attributes['gen_ai.usage.input_tokens'], 'number');
      assert.equal(typeof c.attributes['gen_ai.usage.output_tokens'], 'number');
    }
    assert.deepEqual(calls.map((c) => c.attributes['gen_ai.response.finish_reasons']).sort(), [['stop'], ['tool_calls']]);
    assert.equal(one(spans, 'execute_tool web_search').parentSpanId, run.spanId);
    assert.equal(one(spans, 'INSERT chats').parentSpanId, run.spanId, "the start's statement");
    assert.equal(one(spans, 'UPDATE llm_calls').parentSpanId, run.spanId, "the answer's statement");
    // No content unless OTEL_GENAI_CAPTURE_CONTENT=true: not the prompt, not the answer.
    assert.ok(!receiver.raw.some((b) => b.includes(SECRET)), 'the prompt was exported');
    assert.ok(spans.every((s) => s.attributes['gen_ai.input.messages'] === undefined && s.attributes['gen_ai.output.messages'] === undefined));
  });

  it("a title run's provider call is a child of its run, with the GenAI attributes and no content", async () => {
    const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
    const r = await t.call('POST', '/v1/chats/title/suggest', { chatId: chat.id, content: sim({ reply: 'Tide Pools', usage: { input: 21, output: 3 } }, SECRET) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const traceId = r.headers.get('x-trace-id')!;
    const call = () => inTrace(traceId).find((s) => s.kind === 3 /* CLIENT */ && s.name.startsWith('chat '));
    await waitFor(() => call() !== undefined && inTrace(traceId).some((s) => s.name === 'title'), 10_000, 'the title run and its provider call');
    const run = one(inTrace(traceId), 'title');
    assert.equal(run.parentSpanId, one(inTrace(traceId), 'POST /v1/chats/title/suggest').spanId);
    const c = call()!;
    assert.equal(c.parentSpanId, run.spanId, "the provider call is a child of the title's run");
    // TITLE_MODEL's default.
    assert.equal(c.name, 'chat gpt-4.1-nano');
    assert.deepEqual([c.attributes['gen_ai.operation.name'], c.attributes['gen_ai.provider.name'], c.attributes['gen_ai.request.model']], ['chat', 'provider_a', 'gpt-4.1-nano']);
    assert.deepEqual([c.attributes['gen_ai.usage.input_tokens'], c.attributes['gen_ai.usage.output_tokens']], [21, 3]);
    assert.deepEqual(c.attributes['gen_ai.response.finish_reasons'], ['completed'], "the Responses API's status");
    assert.ok(!receiver.raw.some((b) => b.includes(SECRET) || b.includes('Tide Pools')), 'the prompt or the title was exported');
  });

  it("a search run's engine calls are children of its span", async () => {
    const search = (await t.call('POST', '/v1/searches', { query: 'tide pools' })).body.search;
    const r = await t.call('POST', `/v1/searches/${search.id}/run`, {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const traceId = r.headers.get('x-trace-id')!;
    await waitFor(() => inTrace(traceId).filter((s) => s.name.startsWith('engine_a ')).length === 2 && inTrace(traceId).some((s) => s.name === 'search'), 10_000, 'the run and its engine calls');
    const request = one(inTrace(traceId), 'POST /v1/searches/:searchId/run');
    const run = one(inTrace(traceId), 'search');
    assert.equal(run.parentSpanId, request.spanId);
    assert.equal(one(inTrace(traceId), 'engine_a search').parentSpanId, run.spanId);
    assert.equal(one(inTrace(traceId), 'engine_a answer').parentSpanId, run.spanId);
  });

  it("a provider call's retries are events of its span", async () => {
    const body = { provider: 'provider_b', model: 'sim-b-small', messages: [{ role: 'user', content: sim({ reply: 'after a retry', status: 529, failAttempts: 1 }) }] };
    const r = await t.call('POST', '/v1/chat-completions', body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const traceId = r.headers.get('x-trace-id')!;
    const call = () => inTrace(traceId).find((s) => s.name === 'chat sim-b-small' && s.kind === 3 /* CLIENT */);
    await waitFor(() => call() !== undefined, 10_000, 'the provider call');
    // On the provider call's span, or on the call span the Anthropic SDK makes below it.
    const within = inTrace(traceId).filter((s) => s === call() || s.parentSpanId === call()!.spanId);
    assert.deepEqual(within.flatMap((s) => s.events).map((e) => [e.name, e.attributes['http.request.resend_count']]), [['gen_ai.client.retry', 1]]);
    assert.ok(!receiver.raw.some((b) => b.includes('after a retry')), 'no content from the SDK either');
    // An actor thread keeps no active context: a span made there without naming its parent (provider_b's
    // SDK's own, which it ended before the call's) would be the root of a trace of its own.
    const orphans = receiver.spans.filter((s) => s.thread.startsWith('actor') && s.parentSpanId === '');
    assert.ok(receiver.spans.some((s) => s.thread.startsWith('actor')), 'spans from actor threads, named as such');
    assert.deepEqual(orphans.map((s) => s.name), [], 'an actor thread made a span outside any trace');
  });

  it('sends the GenAI histograms through OTLP too, under their own names', async () => {
    const body = { provider: 'provider_c', model: 'otlp-metrics', enabledTools: [], messages: [{ role: 'user', content: sim({ reply: 'a b', usage: { input: 12, output: 2 } }) }] };
    assert.equal((await t.call('POST', '/v1/chat-completions', body)).status, 200);
    // Cumulative points: the latest export holds the call.
    const point = (name: string, type?: string) =>
      [...receiver.points].reverse().find((p) => p.name === name && p.attributes['gen_ai.request.model'] === 'otlp-metrics' && (type === undefined || p.attributes['gen_ai.token.type'] === type));
    await waitFor(() => point('gen_ai.client.token.usage', 'output') !== undefined, 10_000, 'the metrics export');
    const duration = point('gen_ai.client.operation.duration')!;
    assert.deepEqual([duration.unit, duration.count, duration.attributes['gen_ai.provider.name'], duration.attributes['gen_ai.operation.name']], ['s', 1, 'provider_c', 'chat']);
    assert.deepEqual([point('gen_ai.client.token.usage', 'input')!.sum, point('gen_ai.client.token.usage', 'output')!.sum], [12, 2]);
    assert.equal(point('gen_ai.client.operation.time_to_first_chunk')!.count, 1);
  });

  it("continues an incoming traceparent: the request's span is the caller's span's child", async () => {
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const r = await t.call('POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'hi' }] }, { traceparent: `00-${callerTrace}-${callerSpan}-01` });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-trace-id'), callerTrace);
    await waitFor(() => inTrace(callerTrace).some((s) => s.attributes['run.kind'] === 'chat'), 10_000, "the run's span");
    const request = one(inTrace(callerTrace), 'POST /v1/chat-completions');
    assert.equal(request.parentSpanId, callerSpan);
    // A malformed one starts a new trace instead.
    const bad = await t.call('GET', '/v1/chats', undefined, { traceparent: 'not-a-traceparent' });
    assert.match(bad.headers.get('x-trace-id')!, /^[0-9a-f]{32}$/);
    assert.notEqual(bad.headers.get('x-trace-id'), callerTrace);
  });

  it('an attach links to the run it follows', async () => {
    const gate = gateName();
    const first = await t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ reply: 'one two three', deltas: 3, gate, gateAfter: 1 }) }] }, { stopAfter: (e) => e.event === 'delta' });
    const runTrace = first.headers.get('x-trace-id')!;
    const chatId = first.events[0]!.data.chatId;
    const att = await t.stream(`/v1/chats/${chatId}/stream/attach`, undefined, { stopAfter: (e) => (e.event === 'meta' && t.sim.openGate(gate), false) });
    assert.equal(att.events.at(-1)!.event, 'done');
    const attachTrace = att.headers.get('x-trace-id')!;
    await waitFor(() => inTrace(runTrace).some((s) => s.attributes['run.kind'] === 'chat') && inTrace(attachTrace).length > 0, 10_000, 'the run and the attach');
    const run = inTrace(runTrace).find((s) => s.attributes['run.kind'] === 'chat')!;
    const attach = one(inTrace(attachTrace), 'POST /v1/chats/:chatId/stream/attach');
    assert.deepEqual(attach.links.map((l) => [l.traceId, l.spanId]), [[run.traceId, run.spanId]]);
  });
});
