// Issue 48's start baseline read from the start-rate rows (bench/load/start-baseline.ts): the service's
// persisted start against nginx + SQL, Postgres in and out, each part's share; and the tables of the
// burst, long-answer and baseline checks in results.md, a carried check naming its run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeResults, type Results } from '../../bench/load/merge.ts';
import type { Row } from '../../bench/load/measure.ts';
import { markdown } from '../../bench/load/report.ts';
import { startBaselineSummary } from '../../bench/load/start-baseline.ts';
import { tally, type StreamOutcome } from '../../bench/load/timed-stream.ts';

const row = (o: Partial<Row>): Row => ({
  target: 'service', provider: 'provider_c', persist: true, k: 1000, rate: 250, scenario: 'start-rate',
  ttfdP50Ms: 2, ttfdP99Ms: 20, addedP50Ms: 1, addedP99Ms: 10, cpuUsPerDelta: null, rssKbPerStream: null,
  streams: 1000, failed: 0, lost: 0, duplicated: 0, ...o,
});
const rows = [
  row({ target: 'nginx', persist: null, cpuUsPerStart: 150 }),
  row({ cpuUsPerStart: 1600, pgCpuUsPerStart: 400, cpuUsByThread: { main: 400, actor: 1000, rest: 200 } }),
  row({ persist: false, cpuUsPerStart: 900 }),
  row({ target: 'nginx', variant: 'sql', cpuUsPerStart: 650, relayCpuUsPerStart: 150, sqlClientCpuUsPerStart: 500, pgCpuUsPerStart: 350 }),
];

test('the persisted service start is read against nginx + SQL, Postgres in and out, with each part\'s share', () => {
  const s = startBaselineSummary(rows) as Record<string, any>;
  assert.equal(s.rate250.service.total, 2000);
  assert.equal(s.rate250.baseline.total, 1000);
  assert.equal(s.rate250.serviceOverBaseline, 2);
  assert.equal(s.rate250.serviceOverBaselineWithoutPostgres, 2.46);
  assert.deepEqual(s.rate250.sharesPct, { service: { main: 20, actor: 50, rest: 10, postgres: 20 }, baseline: { relay: 15, sqlClient: 50, postgres: 35 } });
  assert.equal(s.pass, true, 'at 250/s, 2 × is within the goal');
  assert.equal((startBaselineSummary(rows.map((r) => (r.variant === 'sql' ? { ...r, pgCpuUsPerStart: 340 } : r))) as { pass: boolean }).pass, false);
  assert.match((startBaselineSummary(rows.filter((r) => r.variant !== 'sql')) as { skipped: string }).skipped, /nginx \+ SQL/);
});

test('stream outcomes tally into accepted, refused by message, done and why the others were not', () => {
  const o = (p: Partial<StreamOutcome>): StreamOutcome => ({ status: 200, headMs: 1, metaMs: 2, firstDeltaMs: 3, endMs: 4, done: true, chars: 1, stamps: 1, why: null, ...p });
  assert.deepEqual(tally([o({}), o({ done: false, why: 'error event: boom' }), o({ status: 503, why: '503 server is overloaded, retry later' }), o({ status: 0, why: 'no response: ECONNRESET' })]), {
    accepted: 2, done: 1, notDone: { 'error event: boom': 1 }, refused: { '503 server is overloaded, retry later': 1, 'no response: ECONNRESET': 1 },
  });
});

test('results.md shows the burst and baseline checks, and a check carried from an earlier run says where from', () => {
  const burst = {
    n100: { n: 100, accepted: 12, refused: { '503 server is overloaded, retry later': 88 }, done: 12, notDone: {}, metaMs: { n: 12, p50: 30, p90: 31, p99: 31, max: 31 },
      firstDeltaMs: { n: 12, p50: 40, p90: 41, p99: 42, max: 42 }, refusalMs: { n: 88, p50: 9, p90: 9, p99: 9, max: 9 }, lastAdmittedMs: 31, lastHeadMs: 30, seconds: 1 },
    pass: false,
  };
  const meta = (date: string, commit: string) => ({ date, commit, sweep: [], startsPerSec: 1000, burstK: 0 });
  const earlier: Results = { meta: meta('2026-12-07T20:00:00.000Z', 'aaa1111'), runs: [], checks: { burst } };
  const now: Results = { meta: meta('2026-12-07T21:00:00.000Z', 'bbb2222'), runs: rows, checks: { burst: { skipped: 'not in BENCH_ONLY' }, startBaseline: startBaselineSummary(rows) } };
  const merged = mergeResults(earlier, now);
  const md = markdown(merged.runs, merged.meta, merged.checks);
  assert.match(md, /## Bursts: N starts at once on an idle instance, the defaults \(carried from 2026-12-07T20:00, commit aaa1111\)/);
  assert.match(md, /\| 100 \| 12 \| 88 × 503 server is overloaded, retry later \| 12 \|/);
  assert.match(md, /\| 250 \| 1600 \| 400 \| 2000 \| 150 \| 500 \| 350 \| 1000 \| 2\.00 \| 2\.46 \| 20\/50\/10\/20 \| 15\/50\/35 \|/);
  assert.match(md, /\| nginx \(sql\) \| true \| 250 \| 1000 \| 650\.0 \| — \| 4\.3× \|/, 'the baseline row is read against plain nginx');
});
