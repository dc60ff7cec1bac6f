// The start decision and its pacing (src/admission/): the limit on starts in flight and how their
// latency and the threads' lag move it, the start queue that lets a burst through and refuses a flood
// that lasts, fairly between users, and the lag signal (actors/lag-report.ts). Every clock here is
// the test's own: scripted latencies and arrivals, never a wait.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUSY_WINDOW_MS, BusyWindow, LagBoard, LagSampler, LagWindow, REPORT_MS, WINDOW_MS } from '../../actors/lag-report.ts';
import { Admission } from '../../src/admission/admission.ts';
import { LIMIT_DEFAULTS, StartLimit } from '../../src/admission/limit.ts';
import { QUEUE_DEFAULTS, StartQueue } from '../../src/admission/start-queue.ts';
import { ConfigError, loadConfig, retiredVariablesWarning } from '../../src/base/config.ts';
import { waitFor } from '../helpers/wait.ts';

/** A clock the test moves. */
function clock(at = 0) {
  const c = { t: at, now: () => c.t };
  return c;
}

/** One window of starts: `n` settle `ms` after they went with the limit in use; the last one closes the window. */
function window(limit: StartLimit, c: { t: number }, ms: number, n = limit.value): void {
  for (let i = 0; i < n; i++) {
    if (i === n - 1) c.t += LIMIT_DEFAULTS.windowMs;
    limit.sample(ms, limit.value);
  }
}

describe('StartLimit (scripted latencies)', () => {
  it('grows while starts settle on time and the limit is used', () => {
    const c = clock();
    const limit = new StartLimit(c.now);
    const seen = [limit.value];
    for (let w = 0; w < 30; w++) {
      window(limit, c, 4);
      seen.push(limit.value);
    }
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! >= seen[i - 1]!, `never down: ${seen.join(' ')}`);
    assert.ok(seen.at(-1)! >= 2 * LIMIT_DEFAULTS.initial, `grew: ${seen.join(' ')}`);
    assert.equal(limit.baselineMs, 4);
  });

  it('does not grow while fewer than half of it are in flight: nothing shows more would be carried', () => {
    const c = clock();
    const limit = new StartLimit(c.now);
    for (let w = 0; w < 30; w++) {
      limit.sample(4, 1);
      c.t += LIMIT_DEFAULTS.windowMs;
      limit.sample(4, 1);
    }
    assert.equal(limit.latencyMs, 4, 'windows were measured');
    assert.equal(limit.value, LIMIT_DEFAULTS.initial);
  });

  it('shrinks when the starts settle past twice the baseline, down to its floor, and grows back once they are on time', () => {
    const c = clock();
    const limit = new StartLimit(c.now);
    for (let w = 0; w < 20; w++) window(limit, c, 4);
    const grown = limit.value;
    window(limit, c, 40);
    const once = limit.value;
    assert.ok(once < grown, `${once} < ${grown}`);
    assert.ok(once >= Math.floor(grown * 0.75), `a tenfold latency takes at most a quarter a window: ${once} of ${grown}`);
    for (let w = 0; w < 60; w++) window(limit, c, 40);
    assert.equal(limit.value, LIMIT_DEFAULTS.min);
    for (let w = 0; w < 30; w++) window(limit, c, 4);
    assert.ok(limit.value > 2 * LIMIT_DEFAULTS.min, `back up: ${limit.value}`);
  });

  it('holds within the tolerance: latency up to twice the baseline is on time', () => {
    const c = clock();
    const limit = new StartLimit(c.now);
    window(limit, c, 4);
    const before = limit.value;
    for (let w = 0; w < 10; w++) window(limit, c, 7.9);
    assert.ok(limit.value > before, `${limit.value} > ${before}`);
  });

  it('shrinks while a thread\'s event loop is late, whatever the starts\' latency', () => {
    const c = clock();
    let lag = 0;
    const limit = new StartLimit(c.now, () => lag);
    for (let w = 0; w < 20; w++) window(limit, c, 4);
    const grown = limit.value;
    lag = LIMIT_DEFAULTS.lagTargetMs + 1;
    for (let w = 0; w < 5; w++) window(limit, c, 4);
    assert.ok(limit.value < grown, `${limit.value} < ${grown}`);
    lag = LIMIT_DEFAULTS.lagTargetMs;
    const low = limit.value;
    window(limit, c, 4);
    assert.ok(limit.value >= low, 'at the target: on time again');
  });

  it('says how fast the limit lets starts through (Little: limit / latency)', () => {
    const c = clock();
    const limit = new StartLimit(c.now);
    assert.equal(limit.ratePerMs, 0, 'nothing measured: no prediction');
    window(limit, c, 8, 2);
    assert.equal(limit.ratePerMs, limit.value / 8);
  });
});

/**
 * Arrivals and departures by the millisecond: each ms `arrive` starts of `owner` are offered (asked
 * `refuses` first, pushed when not refused) and `leave` go. Returns per ms what was refused.
 */
function drive(q: StartQueue<number>, c: { t: number }, ms: number, arrive: number, leave: number, owner = 'u', rate = 0): boolean[] {
  const refusedAt: boolean[] = [];
  for (let i = 0; i < ms; i++) {
    c.t++;
    let refused = false;
    for (let a = 0; a < arrive; a++) {
      if (q.refuses(owner, c.t, rate)) refused = true;
      else q.push(c.t, owner, c.t);
    }
    for (let l = 0; l < leave; l++) q.shift();
    refusedAt.push(refused);
  }
  return refusedAt;
}

describe('StartQueue (scripted arrivals)', () => {
  it('lets a burst of 1,000 at once through, and it drains', () => {
    const c = clock();
    const q = new StartQueue<number>();
    for (let i = 0; i < 1000; i++) {
      assert.equal(q.refuses('u', c.t, 0.5), false, `start ${i}`);
      q.push(i, 'u', c.t);
    }
    // They leave at 0.5 per ms: the last after 2 s. Nothing else comes, nothing is refused.
    const refused = drive(q, c, 2000, 0, 1);
    assert.equal(q.length, 0);
    assert.equal(refused.includes(true), false);
    assert.equal(q.refuses('u', c.t, 0.5), false);
  });

  it('lets through a burst whose arrival takes a second and a half, even while none leaves', () => {
    const c = clock();
    const q = new StartQueue<number>();
    const refused = drive(q, c, 1500, 1, 0).concat(drive(q, c, 1500, 0, 1));
    assert.equal(q.length, 0);
    assert.equal(refused.includes(true), false);
  });

  it('refuses a flood that lasts as soon as its oldest start has waited an interval, at once from then on', () => {
    const c = clock();
    const q = new StartQueue<number>();
    // Two starts a ms offered, one leaves: the oldest waits half a ms longer each ms.
    const refused = drive(q, c, 4 * QUEUE_DEFAULTS.intervalMs, 2, 1);
    const first = refused.indexOf(true);
    assert.ok(first > 0, 'the start of the flood is taken');
    // At 2 offered and 1 gone a ms, the oldest has waited the interval after twice the interval.
    assert.ok(Math.abs(first - 2 * QUEUE_DEFAULTS.intervalMs) <= 2, `refused from the ms its oldest start has waited longer than the interval: ${first}`);
    assert.equal(refused.slice(first).includes(false), false, 'every ms after: refused');
    assert.equal(q.shedding, true);
    assert.ok(q.length <= 2, `the flood refused, what it had queued went on: ${q.length} left`);
  });

  it('takes starts again once the queue is back within the target (CoDel\'s hysteresis)', () => {
    const c = clock();
    const q = new StartQueue<number>();
    drive(q, c, 3 * QUEUE_DEFAULTS.intervalMs, 2, 1);
    assert.equal(q.shedding, true);
    // The flood stops; one start is offered now and then while the queue drains.
    let takenAt = -1;
    for (let i = 0; i < 4 * QUEUE_DEFAULTS.intervalMs && takenAt < 0; i++) {
      c.t++;
      q.shift();
      if (i % 10 === 0 && !q.refuses('u', c.t, 0)) takenAt = i;
    }
    assert.ok(takenAt > 0, 'taken again');
    assert.ok(q.oldestWaitMs(c.t) <= QUEUE_DEFAULTS.targetMs, `within the target: ${q.oldestWaitMs(c.t)} ms`);
  });

  it('refuses a start predicted to wait past MAX_WAIT, and takes the part of a burst that fits', () => {
    const c = clock();
    const q = new StartQueue<number>();
    const rate = 0.1; // starts per ms
    let taken = 0;
    for (let i = 0; i < 1000; i++) {
      if (q.refuses('u', c.t, rate)) continue;
      q.push(i, 'u', c.t);
      taken++;
    }
    assert.equal(taken, QUEUE_DEFAULTS.maxWaitMs * rate, 'the burst up to MAX_WAIT at the rate');
  });

  it('does not refuse another user for one user\'s flood, and gives every user\'s line its turn', () => {
    const c = clock();
    const q = new StartQueue<string>();
    drive(q as unknown as StartQueue<number>, c, 3 * QUEUE_DEFAULTS.intervalMs, 2, 1, 'noisy');
    assert.equal(q.refuses('noisy', c.t, 0), true, 'the flood is shed');
    assert.equal(q.refuses('quiet', c.t, 0), false, 'another user is not');
    q.push('quiet-1', 'quiet', c.t);
    assert.equal(q.refuses('quiet', c.t, 0), false, 'one waiting of thousands is far from an equal share');
    q.push('quiet-2', 'quiet', c.t);
    // Turns: the quiet user's starts leave within two departures of each, not behind the noisy thousands.
    const out = [q.shift(), q.shift(), q.shift(), q.shift()];
    assert.deepEqual(out.filter((x) => typeof x === 'string'), ['quiet-1', 'quiet-2']);
  });

  it('a line that never empties keeps its order and its waits across the drop of its gone head', () => {
    const c = clock();
    const q = new StartQueue<number>();
    // One user always waiting: two in, one out a ms, so the line's gone head passes the 1,024 it is dropped at.
    let next = 0;
    const out: number[] = [];
    for (let ms = 0; ms < 3000; ms++) {
      c.t = ms;
      q.push(next++, 'u', ms);
      q.push(next++, 'u', ms);
      out.push(q.shift()!);
    }
    assert.deepEqual(out, Array.from({ length: 3000 }, (_, i) => i), 'oldest first, none lost or repeated');
    assert.equal(q.waitingFor('u'), 3000);
    // The next to leave is start 3000, pushed at ms 1500: the waits still line up with the starts.
    assert.equal(q.oldestWaitMs(c.t), c.t - 1500);
    assert.equal(q.shift(), 3000);
  });
});

describe('StartQueue: adaptive LIFO under a standing queue (scripted arrivals)', () => {
  it('serves each user\'s oldest first while the oldest has waited no longer than the target, newest first past it', () => {
    const c = clock();
    const q = new StartQueue<number>();
    for (let i = 0; i < 6; i++) q.push(i, 'u', i);
    c.t = QUEUE_DEFAULTS.targetMs;
    assert.equal(q.shift(c.t), 0, 'the oldest has waited the target, not past it: FIFO');
    assert.equal(q.shift(c.t), 1);
    c.t = 2 + QUEUE_DEFAULTS.targetMs + 1;
    // The oldest (2) has waited past the target now: the newest goes first.
    assert.deepEqual([q.shift(c.t), q.shift(c.t)], [5, 4]);
    assert.equal(q.oldestWaitMs(c.t), c.t - 2, 'the oldest still waits, its wait unchanged');
    // Drained of all but the two oldest, whose waits are still past the target: newest of them first.
    assert.deepEqual([q.shift(c.t), q.shift(c.t), q.shift(c.t)], [3, 2, undefined]);
  });

  it('keeps the turns between users while it serves newest first', () => {
    const c = clock();
    const q = new StartQueue<string>();
    for (let i = 0; i < 3; i++) q.push(`a${i}`, 'a', c.t);
    q.push('b0', 'b', c.t);
    q.push('b1', 'b', c.t);
    c.t += QUEUE_DEFAULTS.targetMs + 1;
    assert.deepEqual([1, 2, 3, 4, 5].map(() => q.shift(c.t)), ['a2', 'b1', 'a1', 'b0', 'a0']);
  });

  it('a burst with nothing after it is served whole, newest first, however long its oldest waits', () => {
    const c = clock();
    const q = new StartQueue<number>();
    for (let i = 0; i < 1000; i++) {
      assert.equal(q.refuses('u', c.t, 0.25), false);
      q.push(i, 'u', c.t);
    }
    // At 0.25 a ms the last leaves after 4 s, twice the interval: nothing arrives, so nothing is dropped.
    const served: number[] = [];
    for (let ms = 0; q.length > 0; ms++) {
      c.t++;
      assert.equal(q.drop(c.t), undefined, `nothing dropped at ${ms} ms`);
      if (ms % 4 === 3) served.push(q.shift(c.t)!);
    }
    assert.equal(served.length, 1000);
    // All came at 0: oldest first until they have waited the target (the 25 served by then), then newest first.
    assert.deepEqual(served.slice(0, 25), Array.from({ length: 25 }, (_, i) => i));
    assert.deepEqual(served.slice(25, 27), [999, 998], 'newest first once the queue stands');
    assert.deepEqual([...served].sort((x, y) => x - y), Array.from({ length: 1000 }, (_, i) => i), 'each once');
  });

  it('under a flood that lasts, drops the starts that waited past MAX_WAIT, and serves none older', () => {
    const c = clock();
    const q = new StartQueue<number>();
    const waited: number[] = [];
    const dropped: number[] = [];
    let refused = 0;
    // One start a ms offered, one leaves every 8 ms, for three MAX_WAITs: shed from the first interval on, and what
    // came in it takes longer than MAX_WAIT to leave.
    for (let ms = 0; ms < 3 * QUEUE_DEFAULTS.maxWaitMs; ms++) {
      c.t++;
      if (q.refuses('u', c.t, 0)) refused++;
      else q.push(c.t, 'u', c.t);
      for (let d = q.drop(c.t); d !== undefined; d = q.drop(c.t)) dropped.push(c.t - d);
      if (ms % 8 === 7) {
        const next = q.shift(c.t);
        if (next !== undefined) waited.push(c.t - next);
      }
    }
    assert.ok(refused > 0, 'the flood is refused');
    assert.ok(dropped.length > 0, 'the oldest were dropped');
    assert.ok(dropped.every((w) => w > QUEUE_DEFAULTS.maxWaitMs), 'only past MAX_WAIT');
    assert.ok(Math.max(...waited) <= QUEUE_DEFAULTS.maxWaitMs + 1, `none served after waiting past MAX_WAIT: ${Math.max(...waited)} ms`);
    assert.ok(dropped.length + waited.length + q.length === 3 * QUEUE_DEFAULTS.maxWaitMs - refused, 'every start taken is served, dropped or waiting');
  });

  it('withdraws a start from anywhere in its line; the others keep their order and their waits', () => {
    const c = clock();
    const q = new StartQueue<number>();
    for (let i = 0; i < 5; i++) q.push(i, 'u', c.t++);
    q.push(100, 'v', c.t);
    assert.equal(q.withdraw(2, 'u'), true);
    assert.equal(q.withdraw(2, 'u'), false, 'once');
    assert.equal(q.withdraw(3, 'v'), false, 'another user\'s line');
    assert.equal(q.withdraw(0, 'u'), true, 'its oldest');
    assert.equal(q.withdraw(4, 'u'), true, 'its newest');
    assert.deepEqual([q.length, q.waitingFor('u'), q.oldestWaitMs(c.t)], [3, 2, c.t - 1]);
    assert.deepEqual([q.shift(), q.shift(), q.shift(), q.shift()], [1, 100, 3, undefined]);
    assert.equal(q.withdraw(100, 'v'), false, 'served already');
  });
});

describe('Admission', () => {
  it('admits below capacity, and refuses by reason: draining, then capacity, then overload', () => {
    const c = clock();
    const a = new Admission({ maxActiveRuns: 2, adaptive: true, now: c.now, limit: { initial: 1, min: 1 } });
    assert.equal(a.admit(1), null);
    assert.equal(a.admit(2)?.outcome, 'capacity');
    // A start in flight, one waiting, and the waiting one's wait runs past the interval: a flood.
    assert.equal(a.take('first', 'u'), true);
    a.watchRuns({ activeCount: 1, startBacklog: 1 });
    assert.equal(a.take('second', 'u'), false);
    c.t += QUEUE_DEFAULTS.intervalMs + 1;
    assert.equal(a.shedding('u'), 'overload');
    assert.deepEqual(a.refused.overload, 0, 'shedding() counts nothing');
    assert.deepEqual(a.admit(0, 'u'), { ok: false, outcome: 'overloaded', message: 'server is overloaded, retry later' });
    assert.equal(a.admit(0, 'other'), null, 'another user is not refused for it');
    assert.equal(a.admit(2, 'u')?.outcome, 'capacity', 'capacity is the more precise reason');
    a.count('overload');
    a.drain();
    assert.deepEqual(a.admit(0), { ok: false, outcome: 'draining', message: 'server is draining' });
    assert.equal(a.shedding(), 'draining');
    assert.deepEqual(a.refused, { capacity: 2, overload: 2, draining: 1, user_runs: 0, user_tokens: 0, user_cost: 0 });
  });

  it('sends starts while fewer than the limit are in flight (the supervisor\'s count); the next waits its turn and goes when one settles', () => {
    const c = clock();
    const a = new Admission({ maxActiveRuns: 100, adaptive: true, now: c.now, limit: { initial: 2, min: 2 } });
    // The supervisor's counts, moved as it moves them: a start sent is in flight until its host settles it.
    const counts = { activeCount: 0, startBacklog: 0 };
    a.watchRuns(counts);
    const send = (taken: unknown) => (taken === true || typeof taken === 'number' ? counts.startBacklog++ : undefined);
    const settle = () => (counts.startBacklog--, a.settled(5));
    for (const i of [1, 2]) {
      const taken = a.take(i);
      assert.equal(taken, true);
      send(taken);
    }
    assert.equal(a.take(3), false);
    assert.equal(a.take(4), false);
    assert.deepEqual([a.inFlight, a.waiting], [2, 2]);
    assert.equal(a.next(), undefined, 'no place free');
    settle();
    const third = a.next();
    assert.equal(third, 3);
    send(third);
    assert.equal(a.next(), undefined);
    // A start lost with its host: the supervisor counts it out, and its place is free.
    counts.startBacklog--;
    assert.equal(a.next(), 4);
    counts.startBacklog++;
    assert.deepEqual([a.inFlight, a.waiting], [2, 0]);
    counts.startBacklog = 7;
    assert.equal(a.inFlight, 7, 'no count of its own: the supervisor\'s is the one read');
  });

  it('ADMISSION=off: every start goes at once and none is refused for overload', () => {
    const c = clock();
    const a = new Admission({ maxActiveRuns: 100, adaptive: false, now: c.now, limit: { initial: 1, min: 1 } });
    for (let i = 0; i < 50; i++) assert.equal(a.take(i), true);
    c.t += 60_000;
    assert.equal(a.shedding(), null);
    assert.equal(a.admit(0), null);
    assert.equal(a.waiting, 0);
  });
});

describe('LagBoard (a clock the test advances)', () => {
  it('counts a thread that stops reporting as late as its silence, and a fresh report as on time', () => {
    let now = 1000;
    const board = new LagBoard(() => now);
    board.fold(0);
    board.report(0, 1);
    assert.equal(board.lagNow(), 1);
    now += REPORT_MS + 40;
    board.fold(2);
    assert.equal(board.lagNow(), 40, 'host 0 is 40 ms overdue');
    board.report(0, 3);
    assert.equal(board.lagNow(), 3);
  });

  it('counts the main loop late before its next fold, by how overdue the fold is', () => {
    let now = 0;
    const board = new LagBoard(() => now);
    board.fold(0);
    now = REPORT_MS;
    assert.equal(board.lagNow(), 0);
    now = REPORT_MS + 250;
    assert.equal(board.lagNow(), 250);
  });

  it('hostsLagNow is the actor threads\' lag, or the main thread\'s while none reports (runs on the main thread)', () => {
    let now = 0;
    const board = new LagBoard(() => now);
    board.fold(120);
    assert.equal(board.hostsLagNow(), 120, 'no actor thread: the main thread runs the runs');
    board.report(0, 3);
    assert.equal(board.hostsLagNow(), 3, 'the main thread\'s own lag is not the hosts\'');
    assert.equal(board.lagNow(), 120);
    now += REPORT_MS + 70;
    board.fold(0);
    assert.equal(board.hostsLagNow(), 70, 'a host overdue counts as late as its silence');
  });

  it('busyNow is the busiest of the main thread and the reporting threads', () => {
    const board = new LagBoard(() => 0);
    board.fold(0, 0.3);
    assert.equal(board.busyNow(), 0.3);
    board.report(0, 0, 0.9);
    board.report(1, 0, 0.2);
    assert.equal(board.busyNow(), 0.9);
    board.report(0, 0, 0.1);
    assert.equal(board.busyNow(), 0.3);
  });

  it('busyNow counts a thread silent for a whole window past its report as busy all of it', () => {
    let now = 0;
    const board = new LagBoard(() => now);
    board.fold(0, 0.1);
    board.report(0, 0, 0.2);
    now = REPORT_MS + BUSY_WINDOW_MS;
    assert.equal(board.busyNow(), 0.2, 'due, and overdue by less than the window: its last reading');
    board.fold(0, 0.1);
    now += 1;
    assert.equal(board.busyNow(), 1, 'host 0 overdue by more than the window');
    board.report(0, 0, 0.2);
    assert.equal(board.busyNow(), 0.2, 'it reported again');
    now += REPORT_MS + BUSY_WINDOW_MS + 1;
    board.report(0, 0, 0.2);
    assert.equal(board.busyNow(), 1, 'the main thread silent as long');
  });

  it('a busy share is over the last BUSY_WINDOW_MS / REPORT_MS slices, weighted by their length', () => {
    const window = new BusyWindow();
    const slices = BUSY_WINDOW_MS / REPORT_MS;
    for (let i = 0; i < slices; i++) window.fold(REPORT_MS, REPORT_MS);
    assert.equal(window.busy, 1);
    // One long slice of idle weighs as much as its length: half of the time idle.
    assert.equal(window.fold(0, REPORT_MS * (slices - 1)), (slices - 1) / (2 * (slices - 1)));
    for (let i = 1; i < slices; i++) window.fold(0, REPORT_MS);
    assert.equal(window.busy, 0, 'the busy slices are gone');
  });

  it('a real loop reads busy after it spins and not busy once it idles', async () => {
    const seen: number[] = [];
    const sampler = new LagSampler().start((_p99, busy) => seen.push(busy));
    try {
      await waitFor(() => seen.length > 0, 10_000, 'a first slice');
      const spinUntil = performance.now() + BUSY_WINDOW_MS * 2;
      while (performance.now() < spinUntil);
      const at = seen.length;
      await waitFor(() => seen.length > at, 10_000, 'the slice after the spin');
      assert.ok(seen[at]! > 0.5, `busy ${seen[at]} after a spin of twice the window`);
      await waitFor(() => seen[seen.length - 1]! < 0.5, 10_000, 'a slice mostly idle');
    } finally {
      sampler.stop();
    }
  });

  it('a thread keeps a slow slice for the last second: WINDOW_MS / REPORT_MS folds', () => {
    const window = new LagWindow();
    window.fold(150);
    for (let i = 1; i < WINDOW_MS / REPORT_MS; i++) assert.equal(window.fold(0), 150, `fold ${i}`);
    assert.equal(window.fold(0), 0, 'a second later it is gone');
  });
});

describe('admission configuration', () => {
  it('ADMISSION is adaptive by default or off, and a bad value names the variable', () => {
    assert.equal(loadConfig({}).ADMISSION, 'adaptive');
    assert.equal(loadConfig({ ADMISSION: 'off' }).ADMISSION, 'off');
    assert.throws(() => loadConfig({ ADMISSION: 'fixed' }), (e: Error) => e instanceof ConfigError && /ADMISSION/.test(e.message));
  });

  it('accepts the retired thresholds, whatever their value, with a warning that names them', () => {
    const c = loadConfig({ OVERLOAD_LAG_MS: '100', OVERLOAD_START_BACKLOG: 'soon' });
    assert.equal(c.ADMISSION, 'adaptive');
    assert.equal(
      retiredVariablesWarning(c),
      'OVERLOAD_LAG_MS, OVERLOAD_START_BACKLOG are no longer used and ignored: admission adapts on its own (ADMISSION=off turns shedding off)',
    );
    assert.equal(retiredVariablesWarning(loadConfig({})), null);
  });

  it('defaults to a 30 s grace; a bad value names the variable', () => {
    assert.equal(loadConfig({}).SHUTDOWN_GRACE_MS, 30_000);
    assert.throws(() => loadConfig({ SHUTDOWN_GRACE_MS: '-1' }), (e: Error) => e instanceof ConfigError && /SHUTDOWN_GRACE_MS/.test(e.message));
  });
});
