// The runtime's small pieces on their own: the replay buffer's coalescing, the outbox's batching, and
// the mailbox's order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Actor, defineRun, RunCancelled, type Behavior } from '../../actors/runtime/actor.ts';
import { EventBuffer } from '../../actors/runtime/event-buffer.ts';
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';
import { Outbox } from '../../actors/runtime/outbox.ts';
import { batchItems, type Batch } from '../../actors/runtime/protocol.ts';
import { turn } from './fake.ts';
import { waitFor } from '../helpers/wait.ts';

test('the event buffer coalesces deltas into one and keeps only the latest state of a keyed event', () => {
  const b = new EventBuffer();
  b.push(sseFrame('meta', { n: 1 }));
  b.upsert('t1', sseFrame('tool_call', { status: 'initiated' }));
  for (const piece of ['a', 'b', 'c']) b.appendText(piece);
  b.upsert('t1', sseFrame('tool_call', { status: 'completed' }));
  b.appendText('d');
  assert.equal(b.deltaText, 'abcd');
  assert.equal(b.replay(), sseFrame('meta', { n: 1 }) + sseFrame('tool_call', { status: 'completed' }) + deltaFrame('abcd'));
  b.end(sseFrame('done', { text: 'abcd' }));
  assert.ok(b.replay().endsWith(sseFrame('done', { text: 'abcd' })));
});

test('the event buffer hands its one reader the text appended since its last read, the whole text unchanged', () => {
  const b = new EventBuffer();
  b.appendText('ab');
  assert.equal(b.newText(), 'ab', 'the first read: everything so far');
  assert.equal(b.newText(), '');
  for (const piece of ['c', 'de', 'f']) b.appendText(piece);
  assert.equal(b.newText(), 'cdef');
  b.appendText('g');
  assert.equal(b.newText(), 'g');
  assert.equal(b.deltaText, 'abcdefg');
});

test('the event buffer is empty only until a run\'s first frame of any kind', () => {
  const kinds: Array<(b: EventBuffer) => void> = [
    (b) => b.push(sseFrame('meta', {})),
    (b) => b.upsert('k', sseFrame('search', {})),
    (b) => b.appendText('a'),
    (b) => b.end(sseFrame('error', {})),
  ];
  for (const first of kinds) {
    const b = new EventBuffer();
    assert.equal(b.empty, true);
    first(b);
    assert.equal(b.empty, false);
  }
});

test('the outbox sends one batch per event-loop turn, one item per run with its frames concatenated', async () => {
  const batches: Batch[] = [];
  const out = new Outbox((b) => batches.push(b));
  out.frames('r1', 'a');
  out.frames('r2', 'x');
  out.frames('r1', 'b');
  out.frames('r1', 'c');
  assert.equal(batches.length, 0, 'nothing crosses before the turn ends');
  await turn();
  assert.equal(batches.length, 1);
  assert.deepEqual(batchItems(batches[0]!), [
    { t: 'frames', runId: 'r1', data: 'abc', events: 3 },
    { t: 'frames', runId: 'r2', data: 'x', events: 1 },
  ]);
  out.frames('r1', 'd');
  await waitFor(() => batches.length === 2, 10_000, 'the next batch');
  assert.deepEqual(batchItems(batches[1]!), [{ t: 'frames', runId: 'r1', data: 'd', events: 1 }]);
});

test('batches are at least the gap apart: frames of later turns within it wait and cross together', async () => {
  const batches: Batch[] = [];
  const out = new Outbox((b) => batches.push(b), { gapMs: 1000 });
  out.frames('r1', 'a');
  await turn();
  assert.equal(batches.length, 1, 'the first batch goes out at the end of its turn');
  out.frames('r1', 'b');
  await turn();
  out.frames('r2', 'x');
  out.end('r1', { ok: true, value: 1 });
  await turn();
  assert.equal(batches.length, 1, 'within the gap nothing more crosses');
  await waitFor(() => batches.length === 2, 10_000, 'the batch after the gap');
  assert.deepEqual(batchItems(batches[1]!).map((i) => i.t), ['frames', 'frames', 'end']);
  assert.equal((batchItems(batches[1]!)[0] as { data: string }).data, 'b');
});

test('a run\'s held first frames wait for what comes next, of any run, and cross with it', async () => {
  const batches: Batch[] = [];
  const out = new Outbox((b) => batches.push(b), { holdMs: 600_000 });
  out.frames('r1', 'meta', true);
  await turn();
  assert.equal(batches.length, 0, 'held frames alone do not cross at the end of their turn');
  out.frames('r1', 'delta');
  await waitFor(() => batches.length === 1, 10_000, 'the batch the delta makes');
  assert.deepEqual(batchItems(batches[0]!), [{ t: 'frames', runId: 'r1', data: 'metadelta', events: 2 }]);
  out.frames('r2', 'meta', true);
  out.end('r3', { ok: true, value: 1 });
  await waitFor(() => batches.length === 2, 10_000, 'the batch another run\'s end makes');
  assert.deepEqual(batchItems(batches[1]!).map((i) => i.t === 'frames' ? i.data : i.t), ['meta', 'end']);
});

test('held frames with nothing after them cross when the hold is over', async () => {
  const batches: Batch[] = [];
  const out = new Outbox((b) => batches.push(b), { holdMs: 1 });
  out.frames('r1', 'meta', true);
  await waitFor(() => batches.length === 1, 10_000, 'the held batch');
  assert.deepEqual(batchItems(batches[0]!), [{ t: 'frames', runId: 'r1', data: 'meta', events: 1 }]);
});

test('starts taken up ride the next batch as a count with their latencies\' sum, and alone cross when the hold is over', async () => {
  const batches: Batch[] = [];
  const out = new Outbox((b) => batches.push(b), { holdMs: 600_000 });
  out.started(2);
  out.frames('r1', 'meta', true);
  out.started(5);
  await turn();
  assert.equal(batches.length, 0, 'a start taken up is held as a first frame is');
  out.frames('r1', 'delta');
  await waitFor(() => batches.length === 1, 10_000, 'the batch the delta makes');
  assert.equal(batches[0]!.started, 2);
  assert.equal(batches[0]!.startedMs, 7);
  out.frames('r2', 'x');
  await waitFor(() => batches.length === 2, 10_000, 'a batch with no start');
  assert.equal(batches[1]!.started, undefined, 'counted once');

  const quick: Batch[] = [];
  const alone = new Outbox((b) => quick.push(b), { holdMs: 1 });
  alone.started(3);
  await waitFor(() => quick.length === 1, 10_000, 'the start said alone');
  assert.deepEqual(quick[0], { t: 'batch', items: [], started: 1, startedMs: 3 });
});

test('a replay closes the run\'s open item, so frames after it land after it, in order', async () => {
  const batches: Batch[] = [];
  const out = new Outbox((b) => batches.push(b));
  out.frames('r1', 'a');
  out.replay('r1', 7, 'REPLAY', false);
  out.frames('r1', 'b');
  out.end('r1', { ok: true, value: 1 });
  await turn();
  assert.deepEqual(
    batchItems(batches[0]!).map((i) => i.t),
    ['frames', 'replay', 'frames', 'end'],
  );
  assert.deepEqual(batchItems(batches[0]!)[2], { t: 'frames', runId: 'r1', data: 'b', events: 1 });
});

test('a message told while another is handled waits its turn, and a throw in receive ends the run once, logged', () => {
  type Msg = { t: 'echo'; n: number } | { t: 'boom' };
  const frames: string[] = [];
  const logs: string[] = [];
  let ends = 0;
  const sink = {
    frames: (_r: string, data: string) => frames.push(data),
    replay: () => {},
    replayFailed: () => {},
    end: () => ends++,
    log: (_l: string, message: string) => logs.push(message),
    started: () => {},
  };
  const behavior: Behavior<null, null, null, { s: 'on' }, Msg, { c: 'now'; n: number }> = {
    initial: () => ({ s: 'on' }),
    errorFrame: (message) => sseFrame('error', { message }),
    receive(state, msg, io) {
      if (msg.t === 'start') {
        // The executor tells its answer synchronously, in the middle of this handler.
        io.perform({ c: 'now', n: 1 });
        io.emit('start_done', {});
      } else if (msg.t === 'echo') io.emit('echo', msg.n);
      else if (msg.t === 'boom') throw new Error('boom');
      return state;
    },
    crashed(_state, err) {
      throw err;
    },
    execute(cmd, _deps, tell) {
      tell({ t: 'echo', n: cmd.n });
      return new Promise(() => {});
    },
  };
  const actor = new Actor('r', behavior, null, null, sink, { timers: { set: () => 0, clear: () => {}, now: () => 0 }, newId: () => 'id' });
  actor.tell({ t: 'start' });
  assert.deepEqual(frames, [sseFrame('start_done', {}), sseFrame('echo', 1)]);
  actor.tell({ t: 'boom' });
  actor.tell({ t: 'echo', n: 2 });
  assert.equal(ends, 1);
  assert.equal(frames.at(-1), sseFrame('error', { message: 'boom' }), 'the kind\'s own error shape');
  assert.deepEqual(logs, ['run r threw', 'run r could not record its failure']);
});

test('the run\'s signal, made when first read, is aborted by a stop that came before or after the read', () => {
  const seen: Array<{ aborted: boolean; reason: unknown }> = [];
  let signal: AbortSignal | null = null;
  const sink = { frames: () => {}, replay: () => {}, replayFailed: () => {}, end: () => {}, log: () => {}, started: () => {} };
  const behavior: Behavior<null, null, null, { s: 'on' }, { t: 'noop' }, { c: 'look' }> = {
    initial: () => ({ s: 'on' }),
    errorFrame: (message) => sseFrame('error', { message }),
    receive(state, msg, io) {
      if (msg.t === 'stop') io.perform({ c: 'look' });
      return state;
    },
    crashed(_state, err) {
      throw err;
    },
    execute(_cmd, _deps, _tell, run) {
      signal = run.signal;
      seen.push({ aborted: run.signal.aborted, reason: run.signal.reason });
      return new Promise(() => {});
    },
  };
  const world = { timers: { set: () => 0, clear: () => {}, now: () => 0 }, newId: () => 'id' };
  // Stopped before anything read the signal: the command performed after sees it aborted, with why.
  new Actor('a', behavior, null, null, sink, world).tell({ t: 'stop', message: 'enough' });
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.aborted, true);
  assert.ok(seen[0]!.reason instanceof RunCancelled);
  // Read first, stopped after: the signal read is the one aborted.
  const b = new Actor('b', behavior, null, null, sink, world);
  const read = b.signal;
  assert.equal(read.aborted, false);
  b.tell({ t: 'stop', message: 'enough' });
  assert.equal(read.aborted, true);
  assert.equal(signal, read, 'the command got the signal read before the stop');
});

test('a run settles its start once, when it says so or else when it ends', () => {
  let settled = 0;
  const sink = { frames: () => {}, replay: () => {}, replayFailed: () => {}, end: () => {}, log: () => {}, started: () => settled++ };
  const behavior: Behavior<null, null, null, { s: 'on' }, { t: 'settle' } | { t: 'finish' }, never> = {
    initial: () => ({ s: 'on' }),
    errorFrame: (message) => sseFrame('error', { message }),
    receive(state, msg, io) {
      if (msg.t === 'finish') io.done({}, null);
      return state;
    },
    crashed(_state, err) {
      throw err;
    },
    execute: () => new Promise(() => {}),
  };
  const world = { timers: { set: () => 0, clear: () => {}, now: () => 0 }, newId: () => 'id' };
  const said = new Actor('a', behavior, null, null, sink, world);
  said.startSettled();
  said.startSettled();
  assert.equal(settled, 1, 'said twice, counted once');
  said.tell({ t: 'finish' });
  assert.equal(settled, 1, 'its end does not count it again');
  const ended = new Actor('b', behavior, null, null, sink, world);
  ended.tell({ t: 'finish' });
  assert.equal(settled, 2, 'a run that ends first (cancelled, failed) settles its start at its end');
  ended.startSettled();
  assert.equal(settled, 2, 'and a late answer does not count it again');

  // Through defineRun: a kind that does not say when is settled as it is spawned, and its end does not count it again.
  settled = 0;
  const taken = defineRun(behavior).spawn('c', null, null, sink, world);
  assert.equal(settled, 1, 'settled when taken up');
  taken.tell({ t: 'finish' } as never);
  assert.equal(settled, 1, 'its end does not settle it twice');
  const own = defineRun(behavior, { settlesOwnStart: true }).spawn('d', null, null, sink, world);
  assert.equal(settled, 1, 'a kind that settles its own start is not settled at spawn');
  own.tell({ t: 'finish' } as never);
  assert.equal(settled, 2, 'its end settles it');
});
