// The start decision (src/admission.ts) and the lag signal it reads (actors/lag-report.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LagBoard, REPORT_MS } from '../../actors/lag-report.ts';
import { Admission } from '../../src/admission.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { waitFor } from '../helpers/server.ts';

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

  it('OVERLOAD_LAG_MS=0 never refuses for lag', () => {
    const a = new Admission({ maxActiveRuns: 10, overloadLagMs: 0 });
    a.lagMs = 10_000;
    assert.equal(a.admit(0), null);
    assert.equal(a.overloaded, false);
  });
});

describe('LagBoard', () => {
  it('counts a thread that stops reporting as late as its silence', async () => {
    const board = new LagBoard().start(() => {});
    try {
      board.report(0, 1);
      await waitFor(() => board.worstMs > 2 * REPORT_MS, 30_000, 'the silent thread to count as late');
      board.report(0, 1);
      await waitFor(() => board.worstMs < 2 * REPORT_MS, 30_000, 'a fresh report to count again');
    } finally {
      board.stop();
    }
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
