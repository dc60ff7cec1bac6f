// The supervisor and its actors on inline hosts the test controls: replay then live, ordering of
// control messages, stop versus cancel, a host that dies, and the one-run-per-key rule under a burst.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deltaFrame } from '../../actors/runtime/frame.ts';
import type { ToHost } from '../../actors/runtime/protocol.ts';
import { Admission } from '../../src/admission/admission.ts';
import { QUEUE_DEFAULTS } from '../../src/admission/start-queue.ts';
import { FakeSubscriber, gate, supervisor, turn } from './fake.ts';
import { waitFor } from '../helpers/wait.ts';

/** The text a subscriber's deltas add up to. */
const text = (s: FakeSubscriber) =>
  s
    .events()
    .filter(([e]) => e === 'delta')
    .map(([, d]) => (d as { text: string }).text)
    .join('');

test('replay then live: a subscriber attaching at any step gets every delta exactly once, in order', async () => {
  const parts = ['one ', 'two ', 'three ', 'four'];
  // Up to the last part: its gate ends the run, and whether the supervisor has seen that end by the
  // next turn depends on the outbox's 1 ms gap, i.e. on the clock. An attach after the end has its
  // own test below.
  for (let at = 0; at < parts.length; at++) {
    const { sup } = supervisor();
    const gates = parts.map(() => gate());
    const first = new FakeSubscriber();
    const started = sup.start({ kind: 'echo', key: 'k', request: { parts, gates: gates.map((g) => g.wait) }, ifRunning: 'reject', subscriber: first });
    assert.ok(started.ok);
    const late = new FakeSubscriber();
    for (let i = 0; i < at; i++) {
      gates[i]!.open();
      await turn();
    }
    assert.equal(sup.attachNow('echo', 'k', late), true);
    for (let i = at; i < parts.length; i++) gates[i]!.open();
    const result = await started.handle.result;
    await turn();
    assert.deepEqual(result, { ok: true, value: { text: 'one two three four' } });
    for (const s of [first, late]) {
      assert.equal(text(s), 'one two three four', `attached after ${at} parts`);
      assert.equal(s.events()[0]![0], 'meta');
      assert.equal(s.events().at(-1)![0], 'done');
      assert.ok(s.ended);
    }
  }
});

test('an attach after the run ended but before it was released gets the whole replay and is ended', async () => {
  const { sup } = supervisor();
  const started = sup.start({ kind: 'echo', key: 'k', request: { parts: ['a', 'b'] }, ifRunning: 'reject' });
  assert.ok(started.ok);
  const late = new FakeSubscriber();
  // Same turn as the run's end: the supervisor has not seen the end yet.
  await Promise.resolve();
  sup.attachNow('echo', 'k', late);
  await started.handle.result;
  await turn();
  assert.ok(late.ended);
  assert.equal(text(late), 'ab');
  assert.equal(late.events().at(-1)![0], 'done');
  assert.equal(sup.attachNow('echo', 'k', new FakeSubscriber()), 'not_found');
});

test('control messages keep their order: an attach sent before a cancel sees the replay, then the end', async () => {
  const { sup, hosts } = supervisor();
  const started = sup.start({ kind: 'hold', key: 'h', request: { until: null }, ifRunning: 'reject' });
  assert.ok(started.ok);
  const sub = new FakeSubscriber();
  sup.attachNow('hold', 'h', sub);
  sup.stopNow('hold', 'h');
  assert.deepEqual(
    hosts.sent.map((m) => m.t),
    ['start', 'attach', 'cancel'],
  );
  await started.handle.result;
  await turn();
  assert.deepEqual(
    sub.events().map(([e]) => e),
    ['meta', 'done'],
  );
});

test('a stop reaches the run as a stop; a shutdown as a cancel', async () => {
  const a = supervisor();
  const stopped = a.sup.start({ kind: 'hold', key: 'h', request: { until: null }, ifRunning: 'reject' });
  assert.ok(stopped.ok);
  assert.equal(a.sup.stopNow('hold', 'h'), true);
  assert.deepEqual(await stopped.handle.result, { ok: true, value: { why: 'stop' } });
  assert.equal(a.sup.stopNow('hold', 'h'), false, 'nothing left to stop');

  const b = supervisor();
  const cancelled = b.sup.start({ kind: 'hold', key: 'h', request: { until: null }, ifRunning: 'reject' });
  assert.ok(cancelled.ok);
  await b.sup.shutdown(1000);
  assert.deepEqual(await cancelled.handle.result, { ok: false, outcome: 'cancelled', message: 'shutdown' });
  const late = b.sup.start({ kind: 'echo', key: null, request: { parts: [] }, ifRunning: 'reject' });
  assert.equal(late.ok ? 'started' : late.outcome, 'shutting_down');
});

test('an unpersisted run is cancelled as a disconnect when its last subscriber leaves', async () => {
  const { sup } = supervisor();
  const sub = new FakeSubscriber();
  const started = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject', subscriber: sub, cancelWhenAlone: true });
  assert.ok(started.ok);
  sub.close();
  assert.deepEqual(await started.handle.result, { ok: false, outcome: 'cancelled', message: 'disconnect' });
});

test('a host that dies ends its runs with an error frame and a failure; a fresh host takes the next run', async () => {
  const { sup, hosts, logs } = supervisor({ hosts: 1 });
  const sub = new FakeSubscriber();
  const started = sup.start({ kind: 'hold', key: 'h', request: { until: null }, ifRunning: 'reject', subscriber: sub });
  assert.ok(started.ok);
  hosts.kill[0]!(new Error('boom'));
  const result = await started.handle.result;
  assert.equal(result.ok ? 'ok' : result.outcome, 'internal');
  assert.ok(sub.ended);
  assert.deepEqual(sub.events().at(-1), ['error', { message: 'run host failed: boom' }]);
  assert.ok(logs.some((l) => l.startsWith('error: actor host 0 exited')), 'the death is logged');
  assert.equal(sup.findNow('hold', 'h'), null, 'the key is free again');
  const next = sup.start({ kind: 'echo', key: 'h2', request: { parts: ['fine'] }, ifRunning: 'reject' });
  assert.ok(next.ok);
  assert.deepEqual(await next.handle.result, { ok: true, value: { text: 'fine' } });
});

test('a host that dies before answering an attach to a run that has ended ends that attach', async () => {
  const { sup, hosts } = supervisor({ hosts: 1 });
  const until = gate();
  const started = sup.start({ kind: 'hold', key: 'h', request: { until: until.wait }, ifRunning: 'reject' });
  assert.ok(started.ok);
  await turn();
  hosts.pause();
  const sub = new FakeSubscriber();
  assert.equal(sup.attachNow('hold', 'h', sub), true, 'the run is going: the attach is sent');
  until.open();
  await started.handle.result;
  assert.equal(sub.ended, false, 'its replay has not come yet');
  hosts.kill[0]!(new Error('boom'));
  assert.equal(sub.ended, true, 'its replay died with the host: the stream ends (the client re-attaches and finds the run over)');
});

test('a burst of starts for one key: with reject exactly one runs and the rest are busy', async () => {
  const { sup, hosts } = supervisor({ hosts: 2 });
  const release = gate();
  const outcomes = await Promise.all(
    Array.from({ length: 50 }, () => Promise.resolve().then(() => sup.start({ kind: 'hold', key: 'c', request: { until: release.wait }, ifRunning: 'reject' }))),
  );
  assert.equal(outcomes.filter((o) => o.ok).length, 1);
  assert.deepEqual(new Set(outcomes.filter((o) => !o.ok).map((o) => (o.ok ? '' : o.outcome))), new Set(['busy']));
  assert.equal(hosts.sent.filter((m) => m.t === 'start').length, 1);
  release.open();
});

test('a burst of starts for one key: with join every caller gets the one run\'s handle and its result', async () => {
  const { sup, hosts } = supervisor({ hosts: 2 });
  const g = gate();
  const subs = Array.from({ length: 20 }, () => new FakeSubscriber());
  const outcomes = subs.map((subscriber) => sup.start({ kind: 'echo', key: 's', request: { parts: ['x', 'y'], gates: [g.wait] }, ifRunning: 'join', subscriber }));
  const handles = outcomes.map((o) => (o.ok ? o.handle : assert.fail('a join is never refused')));
  assert.equal(new Set(handles.map((h) => h.runId)).size, 1);
  assert.deepEqual(handles.map((h) => h.joined), [false, ...Array(19).fill(true)]);
  assert.equal(hosts.sent.filter((m) => m.t === 'start').length, 1);
  g.open();
  const results = await Promise.all(handles.map((h) => h.result));
  await turn();
  for (const r of results) assert.deepEqual(r, { ok: true, value: { text: 'xy' } });
  for (const s of subs) assert.equal(text(s), 'xy');
});

test('capacity refuses a start past the limit with its outcome', async () => {
  const { sup } = supervisor({ maxActiveRuns: 1 });
  const g = gate();
  assert.ok(sup.start({ kind: 'hold', key: null, request: { until: g.wait }, ifRunning: 'reject' }).ok);
  const second = sup.start({ kind: 'hold', key: null, request: { until: g.wait }, ifRunning: 'reject' });
  assert.equal(second.ok ? 'started' : second.outcome, 'capacity');
  g.open();
});

test('the per-delta frame is built by concatenation and is valid SSE JSON', () => {
  assert.equal(deltaFrame('a"b\n'), 'event: delta\ndata: {"type":"delta","text":"a\\"b\\n"}\n\n');
});

test('cancelNow cancels one run by key with its why and message; cancelAll every run; whenIdle settles after the last end', async () => {
  const { sup, hosts } = supervisor();
  let idle = false;
  void sup.whenIdle().then(() => (idle = true));
  await Promise.resolve();
  assert.equal(idle, true, 'at once when no run is active');
  const one = sup.start({ kind: 'hold', key: 'a', request: { until: null }, ifRunning: 'reject' });
  const two = sup.start({ kind: 'hold', key: 'b', request: { until: null }, ifRunning: 'reject' });
  const three = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject' });
  assert.ok(one.ok && two.ok && three.ok);
  let settled = false;
  const whenIdle = sup.whenIdle().then(() => (settled = true));
  assert.equal(sup.cancelNow('hold', 'missing', 'fenced', 'gone'), false);
  assert.equal(sup.cancelNow('hold', 'a', 'fenced', 'run cancelled: this instance lost contact with the cluster'), true);
  assert.deepEqual(hosts.sent.at(-1), { t: 'cancel', runId: one.handle.runId, why: 'fenced', message: 'run cancelled: this instance lost contact with the cluster' });
  assert.deepEqual(await one.handle.result, { ok: false, outcome: 'cancelled', message: 'fenced' });
  assert.equal(settled, false, 'two runs are still active');
  assert.equal(sup.cancelAll('shutdown', 'run cancelled: server is shutting down'), 2);
  await whenIdle;
  assert.equal(sup.activeCount, 0);
  assert.deepEqual(await two.handle.result, { ok: false, outcome: 'cancelled', message: 'shutdown' });
  assert.equal(sup.cancelAll('shutdown', 'again'), 0);
});

test('startBacklog counts the starts a host has not taken up yet, down to none once it has', async () => {
  const { sup, hosts } = supervisor({ hosts: 2, held: true });
  const runs = [0, 1, 2].map(() => sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject' }));
  assert.ok(runs.every((r) => r.ok));
  assert.equal(sup.startBacklog, 3, 'in the mailboxes, unread');
  await turn();
  assert.equal(sup.startBacklog, 3, 'nothing is taken up while the hosts read nothing');
  hosts.deliver();
  await waitFor(() => sup.startBacklog === 0, 10_000, 'the hosts to say they took the starts up');
  assert.equal(sup.activeCount, 3, 'taken up, still running');
  await sup.shutdown();
});

test('a host that dies takes its starts\' backlog with it', async () => {
  const { sup, hosts } = supervisor({ held: true });
  const started = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject' });
  assert.ok(started.ok);
  assert.equal(sup.startBacklog, 1);
  hosts.kill[0]!(new Error('boom'));
  assert.deepEqual(await started.handle.result, { ok: false, outcome: 'internal', message: 'run host failed: boom' });
  assert.equal(sup.startBacklog, 0, 'the fresh host owes nothing');
});

/** Adaptive admission held at `limit` starts in flight (a clock that never moves: the limit stays). */
const pacedAt = (limit: number) => new Admission({ maxActiveRuns: 100, adaptive: true, now: () => 0, limit: { initial: limit, min: limit, max: limit } });
const startsSent = (sent: ToHost[]) => sent.filter((m) => m.t === 'start').length;

test('starts beyond the admission\'s limit wait their turn and go as the earlier ones settle; every one ends', async () => {
  const admission = pacedAt(2);
  const { sup, hosts } = supervisor({ held: true, admission });
  const subs = [0, 1, 2, 3, 4].map(() => new FakeSubscriber());
  const runs = subs.map((subscriber, i) => sup.start({ kind: 'echo', key: `k${i}`, request: { parts: [`r${i}`] }, ifRunning: 'reject', subscriber }));
  assert.ok(runs.every((r) => r.ok), 'all five are taken');
  assert.equal(sup.activeCount, 5);
  assert.deepEqual([startsSent(hosts.sent), sup.startBacklog, admission.waiting], [2, 2, 3], 'two sent, three wait');
  hosts.deliver();
  await waitFor(() => subs.every((s) => s.ended), 10_000, 'every run to end');
  assert.deepEqual(subs.map((s) => text(s)), ['r0', 'r1', 'r2', 'r3', 'r4']);
  assert.ok(subs.every((s) => s.events().at(-1)![0] === 'done'));
  assert.deepEqual([startsSent(hosts.sent), admission.inFlight, admission.waiting], [5, 0, 0]);
});

// A user's stop of a waiting start still goes to its host behind the start (unlike a cancel, below): a
// stopped run ends as its kind says (a chat's `done` with `stopped`, its input and LlmCall `stopped` stored).
test('a stop and an attach for a run whose start waits are held behind its start, in order', async () => {
  const admission = pacedAt(1);
  const { sup, hosts } = supervisor({ held: true, admission });
  const first = sup.start({ kind: 'hold', key: 'a', request: { until: null }, ifRunning: 'reject' });
  const waitingSub = new FakeSubscriber();
  const waiting = sup.start({ kind: 'hold', key: 'b', request: { until: null }, ifRunning: 'reject', subscriber: waitingSub });
  assert.ok(first.ok && waiting.ok);
  const late = new FakeSubscriber();
  assert.equal(sup.attachNow('hold', 'b', late), true);
  assert.equal(sup.stopNow('hold', 'b'), true);
  assert.deepEqual(hosts.sent.map((m) => m.t), ['start'], 'nothing of b went before its start');
  hosts.deliver();
  assert.deepEqual(await waiting.handle.result, { ok: true, value: { why: 'stop' } });
  assert.deepEqual(hosts.sent.filter((m) => m.t !== 'release').map((m) => m.t), ['start', 'start', 'attach', 'cancel']);
  await waitFor(() => late.ended && waitingSub.ended, 10_000, 'both subscribers to end');
  assert.equal(waitingSub.events().at(-1)![0], 'done');
  assert.equal(late.events().at(-1)![0], 'done');
  sup.stopNow('hold', 'a');
  assert.ok((await first.handle.result).ok);
});

test('a host that dies frees the places of its starts, and a run whose start waited there ends too', async () => {
  const admission = pacedAt(1);
  const { sup, hosts } = supervisor({ held: true, admission });
  const sent = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject' });
  const waiting = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject' });
  assert.ok(sent.ok && waiting.ok);
  assert.deepEqual([admission.inFlight, admission.waiting], [1, 1]);
  hosts.kill[0]!(new Error('boom'));
  assert.deepEqual(await waiting.handle.result, { ok: false, outcome: 'internal', message: 'run host failed: boom' });
  assert.deepEqual([admission.inFlight, admission.waiting], [0, 0]);
  assert.equal(startsSent(hosts.sent), 1, 'the ended run\'s start never went');
  hosts.deliver();
  const next = sup.start({ kind: 'echo', key: null, request: { parts: ['after'] }, ifRunning: 'reject' });
  assert.ok(next.ok);
  assert.deepEqual(await next.handle.result, { ok: true, value: { text: 'after' } });
});

test("a run's id and start time are the supervisor's clock and id source: a test scripts both", () => {
  let ids = 0;
  const clock = { time: 1_000, now: () => clock.time };
  const { sup } = supervisor({ clock, newId: () => `run-${++ids}` });
  const gates = [gate()];
  const first = sup.start({ kind: 'echo', key: 'a', request: { parts: ['x'], gates: gates.map((g) => g.wait) }, ifRunning: 'reject' });
  clock.time = 2_500;
  const second = sup.start({ kind: 'echo', key: 'b', request: { parts: ['y'], gates: gates.map((g) => g.wait) }, ifRunning: 'reject' });
  assert.ok(first.ok && second.ok);
  assert.deepEqual([first.handle.runId, first.handle.startedAt], ['run-1', 1_000]);
  assert.deepEqual(sup.listNow().map((r) => [r.runId, r.startedAt]), [['run-1', 1_000], ['run-2', 2_500]]);
  gates[0]!.open();
});

test('a cancel of a run whose start waits ends it at once: taken out of the queue, its host never hears of it', async () => {
  const admission = pacedAt(1);
  const { sup, hosts } = supervisor({ held: true, admission });
  const first = sup.start({ kind: 'hold', key: 'a', request: { until: null }, ifRunning: 'reject' });
  const sub = new FakeSubscriber();
  const waiting = sup.start({ kind: 'hold', key: 'b', request: { until: null }, ifRunning: 'reject', subscriber: sub });
  // Unpersisted: its client left while it waited (the supervisor cancels it as a disconnect).
  const aloneSub = new FakeSubscriber();
  const alone = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject', subscriber: aloneSub, cancelWhenAlone: true });
  assert.ok(first.ok && waiting.ok && alone.ok);
  assert.equal(admission.waiting, 2);
  assert.equal(sup.cancelNow('hold', 'b', 'fenced', 'run cancelled: this instance lost contact with the cluster'), true);
  assert.deepEqual(await waiting.handle.result, { ok: false, outcome: 'cancelled', message: 'run cancelled: this instance lost contact with the cluster' });
  assert.ok(sub.ended);
  assert.deepEqual(sub.events(), [['error', { message: 'run cancelled: this instance lost contact with the cluster' }]]);
  aloneSub.close();
  assert.deepEqual(await alone.handle.result, { ok: false, outcome: 'cancelled', message: 'the client disconnected' });
  assert.deepEqual([admission.waiting, sup.activeCount], [0, 1]);
  hosts.deliver();
  sup.stopNow('hold', 'a');
  assert.ok((await first.handle.result).ok);
  assert.deepEqual(hosts.sent.filter((m) => m.t !== 'release').map((m) => [m.t, 'runId' in m ? m.runId : '']), [['start', first.handle.runId], ['cancel', first.handle.runId]], 'nothing of b or the unpersisted run went');
});

test('a waiting start dropped under a flood that lasts is ended with the overload refusal, and never sent', async () => {
  const clock = { t: 0 };
  const admission = new Admission({ maxActiveRuns: 100, adaptive: true, now: () => clock.t, limit: { initial: 1, min: 1, max: 1 } });
  const { sup, hosts } = supervisor({ held: true, admission });
  const first = sup.start({ kind: 'echo', key: null, request: { parts: ['a'] }, ifRunning: 'reject', owner: 'u' });
  const sub = new FakeSubscriber();
  const old = sup.start({ kind: 'echo', key: null, request: { parts: ['old'] }, ifRunning: 'reject', owner: 'u', subscriber: sub });
  assert.ok(first.ok && old.ok);
  // Its start has waited past MAX_WAIT: the next start of its user is refused, and the queue sheds.
  clock.t += QUEUE_DEFAULTS.maxWaitMs + 1;
  assert.equal(sup.start({ kind: 'echo', key: null, request: { parts: ['new'] }, ifRunning: 'reject', owner: 'u' }).ok, false);
  hosts.deliver();
  assert.deepEqual(await old.handle.result, { ok: false, outcome: 'overloaded', message: 'server is overloaded, retry later' });
  assert.deepEqual(sub.events(), [['error', { message: 'server is overloaded, retry later' }]]);
  assert.deepEqual(await first.handle.result, { ok: true, value: { text: 'a' } });
  assert.equal(startsSent(hosts.sent), 1, 'the dropped start never went');
  assert.deepEqual([admission.waiting, admission.refused.overload], [0, 2]);
});
