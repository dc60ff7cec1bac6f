// The start decision (src/admission.ts) and the lag signal it reads (actors/lag-report.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LagBoard, LagWindow, REPORT_MS, WINDOW_MS } from '../../actors/lag-report.ts';
import { Admission } from '../../src/admission.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';

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
    assert.deepEqual(a.refused, { capacity: 2, overload: 1, draining: 1, user_runs: 0, user_tokens: 0 });
  });

  it('judges overload by its signal at each decision, and says why it sheds without counting it', () => {
    let lagNow = 0;
    const a = new Admission({ maxActiveRuns: 10, overloadLagMs: 100 });
    a.watch({ lagNow: () => lagNow });
    assert.equal(a.shedding(), null);
    lagNow = 101;
    assert.equal(a.shedding(), 'overload');
    assert.equal(a.admit(0)?.outcome, 'overloaded');
    assert.deepEqual(a.refused, { capacity: 0, overload: 1, draining: 0, user_runs: 0, user_tokens: 0 }, 'shedding() counted nothing');
    a.count('overload');
    assert.equal(a.refused.overload, 2);
    lagNow = 0;
    assert.equal(a.admit(0), null);
    a.drain();
    assert.equal(a.shedding(), 'draining');
  });

  it('refuses while the starts waiting for the actor threads reach the bound, and takes starts again as they are taken up', () => {
    const backlog = { startBacklog: 0 };
    const a = new Admission({ maxActiveRuns: 100, overloadLagMs: 100, overloadStartBacklog: 3 });
    a.watchBacklog(backlog);
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
    const backlog = { startBacklog: 50 };
    const lagOff = new Admission({ maxActiveRuns: 100, overloadLagMs: 0, overloadStartBacklog: 10 });
    lagOff.watchBacklog(backlog);
    assert.equal(lagOff.admit(0)?.outcome, 'overloaded');
    const backlogOff = new Admission({ maxActiveRuns: 100, overloadLagMs: 100, overloadStartBacklog: 0 });
    backlogOff.watchBacklog(backlog);
    assert.equal(backlogOff.admit(0), null);
    assert.equal(backlogOff.shedding(), null);
  });

  it('OVERLOAD_LAG_MS=0 never refuses for lag', () => {
    const a = new Admission({ maxActiveRuns: 10, overloadLagMs: 0 });
    a.lagMs = 10_000;
    a.watch({ lagNow: () => 10_000 });
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
