// A run is data: snapshotted between any two messages, moved through JSON into a new actor and given
// the rest of its messages, it ends exactly as the run that never moved (frames, commands, stored
// answer, result). Its snapshot holds no function and no class instance: the provider session, the
// call's controller and the timers are the runtime's, named by handle.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatBehavior } from '../../actors/chat-run.ts';
import { RunError } from '../../actors/run-failure.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';
import { searchBehavior, type SearchRunRequest } from '../../actors/search-run.ts';
import { titleBehavior } from '../../actors/title-run.ts';
import { TITLE_TIMEOUT_MS } from '../../src/chat/title.ts';
import type { ChatSummary, SearchDetail } from '../../src/base/types.ts';
import { Actor, type RunHandle } from '../../actors/runtime/actor.ts';
import type { ChatCommand } from '../../actors/chat-protocol.ts';
import { abortError, call, chatRequest, fakeDeps, fakeTool, machine, roundEnd, FakeTimers as FakeTimersClass, RecordingSink as RecordingSinkClass, type FakeTimers, type RecordingSink } from '../helpers/fake-io.ts';
import { notPlain } from '../helpers/plain-data.ts';
import { waitFor } from '../helpers/wait.ts';

const request = chatRequest;
const end = roundEnd;
const aborted = abortError;
const SHUTDOWN = 'run cancelled: server is shutting down';

/** What a test needs of a machine (fake-io.ts) to move it. */
interface Moving {
  tell(msg: never): void;
  move(): { state: { s: string } };
  commands: object[];
  sink: RecordingSink;
  timers: FakeTimers;
}
/** A step of a run: a message, or the test's hand on the run's clock. */
type Step<M extends Moving> = Parameters<M['tell']>[0] | ((m: M) => void);

/** `tools`: web_search is offered (a round's text is then held until it is known to be the answer). */
const chat = (tools = true) => machine(chatBehavior, request, fakeDeps({ tools: tools ? [fakeTool('web_search')] : [] }));

/** What the run did, as comparable data: its frames, its commands (live signals and tools by name), its end. */
function outcome(m: Moving) {
  const commands: unknown = JSON.parse(JSON.stringify(m.commands, (k, v: unknown) => (v instanceof AbortSignal ? 'signal' : k === 'tool' && v ? (v as { name: string }).name : v)));
  return { frames: m.sink.data, replays: m.sink.replays, commands, result: m.sink.result, ends: m.sink.ends, settled: m.sink.startsSettled, logs: m.sink.logs, timers: m.timers.pending.size };
}

function play<M extends Moving>(m: M, steps: Array<Step<M>>): void {
  for (const s of steps) {
    if (typeof s === 'function') s(m);
    else m.tell(s as never);
  }
}

/**
 * Plays `steps` once straight through, then once per cut with a move through JSON at the cut, and
 * asserts every moved run ends as the straight one; each snapshot must be plain data. Returns the straight run.
 */
function roundTrips<M extends Moving>(make: () => M, steps: Array<Step<M>>): M {
  const straight = make();
  play(straight, steps);
  const expected = outcome(straight);
  for (let at = 1; at < steps.length; at++) {
    const m = make();
    play(m, steps.slice(0, at));
    const snapshot = m.move();
    assert.equal(notPlain(snapshot), null, `the snapshot after ${at} steps is plain data`);
    play(m, steps.slice(at));
    assert.deepEqual(outcome(m), expected, `moved after ${at} steps (in state '${snapshot.state.s}')`);
  }
  return straight;
}

test('a run with a tool round, moved between any two of its messages, ends as the run that never moved', () => {
  const straight = roundTrips(chat, [
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'thinking' },
    // A clock with fractions of a millisecond, as the service's is.
    (m) => (m.timers.time = 0.6),
    { t: 'round_end', round: 1, end: end([call('web_search', { q: 1 }, 'a'), call('web_search', { q: 2 }, 'b')]) },
    (m) => (m.timers.time = 700.2),
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
  // Counted between the whole milliseconds its ISO times show, as a Date keeps them.
  const terminal = straight.sent('store_tool')[0]?.message.metadata;
  assert.deepEqual([terminal?.startedAt, terminal?.completedAt, terminal?.durationMs], [new Date(0).toISOString(), new Date(700).toISOString(), 700]);
});

test("a held round's timer moves with the run: it fires in the restored run and lets the text out", () => {
  const straight = roundTrips(chat, [
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
  const straight = roundTrips(() => chat(false), [
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'Half' },
    { t: 'stop', message: 'stopped by request' },
    { t: 'round_failed', round: 1, error: aborted() },
    { t: 'answer_stored' },
  ]);
  assert.deepEqual(straight.sent('store_answer').map((c) => [c.text, c.stopped]), [['Half', true]]);
});

test("a shutdown moves with the run: the restored run keeps the text as interrupted, and ends with the cancel's message", () => {
  const straight = roundTrips(() => chat(false), [
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'Half an ans' },
    { t: 'cancel', why: 'shutdown', message: SHUTDOWN },
    { t: 'round_failed', round: 1, error: aborted() },
    { t: 'interrupted_stored', error: null },
  ]);
  assert.deepEqual(straight.sink.result, { ok: false, outcome: 'cancelled', message: SHUTDOWN });
});

test("a failed input's cause moves with the run as data: the restored run fails with it", () => {
  const straight = roundTrips(chat, [
    { t: 'start' },
    { t: 'prepare_failed', error: new RunError('chat not found', 'not_found') },
    { t: 'round_failed', round: 1, error: aborted() },
    { t: 'call_failed' },
  ]);
  assert.deepEqual(straight.sink.result, { ok: false, outcome: 'not_found', message: 'chat not found' });
});

test("a run whose readers number its deltas moves with each delta's length: its replay and its value keep them", () => {
  const straight = roundTrips(() => machine(chatBehavior, { ...request, keepDeltas: true }, fakeDeps()), [
    { t: 'start' },
    { t: 'prepared', runToken: 1 },
    { t: 'text', round: 1, text: 'Hel' },
    { t: 'text', round: 1, text: 'lo' },
    { t: 'attach', subId: 1 },
    { t: 'text', round: 1, text: ' there' },
    { t: 'round_end', round: 1, end: end() },
    { t: 'answer_stored' },
  ]);
  assert.deepEqual(straight.sink.result?.ok && (straight.sink.result.value as { deltas?: number[] }).deltas, [3, 2, 6]);
});

const untitled = { id: 'chat-1', title: null } as ChatSummary;
const titled = { id: 'chat-1', title: 'Tides' } as ChatSummary;
const title = () => machine(titleBehavior, { chatId: 'chat-1', owner: ADMIN_USER_ID, content: 'tides?' }, fakeDeps());

test('a title run moved between any two of its messages ends as the run that never moved', () => {
  const straight = roundTrips(title, [
    { t: 'start' },
    { t: 'chat_read', chat: untitled },
    { t: 'call_started', callId: 'llm-t' },
    (m) => (m.timers.time += 900),
    { t: 'generated', text: '"Tides."', usage: null },
    { t: 'call_finished' },
    { t: 'titled', chat: titled },
  ]);
  assert.deepEqual(straight.sink.result, { ok: true, value: { chat: titled } });
  assert.equal(straight.timers.pending.size, 0, 'the timeout timer went with the run');
});

test("a title run's timeout moves with it: armed again by the restore, and once fired still the failure's cause", () => {
  const straight = roundTrips(title, [
    { t: 'start' },
    { t: 'chat_read', chat: untitled },
    { t: 'call_started', callId: 'llm-t' },
    (m) => assert.equal(m.timers.fire(TITLE_TIMEOUT_MS), 1),
    { t: 'failed', error: new Error('This operation was aborted') },
    { t: 'call_failed' },
  ]);
  assert.equal(straight.sink.result?.ok === false && straight.sink.result.outcome, 'provider_timeout');
});

const searchReq: SearchRunRequest = { owner: ADMIN_USER_ID, searchId: 'search-1', endpoint: { baseUrl: 'http://engine', apiKey: 'k' } as SearchRunRequest['endpoint'], query: 'q' };
const detail = { id: 'search-1', query: 'q' } as SearchDetail;
const search = () => machine(searchBehavior, searchReq, fakeDeps());
const mark = { instanceId: 'test', startedAt: '2026-01-01 00:00:00+00' };

test('a search run moved between any two of its messages ends as the run that never moved, a stop included', () => {
  const straight = roundTrips(search, [
    { t: 'start' },
    (m) => (m.timers.time += 700),
    { t: 'search_done', outcome: { ok: true, value: { requestId: 'r1', results: [] } }, mark },
    { t: 'answer_done', outcome: { ok: false, error: 'engine 500' } },
    { t: 'saved', detail },
  ]);
  assert.equal(straight.sent('save')[0]?.row.latencyMs, 700);
  assert.deepEqual(straight.sink.result, { ok: true, value: { search: detail } });
  const stopped = roundTrips(search, [
    { t: 'start' },
    { t: 'search_done', outcome: { ok: true, value: { requestId: 'r1', results: [] } }, mark },
    { t: 'stop', message: 'stopped by request' },
    { t: 'answer_done', outcome: { ok: false, error: 'This operation was aborted' } },
    { t: 'saved', detail },
  ]);
  assert.equal(stopped.sink.result?.ok === false && stopped.sink.result.outcome, 'stopped');
});

test('a snapshot walks as plain data only: a live object anywhere is found', () => {
  assert.equal(notPlain({ a: [1, 'x', { b: null, c: undefined }] }), null);
  assert.equal(notPlain({ run: { call: new AbortController() } }), '$.run.call (AbortController)');
  assert.equal(notPlain({ slots: [{ startedAt: new Date(0) }] }), '$.slots[0].startedAt (Date)');
  assert.equal(notPlain({ session: { round: () => undefined } }), '$.session.round (function)');
});

test("a run restored in the same process is handed its live objects: the next round's executor reads the same provider session", async () => {
  const session = { round: () => new Promise<never>(() => {}) };
  const deps = fakeDeps({ tools: [fakeTool('web_search')], session });
  const read: unknown[] = [];
  const behavior = {
    ...chatBehavior,
    execute: (cmd: ChatCommand, _deps: unknown, _tell: unknown, run: RunHandle) => {
      if (cmd.c === 'round') read.push(run.resource(cmd.session));
      return new Promise<never>(() => {});
    },
  };
  const world = { timers: new FakeTimersClass(), newId: () => 'id' };
  const make = (sink: RecordingSinkClass) => {
    const actor = new Actor('run-1', behavior, request, deps, sink, world);
    actor.tell({ t: 'start' });
    actor.tell({ t: 'prepared', runToken: 1 });
    actor.tell({ t: 'round_end', round: 1, end: end([call('web_search', {})]) });
    actor.tell({ t: 'tool_done', round: 1, index: 0, output: 'r' });
    return actor;
  };
  const handed = make(new RecordingSinkClass());
  const json = JSON.parse(JSON.stringify(handed.handOver()));
  const restored = Actor.restore(json, behavior, deps, new RecordingSinkClass(), world, handed.liveResources());
  restored.tell({ t: 'tool_stored', round: 1, index: 0 });
  assert.deepEqual(read, [session, session], 'round 2 runs on the session round 1 opened');
  const { call: callHandle } = (json.state as { run: { call: number } }).run;
  assert.equal(restored.signalOf(callHandle), handed.signalOf(callHandle), "and the call's controller the session was given: the restored run's abort reaches it");

  // Elsewhere (no live objects handed over) the session is not there: the executor's read fails, and the
  // run ends through its failure path, logged, instead of streaming on from nothing.
  const sink = new RecordingSinkClass();
  const moved = Actor.restore(JSON.parse(JSON.stringify(make(new RecordingSinkClass()).handOver())), behavior, deps, sink, world);
  moved.tell({ t: 'tool_stored', round: 1, index: 0 });
  // The executor's throw comes back as the run's fault, a message after this one.
  await waitFor(() => sink.logs.includes('error: run run-1 threw'), 10_000, "the crash's log line");
  moved.tell({ t: 'call_failed' });
  assert.equal(sink.result?.ok, false);
});
