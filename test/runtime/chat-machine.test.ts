// The chat run's machine without I/O: messages in, frames and storage commands out, through the real
// actor and mailbox. Each test plays one run the way its provider, tools and database would.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatBehavior, toolLimitMessage, type ChatRunRequest } from '../../actors/chat-run.ts';
import type { ChatMsg } from '../../actors/chat-protocol.ts';
import { RunError } from '../../actors/run-failure.ts';
import { ProviderError, type RoundEnd } from '../../src/providers/types.ts';
import { Actor } from '../../actors/runtime/actor.ts';
import { abortError, call, chatRequest, fakeDeps, FakeTimers, fakeTool, machine, RecordingSink, roundEnd, roundUsage } from '../helpers/fake-io.ts';

const request = chatRequest;
const usage = roundUsage;
const end = roundEnd;
const aborted = abortError;
const SHUTDOWN = 'run cancelled: server is shutting down';
const FENCED = 'run cancelled: this instance lost contact with the cluster';

function chat(opts: Parameters<typeof fakeDeps>[0] = {}, req: ChatRunRequest = request) {
  return machine(chatBehavior, req, fakeDeps(opts));
}

/** A run with web_search offered, started, its input stored. */
function withTools() {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  return m;
}

const deltas = (events: Array<[string, Record<string, unknown>]>) =>
  events
    .filter(([e]) => e === 'delta')
    .map(([, d]) => d.text)
    .join('');

test('a plain answer: meta, deltas as they come, the answer stored once the input is, then done', () => {
  const m = chat();
  m.tell({ t: 'start' });
  assert.deepEqual(
    m.commands.map((c) => c.c),
    ['prepare', 'round'],
  );
  m.tell({ t: 'text', round: 1, text: 'Hello' });
  m.tell({ t: 'text', round: 1, text: ' world' });
  m.tell({ t: 'round_end', round: 1, end: end() });
  assert.equal(m.sent('store_answer').length, 0, 'the answer waits for the input to be stored');
  m.tell({ t: 'prepared', runToken: 1 });
  assert.deepEqual(m.sent('store_answer'), [{ c: 'store_answer', callId: 'llm-1', chatId: 'chat-1', model: 'model-a', text: 'Hello world', usage, started: 0, stopped: false, runToken: 1 }]);
  assert.equal(m.sink.result, null, 'done waits for the answer to be stored');
  m.tell({ t: 'answer_stored' });
  assert.deepEqual(m.sink.names(), ['meta', 'delta', 'delta', 'done']);
  assert.deepEqual(m.sink.held, [true, false, false, false], 'only the first frame may wait to cross with the next');
  assert.deepEqual(m.sink.events().at(-1), ['done', { type: 'done', text: 'Hello world', usage }]);
  assert.equal(m.sink.ends, 1);
  assert.deepEqual(m.sink.result, {
    ok: true,
    value: { chatId: 'chat-1', callId: 'llm-1', provider: 'provider_a', model: 'model-a', text: 'Hello world', usage, cost: null, raw: { id: 'resp' }, stopped: false },
  });
});

test('a tool round: commentary held then dropped, tool_call before the answer, the hold released by its timer', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  m.tell({ t: 'text', round: 1, text: 'Let me look that up' });
  assert.equal(m.timers.pending.size, 1, 'the hold has its timer');
  m.tell({ t: 'round_end', round: 1, end: end([call('web_search', { query: 'x' })]) });
  assert.equal(m.timers.pending.size, 0, 'the round end cancels the hold timer');
  const [tool] = m.sent('tool');
  assert.deepEqual(tool && { ...tool, tool: tool.tool?.name, signal: tool.signal.aborted }, { c: 'tool', round: 1, index: 0, tool: 'web_search', name: 'web_search', args: { query: 'x' }, invalid: null, signal: false });
  m.timers.time += 1500;
  m.tell({ t: 'tool_done', round: 1, index: 0, output: 'found it', preview: 'found it' });
  const [store] = m.sent('store_tool');
  assert.equal(store?.chatId, 'chat-1');
  assert.deepEqual([store?.message.role, store?.message.content], ['tool', 'found it']);
  assert.deepEqual(m.sink.names(), ['meta', 'tool_call'], 'the terminal event waits for the tool message to be stored');
  m.tell({ t: 'tool_stored', round: 1, index: 0 });
  const [, second] = m.sent('round');
  assert.deepEqual(second && [second.round, second.results], [2, [{ callId: 'call-web_search', name: 'web_search', output: 'found it' }]]);
  m.tell({ t: 'text', round: 2, text: 'The answer' });
  assert.deepEqual(m.sink.names(), ['meta', 'tool_call', 'tool_call'], 'held while tool calls may still come');
  assert.equal(m.timers.fire(250), 1, 'the hold is TOOL_TEXT_HOLD_MS long');
  m.tell({ t: 'text', round: 2, text: ' is 42' });
  m.tell({ t: 'round_end', round: 2, end: end() });
  m.tell({ t: 'answer_stored' });
  const events = m.sink.events();
  assert.deepEqual(m.sink.names(), ['meta', 'tool_call', 'tool_call', 'delta', 'delta', 'done']);
  const base = { toolCallId: 'id-1', name: 'web_search', summary: 'web_search {"query":"x"}', args: { query: 'x' }, startedAt: new Date(0).toISOString() };
  assert.deepEqual(
    events.filter(([e]) => e === 'tool_call').map(([, d]) => d),
    [
      { ...base, status: 'initiated' },
      { ...base, status: 'completed', completedAt: new Date(1500).toISOString(), durationMs: 1500, resultPreview: 'found it' },
    ],
    'the id and the times are the runtime\'s: no randomness, no real clock',
  );
  assert.equal(deltas(events), 'The answer is 42', 'the first round\'s commentary is never shown');
  assert.equal(m.sent('store_answer')[0]?.text, 'The answer is 42');
});

test('512 held characters are let through without waiting for the timer', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'text', round: 1, text: 'x'.repeat(511) });
  assert.deepEqual(m.sink.names(), ['meta']);
  m.tell({ t: 'text', round: 1, text: 'y' });
  assert.equal(deltas(m.sink.events()), `${'x'.repeat(511)}y`);
  assert.equal(m.timers.pending.size, 0);
});

test('the hold\'s bound: the first delta goes out when the hold\'s timer message is handled, the rest as it comes', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'text', round: 1, text: 'The ' });
  m.tell({ t: 'text', round: 1, text: 'answer' });
  assert.deepEqual(m.sink.names(), ['meta'], 'held: the round may still end in tool calls');
  assert.deepEqual([...m.timers.pending.values()].map((t) => t.ms), [250], 'one timer, of TOOL_TEXT_HOLD_MS');
  assert.equal(m.timers.fire(250), 1);
  assert.deepEqual(m.sink.events().slice(1), [['delta', { type: 'delta', text: 'The answer' }]]);
  m.tell({ t: 'text', round: 1, text: ' is 42' });
  assert.deepEqual(m.sink.events().at(-1), ['delta', { type: 'delta', text: ' is 42' }], 'no hold once released');
});

test('text that arrives after the hold\'s age goes out even before its timer message is handled', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'text', round: 1, text: 'The ' });
  m.timers.time += 250;
  m.tell({ t: 'text', round: 1, text: 'answer' });
  assert.equal(deltas(m.sink.events()), 'The answer', 'a late timer (a busy loop) delays nothing');
  assert.equal(m.timers.pending.size, 0, 'the timer is cancelled');
});

test('a round whose provider begins a tool call: no hold to wait out, its commentary never shown, the tool call next', () => {
  const m = withTools();
  m.tell({ t: 'text', round: 1, text: 'Let me look that up' });
  m.tell({ t: 'round_hint', round: 1, hint: 'tool_call' });
  assert.equal(m.timers.pending.size, 0, 'the hold\'s timer is gone: the round has tool calls');
  m.timers.time += 10_000;
  m.tell({ t: 'text', round: 1, text: 'x'.repeat(600) });
  assert.deepEqual(m.sink.names(), ['meta'], 'neither the age nor the size lets commentary out');
  m.tell({ t: 'round_end', round: 1, end: end([call('web_search', { query: 'x' })]) });
  assert.deepEqual(m.sink.names(), ['meta', 'tool_call']);
});

test('a round that begins with a tool call holds nothing: its tool_call frames are the next frames', () => {
  const m = withTools();
  m.tell({ t: 'round_hint', round: 1, hint: 'tool_call' });
  assert.equal(m.timers.pending.size, 0);
  m.tell({ t: 'round_end', round: 1, end: end([call('web_search', { query: 'x' })]) });
  assert.deepEqual(m.sink.events().map(([e, d]) => [e, d.status]), [['meta', undefined], ['tool_call', 'initiated']]);
});

test('a round whose text item is known complete without a call lets its text out at once', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'text', round: 1, text: 'Sunny' });
  assert.deepEqual(m.sink.names(), ['meta']);
  m.tell({ t: 'round_hint', round: 1, hint: 'text_end' });
  assert.deepEqual(m.sink.events().slice(1), [['delta', { type: 'delta', text: 'Sunny' }]], 'out before the round ends');
  assert.equal(m.timers.pending.size, 0, 'the hold\'s timer is cancelled');
  m.tell({ t: 'text', round: 1, text: ' today' });
  assert.equal(deltas(m.sink.events()), 'Sunny today');
});

test('a message the run does not expect in its state is dropped and reported, logged by the service', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'round_hint', round: 2, hint: 'tool_call' });
  m.tell({ t: 'answer_stored' });
  m.tell({ t: 'text', round: 1, text: 'still streaming' });
  m.timers.fire(250);
  assert.equal(deltas(m.sink.events()), 'still streaming', 'neither changed the run');
  assert.deepEqual(m.unexpected.splice(0), ["'round_hint' in state 'streaming'", "'answer_stored' in state 'streaming'"]);

  // Without a test's hook (the service), the runtime logs it as a warning.
  const sink = new RecordingSink();
  const timers = new FakeTimers();
  const actor = new Actor('run-2', { ...chatBehavior, execute: () => new Promise<never>(() => {}) }, request, fakeDeps(), sink, { timers, newId: () => 'id' });
  actor.tell({ t: 'start' });
  actor.tell({ t: 'call_failed' });
  assert.deepEqual(sink.logs, ["warn: run run-2: a 'call_failed' message in state 'streaming' was not expected; dropped"]);
});

test('a round said to begin a tool call that ends without one still shows its text', () => {
  const m = withTools();
  m.tell({ t: 'round_hint', round: 1, hint: 'tool_call' });
  m.tell({ t: 'text', round: 1, text: 'no call after all' });
  m.tell({ t: 'round_end', round: 1, end: end() });
  assert.equal(m.sent('store_answer')[0]?.text, 'no call after all');
  assert.equal(deltas(m.sink.events()), 'no call after all');
});

test('the tool-round limit ends the answer with its message', () => {
  const m = chat({ tools: [fakeTool('web_search')], maxToolRounds: 1 });
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  m.tell({ t: 'round_end', round: 1, end: end([call('web_search', {})]) });
  m.tell({ t: 'tool_done', round: 1, index: 0, output: 'r' });
  m.tell({ t: 'tool_stored', round: 1, index: 0 });
  m.tell({ t: 'round_end', round: 2, end: end([call('web_search', {})]) });
  assert.equal(m.sent('tool').length, 1, 'no second tool round');
  assert.equal(m.sent('store_answer')[0]?.text, toolLimitMessage(1));
});

test("a run that fails mid-tool-round ends the round's other tools", () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  m.tell({ t: 'round_end', round: 1, end: end([call('web_search', { query: 'a' }), call('web_search', { query: 'b' })]) });
  m.tell({ t: 'tool_done', round: 1, index: 0, output: 'r' });
  assert.equal(m.sent('tool')[1]!.signal.aborted, false);
  m.tell({ t: 'tool_store_failed', round: 1, index: 0, error: new Error('the database is gone') });
  assert.ok(m.sent('tool')[1]!.signal.aborted, 'the second tool is told to end with its run');
  assert.equal(m.sent('fail_call').length, 1);
});

test('a stop mid-tool: the tool fails, the next round is cut, the partial answer is stored stopped', () => {
  const m = chat({ tools: [fakeTool('web_search')] });
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  m.tell({ t: 'round_end', round: 1, end: end([call('web_search', {})]) });
  m.tell({ t: 'stop', message: 'stopped by request' });
  assert.ok(m.sent('tool')[0]!.signal.aborted, 'the tool sees the stop through its signal');
  m.tell({ t: 'tool_done', round: 1, index: 0, output: 'Error: aborted', error: 'aborted' });
  m.tell({ t: 'tool_stored', round: 1, index: 0 });
  m.tell({ t: 'round_failed', round: 2, error: aborted() });
  assert.deepEqual(
    m.sent('store_answer').map((c) => [c.text, c.stopped]),
    [['', true]],
  );
  m.tell({ t: 'answer_stored' });
  assert.deepEqual(m.sink.names(), ['meta', 'tool_call', 'tool_call', 'done']);
  assert.equal(m.sink.events()[2]![1].status, 'failed');
  assert.deepEqual(m.sink.events().at(-1), ['done', { type: 'done', text: '', usage, stopped: true }]);
  assert.equal(m.sink.result?.ok && (m.sink.result.value as { stopped: boolean }).stopped, true);
  assert.equal(m.sent('fail_call').length, 0);
});

test('a provider error mid-stream: the LlmCall is marked failed once its insert settled, then error', () => {
  const m = chat();
  m.tell({ t: 'start' });
  m.tell({ t: 'text', round: 1, text: 'partial' });
  m.tell({ t: 'round_failed', round: 1, error: new ProviderError('provider_a returned 500', 500) });
  assert.equal(m.sent('fail_call').length, 0, 'not before the insert settled');
  m.tell({ t: 'prepared', runToken: 1 });
  assert.deepEqual(
    m.sent('fail_call').map((c) => [c.callId, c.error]),
    [['llm-1', 'provider_a returned 500']],
  );
  assert.equal(m.sink.result, null);
  m.tell({ t: 'call_failed' });
  assert.deepEqual(m.sink.names(), ['meta', 'delta', 'error']);
  assert.deepEqual(m.sink.events().at(-1), ['error', { type: 'error', message: 'provider_a returned 500' }]);
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'provider_error', message: 'provider_a returned 500' });
  assert.equal(m.sent('store_answer').length + m.sent('store_interrupted').length, 0);
});

test('a storage failure is the cause even when it surfaces as the provider call\'s abort', () => {
  const m = chat();
  m.tell({ t: 'start' });
  m.tell({ t: 'prepare_failed', error: new RunError('chat not found', 'not_found') });
  m.tell({ t: 'round_failed', round: 1, error: aborted() });
  m.tell({ t: 'call_failed' });
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'not_found', message: 'chat not found' });
});

for (const [why, message] of [
  ['shutdown', SHUTDOWN],
  ['fenced', FENCED],
] as const) {
  test(`a ${why} cancel keeps the streamed text as an interrupted answer and ends with the cancel's message`, () => {
    const m = chat();
    m.tell({ t: 'start' });
    m.tell({ t: 'prepared', runToken: 1 });
    m.tell({ t: 'text', round: 1, text: 'Half an ans' });
    m.tell({ t: 'cancel', why, message });
    m.tell({ t: 'round_failed', round: 1, error: aborted() });
    const [store] = m.sent('store_interrupted');
    assert.deepEqual(store, { c: 'store_interrupted', callId: 'llm-1', chatId: 'chat-1', model: 'model-a', text: 'Half an ans', usage: null, started: 0, error: message, runToken: 1 });
    m.tell({ t: 'interrupted_stored', error: null });
    assert.equal(m.sent('fail_call').length, 0, 'the store failed the call in the same statement');
    assert.deepEqual(m.sink.events().at(-1), ['error', { type: 'error', message }]);
    assert.deepEqual(m.sink.result, { ok: false, outcome: 'cancelled', message });
    assert.equal(m.sent('store_answer').length, 0);
  });

  test(`a ${why} cancel whose interrupted answer cannot be stored fails the LlmCall alone`, () => {
    const m = chat();
    m.tell({ t: 'start' });
    m.tell({ t: 'prepared', runToken: 1 });
    m.tell({ t: 'text', round: 1, text: 'Half' });
    m.tell({ t: 'cancel', why, message });
    m.tell({ t: 'round_failed', round: 1, error: aborted() });
    m.tell({ t: 'interrupted_stored', error: new Error('refused') });
    assert.deepEqual(m.sent('fail_call').map((c) => c.error), [message]);
    m.tell({ t: 'call_failed' });
    assert.deepEqual(m.sink.events().at(-1), ['error', { type: 'error', message }]);
  });
}

test('a shutdown before any text stores nothing but the failed LlmCall', () => {
  const m = chat();
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  m.tell({ t: 'cancel', why: 'shutdown', message: SHUTDOWN });
  m.tell({ t: 'round_failed', round: 1, error: aborted() });
  assert.equal(m.sent('store_interrupted').length, 0);
  m.tell({ t: 'call_failed' });
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'cancelled', message: SHUTDOWN });
});

test('a run nobody stops never makes its AbortController; a cancel that beats the round end still ends the run', () => {
  // The actor makes its controller when its signal is first read (~15 µs of a start): the chat run
  // must decide from `cancelled`, not from the signal, whether it was asked to end.
  const controllerOf = (m: ReturnType<typeof chat>) => (m.actor as unknown as { controller: AbortController | null }).controller;
  const plain = chat();
  plain.tell({ t: 'start' });
  plain.tell({ t: 'prepared', runToken: 1 });
  plain.tell({ t: 'text', round: 1, text: 'Hi' });
  plain.tell({ t: 'round_end', round: 1, end: end() });
  plain.tell({ t: 'answer_stored' });
  assert.deepEqual(plain.sink.names(), ['meta', 'delta', 'done']);
  assert.equal(controllerOf(plain), null, 'no AbortController was made for a run nobody stopped');

  // The provider's round ended whole just after a shutdown reached the run: the cut wins.
  const cut = chat();
  cut.tell({ t: 'start' });
  cut.tell({ t: 'prepared', runToken: 1 });
  cut.tell({ t: 'text', round: 1, text: 'Half' });
  cut.tell({ t: 'cancel', why: 'shutdown', message: SHUTDOWN });
  cut.tell({ t: 'round_end', round: 1, end: end() });
  assert.equal(cut.sent('store_answer').length, 0, 'a cancelled run does not store a whole answer');
  assert.deepEqual(cut.sent('store_interrupted').map((c) => c.text), ['Half']);
  cut.tell({ t: 'interrupted_stored', error: null });
  assert.deepEqual(cut.sink.result, { ok: false, outcome: 'cancelled', message: SHUTDOWN });
});

test('a throw inside receive ends the run through its failure path, logged, with one terminal event', () => {
  const m = chat();
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 1 });
  // A round end the provider could never send: no toolCalls array.
  m.tell({ t: 'round_end', round: 1, end: { usage: null, raw: null, finishReason: null } as unknown as RoundEnd });
  assert.ok(m.sink.logs.some((l) => l.startsWith('error: run run-1 threw')), 'the throw is logged');
  m.tell({ t: 'call_failed' });
  assert.equal(m.sink.ends, 1);
  assert.equal(m.sink.result?.ok, false);
  assert.equal(m.sink.names().at(-1), 'error');
  m.tell({ t: 'text', round: 1, text: 'late' });
  assert.equal(m.sink.names().at(-1), 'error', 'nothing after the end');
});

/** One run with a tool round, as the messages its I/O sends, in order. */
const script: ChatMsg[] = [
  { t: 'prepared', runToken: 1 },
  { t: 'text', round: 1, text: 'thinking' },
  { t: 'round_end', round: 1, end: end([call('web_search', { q: 1 }, 'a'), call('web_search', { q: 2 }, 'b')]) },
  { t: 'tool_done', round: 1, index: 1, output: 'two' },
  { t: 'tool_stored', round: 1, index: 1 },
  { t: 'tool_done', round: 1, index: 0, output: 'one' },
  { t: 'tool_stored', round: 1, index: 0 },
  { t: 'text', round: 2, text: 'x'.repeat(600) },
  { t: 'text', round: 2, text: 'Hello' },
  { t: 'text', round: 2, text: ' there' },
  { t: 'round_end', round: 2, end: end() },
  { t: 'answer_stored' },
];

/** The run as a replay shows it: meta, each tool call at its latest state, the text, the end. */
function coalesce(events: Array<[string, Record<string, unknown>]>) {
  const tools = new Map<unknown, unknown>();
  const counts: Record<string, number> = {};
  for (const [e, d] of events) {
    counts[e] = (counts[e] ?? 0) + 1;
    if (e === 'tool_call') tools.set(d.toolCallId, d.status);
  }
  return { meta: counts.meta, done: counts.done, text: deltas(events), tools: [...tools.values()].sort() };
}

test('an attach between any two messages: its replay then the live frames hold every frame exactly once', () => {
  const whole = chat({ tools: [fakeTool('web_search')] });
  whole.tell({ t: 'start' });
  for (const msg of script) whole.tell(msg);
  const expected = coalesce(whole.sink.events());
  assert.deepEqual(expected, { meta: 1, done: 1, text: `${'x'.repeat(600)}Hello there`, tools: ['completed', 'completed'] });
  for (let at = 0; at <= script.length; at++) {
    const m = chat({ tools: [fakeTool('web_search')] });
    m.tell({ t: 'start' });
    script.slice(0, at).forEach((msg) => m.tell(msg));
    m.tell({ t: 'attach', subId: 1 });
    script.slice(at).forEach((msg) => m.tell(msg));
    const [replay] = m.sink.replays;
    assert.ok(replay, `attached after ${at} messages`);
    const seen = [...m.sink.events(replay.data), ...m.sink.events(m.sink.data.slice(replay.at))];
    assert.deepEqual(coalesce(seen), expected, `attached after ${at} messages`);
    assert.equal(replay.ended, at === script.length);
  }
});

// Checked by the compiler (make lint): a message of another kind is not a chat run's message.
// @ts-expect-error a search run's message
export const notAChatMessage: Parameters<ReturnType<typeof chat>['tell']>[0] = { t: 'saved', detail: null };
