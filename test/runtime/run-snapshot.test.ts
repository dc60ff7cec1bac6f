// A run is data: snapshotted between any two messages, moved through JSON into a new actor and given
// the rest of its messages, it ends exactly as the run that never moved (frames, commands, stored
// answer, result). Its snapshot holds no function and no class instance: the provider session, the
// call's controller and the timers are the runtime's, named by handle.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatBehavior, type ChatRunRequest } from '../../actors/chat-run.ts';
import type { ChatMsg } from '../../actors/chat-protocol.ts';
import { RunError } from '../../actors/run-failure.ts';
import type { Control } from '../../actors/runtime/actor.ts';
import type { RoundEnd, ToolCallRequest } from '../../src/providers/types.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';
import { call, fakeDeps, fakeTool, machine } from '../helpers/fake-io.ts';
import { notPlain } from '../helpers/plain-data.ts';

const request: ChatRunRequest = {
  owner: ADMIN_USER_ID,
  chatId: 'chat-1',
  createChat: false,
  storeChat: true,
  callId: 'llm-1',
  provider: 'provider_a',
  model: 'model-a',
  messages: [{ role: 'user', content: 'hi' }],
  mode: 'stream',
};
const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };
const end = (toolCalls: ToolCallRequest[] = []): RoundEnd => ({ toolCalls, usage, finishReason: toolCalls.length ? 'tool_calls' : 'stop', raw: { id: 'resp' } });
const aborted = () => Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
const SHUTDOWN = 'run cancelled: server is shutting down';

type Chat = ReturnType<typeof chat>;
/** A step of a run: a message, or the test's hand on the run's clock. */
type Step = ChatMsg | Control | ((m: Chat) => void);

/** `tools`: web_search is offered (a round's text is then held until it is known to be the answer). */
const chat = (tools = true) => machine(chatBehavior, request, fakeDeps({ tools: tools ? [fakeTool('web_search')] : [] }));

/** What the run did, as comparable data: its frames, its commands (live signals and tools by name), its end. */
function outcome(m: Chat) {
  const commands = JSON.parse(JSON.stringify(m.commands, (k, v: unknown) => (v instanceof AbortSignal ? 'signal' : k === 'tool' && v ? (v as { name: string }).name : v)));
  return { frames: m.sink.data, commands, result: m.sink.result, ends: m.sink.ends, settled: m.sink.startsSettled, logs: m.sink.logs, timers: m.timers.pending.size };
}

const play = (m: Chat, steps: Step[]) => steps.forEach((s) => (typeof s === 'function' ? s(m) : m.tell(s)));

/**
 * Plays `steps` once straight through, then once per cut with a move through JSON at the cut, and
 * asserts every moved run ends as the straight one; each snapshot must be plain data. Returns the straight run.
 */
function roundTrips(steps: Step[], tools = true): Chat {
  const straight = chat(tools);
  play(straight, steps);
  const expected = outcome(straight);
  for (let at = 1; at < steps.length; at++) {
    const m = chat(tools);
    play(m, steps.slice(0, at));
    const snapshot = m.move();
    assert.equal(notPlain(snapshot), null, `the snapshot after ${at} steps is plain data`);
    play(m, steps.slice(at));
    assert.deepEqual(outcome(m), expected, `moved after ${at} steps (in state '${snapshot.state.s}')`);
  }
  return straight;
}

test('a run with a tool round, moved between any two of its messages, ends as the run that never moved', () => {
  const straight = roundTrips([
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'thinking' },
    { t: 'round_end', round: 1, end: end([call('web_search', { q: 1 }, 'a'), call('web_search', { q: 2 }, 'b')]) },
    (m) => (m.timers.time += 700),
    { t: 'tool_done', round: 1, index: 1, output: 'two' },
    { t: 'tool_stored', round: 1, index: 1 },
    { t: 'tool_done', round: 1, index: 0, output: 'one' },
    { t: 'tool_stored', round: 1, index: 0 },
    { t: 'text', round: 2, text: 'x'.repeat(600) },
    { t: 'text', round: 2, text: 'Hello' },
    { t: 'round_end', round: 2, end: end() },
    { t: 'answer_stored' },
  ]);
  assert.equal(straight.sink.result?.ok, true);
  assert.deepEqual(straight.sent('round').map((c) => c.round), [1, 2]);
  assert.equal(straight.sent('store_tool')[0]?.message.metadata?.durationMs, 700);
});

test("a held round's timer moves with the run: it fires in the restored run and lets the text out", () => {
  const straight = roundTrips([
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'The ' },
    (m) => assert.equal(m.timers.fire(250), 1, 'the hold\'s timer, armed again by the restore'),
    { t: 'text', round: 1, text: 'answer' },
    { t: 'round_end', round: 1, end: end() },
    { t: 'answer_stored' },
  ]);
  assert.deepEqual(straight.sink.names(), ['meta', 'delta', 'delta', 'done']);
});

test('a stop moves with the run: the restored run stores the partial answer as stopped', () => {
  const straight = roundTrips([
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'Half' },
    { t: 'stop', message: 'stopped by request' },
    { t: 'round_failed', round: 1, error: aborted() },
    { t: 'answer_stored' },
  ], false);
  assert.deepEqual(straight.sent('store_answer').map((c) => [c.text, c.stopped]), [['Half', true]]);
});

test("a shutdown moves with the run: the restored run keeps the text as interrupted, and ends with the cancel's message", () => {
  const straight = roundTrips([
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'Half an ans' },
    { t: 'cancel', why: 'shutdown', message: SHUTDOWN },
    { t: 'round_failed', round: 1, error: aborted() },
    { t: 'interrupted_stored', error: null },
  ], false);
  assert.deepEqual(straight.sink.result, { ok: false, outcome: 'cancelled', message: SHUTDOWN });
});

test("a failed input's cause moves with the run as data: the restored run fails with it", () => {
  const straight = roundTrips([
    { t: 'start' },
    { t: 'prepare_failed', error: new RunError('chat not found', 'not_found') },
    { t: 'round_failed', round: 1, error: aborted() },
    { t: 'call_failed' },
  ]);
  assert.deepEqual(straight.sink.result, { ok: false, outcome: 'not_found', message: 'chat not found' });
});

test('a snapshot walks as plain data only: a live object anywhere is found', () => {
  assert.equal(notPlain({ a: [1, 'x', { b: null, c: undefined }] }), null);
  assert.equal(notPlain({ run: { call: new AbortController() } }), '$.run.call (AbortController)');
  assert.equal(notPlain({ slots: [{ startedAt: new Date(0) }] }), '$.slots[0].startedAt (Date)');
  assert.equal(notPlain({ session: { round: () => undefined } }), '$.session.round (function)');
});
