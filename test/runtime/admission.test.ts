// The start decision (src/admission.ts) and the lag signal it reads (actors/lag-report.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUSY_WINDOW_MS, BusyWindow, LagBoard, LagSampler, LagWindow, REPORT_MS, WINDOW_MS } from '../../actors/lag-report.ts';
import { Admission } from '../../src/admission.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { waitFor } from '../helpers/wait.ts';

describe('Admission', () => {
  it('admits below capacity and on time, and refuses by reason: draining, then capacity, then overload', () => {
    const a = new Admission({ maxActiveRuns: 2, overloadLagMs: 100 });
    assert.equal(a.admit(1), null);
    assert.equal(a.admit(2)?.outcome, 'capacity');
    a.lagMs = 150;
    assert.deepEqual(a.admit(0), { ok: false, outcome: 'overloaded', message: 'server is overloaded, retry later' });
    assert.equal(a.admit(2)?.outcome, 'capacity', 'capacity is the more precise reason');
    a.drain();
    assert.deepEqual(a.admit(0), { ok: false, outcome: 'draining', message: 'server is draining' });
    assert.deepEqual(a.refused, { capacity: 2, overload: 1, draining: 1, user_runs: 0, user_tokens: 0, user_cost: 0 });
  });

  it('judges overload by its signal at each decision, and says why it sheds without counting it', () => {
    let lagNow = 0;
    const a = new Admission({ maxActiveRuns: 10, overloadLagMs: 100 });
    a.watch({ lagNow: () => lagNow, busyNow: () => 0 });
    assert.equal(a.shedding(), null);
    lagNow = 101;
    assert.equal(a.shedding(), 'overload');
    assert.equal(a.admit(0)?.outcome, 'overloaded');
    assert.deepEqual(a.refused, { capacity: 0, overload: 1, draining: 0, user_runs: 0, user_tokens: 0, user_cost: 0 }, 'shedding() counted nothing');
    a.count('overload');
    assert.equal(a.refused.overload, 2);
    lagNow = 0;
    assert.equal(a.admit(0), null);
    a.drain();
    assert.equal(a.shedding(), 'draining');
  });

  it('refuses while the starts waiting for the actor threads reach the bound, and takes starts again as they are taken up', () => {
    const backlog = { activeCount: 0, startBacklog: 0 };
    const a = new Admission({ maxActiveRuns: 100, overloadLagMs: 100, overloadStartBacklog: 3 });
    a.watchRuns(backlog);
    backlog.startBacklog = 2;
    assert.equal(a.shedding(), null, 'two waiting: a third may go');
    assert.equal(a.admit(2), null);
    backlog.startBacklog = 3;
    assert.equal(a.shedding(), 'overload');
    assert.deepEqual(a.admit(3), { ok: false, outcome: 'overloaded', message: 'server is overloaded, retry later' });
    assert.equal(a.refused.overload, 1);
    backlog.startBacklog = 0;
    assert.equal(a.admit(3), null, 'the threads caught up: no window to wait out');
  });

  it('the backlog bound holds with the lag signal off, and 0 turns it off', () => {
    const backlog = { activeCount: 0, startBacklog: 50 };
    const lagOff = new Admission({ maxActiveRuns: 100, overloadLagMs: 0, overloadStartBacklog: 10 });
    lagOff.watchRuns(backlog);
    assert.equal(lagOff.admit(0)?.outcome, 'overloaded');
    const backlogOff = new Admission({ maxActiveRuns: 100, overloadLagMs: 100, overloadStartBacklog: 0 });
    backlogOff.watchRuns(backlog);
    assert.equal(backlogOff.admit(0), null);
    assert.equal(backlogOff.shedding(), null);
  });

  it('refuses while a thread is busier than OVERLOAD_BUSY_PERCENT, and takes starts again when it is not', () => {
    let busy = 0.85;
    const a = new Admission({ maxActiveRuns: 10, overloadLagMs: 100, overloadBusyPercent: 80 });
    a.watch({ lagNow: () => 0, busyNow: () => busy });
    assert.equal(a.admit(0)?.outcome, 'overloaded');
    assert.equal(a.shedding(), 'overload', 'the router refuses it from the headers too');
    assert.equal(a.busyNow(), 0.85, 'the gauge reads it');
    busy = 0.8;
    assert.equal(a.admit(0), null, 'at the bound: taken');
    assert.deepEqual(a.refused.overload, 1);
    const off = new Admission({ maxActiveRuns: 10, overloadLagMs: 100, overloadBusyPercent: 0 });
    off.watch({ lagNow: () => 0, busyNow: () => 1 });
    assert.equal(off.admit(0), null, 'OVERLOAD_BUSY_PERCENT=0: never');
    assert.equal(off.busyNow(), 1, 'the gauge still reads');
  });

  it('OVERLOAD_LAG_MS=0 never refuses for lag', () => {
    const a = new Admission({ maxActiveRuns: 10, overloadLagMs: 0 });
    a.lagMs = 10_000;
    a.watch({ lagNow: () => 10_000, busyNow: () => 0 });
    assert.equal(a.admit(0), null);
    assert.equal(a.overloaded, false);
    assert.equal(a.shedding(), null);
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

describe('drain and overload configuration', () => {
  it('defaults to a 30 s grace and a lag limit; bad values name the variable', () => {
    const c = loadConfig({});
    assert.equal(c.SHUTDOWN_GRACE_MS, 30_000);
    assert.ok(c.OVERLOAD_LAG_MS > 0);
    assert.equal(loadConfig({ SHUTDOWN_GRACE_MS: '0', OVERLOAD_LAG_MS: '0' }).OVERLOAD_LAG_MS, 0);
    assert.throws(() => loadConfig({ SHUTDOWN_GRACE_MS: '-1' }), (e: Error) => e instanceof ConfigError && /SHUTDOWN_GRACE_MS/.test(e.message));
    assert.throws(() => loadConfig({ OVERLOAD_LAG_MS: 'soon' }), (e: Error) => e instanceof ConfigError && /OVERLOAD_LAG_MS/.test(e.message));
  });
});
