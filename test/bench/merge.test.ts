// The committed results are what the docs quote: a trimmed run merges into them (merge.ts) and
// drops nothing an earlier run measured, and the table marks what was carried and from where.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { knobs, mergeResults, rowKey, type Results } from '../../bench/load/merge.ts';
import type { Row } from '../../bench/load/measure.ts';
import { markdown } from '../../bench/load/report.ts';

const row = (o: Partial<Row>): Row => ({
  target: 'service', provider: 'provider_c', persist: true, k: 1000, rate: 20, scenario: 'stream',
  ttfdP50Ms: 2, ttfdP99Ms: 20, addedP50Ms: 1, addedP99Ms: 10, cpuUsPerDelta: 30, rssKbPerStream: 30,
  streams: 1000, failed: 0, lost: 0, duplicated: 0, latencyP99Ms: 12, ...o,
});
const meta = (date: string, commit: string) => ({ date, commit, sweep: [], startsPerSec: 1000, burstK: 1000 });

const old: Results = {
  meta: meta('2026-11-25T18:00:00.000Z', 'aaa1111'),
  runs: [row({ cpuUsPerDelta: 40 }), row({ target: 'peer', cpuUsPerDelta: 50 }), row({ scenario: 'capacity', k: 1600, capacityStreams: 1600 })],
  checks: { overloadShedding: { phases: 3 }, rollingRestart: { skipped: 'BENCH_ROLLING=0' }, historySearch: [{ database: 'postgres' }] },
};
const trimmed: Results = {
  meta: meta('2026-11-26T13:00:00.000Z', 'bbb2222'),
  runs: [row({ cpuUsPerDelta: 33 }), row({ scenario: 'capacity', k: 1040, capacityStreams: 1040 })],
  checks: { overloadShedding: { skipped: 'BENCH_OVERLOAD=0' }, rollingRestart: { lost: 0 } },
};

test('a trimmed run replaces the rows it measured and keeps the others, marked with their run', () => {
  const merged = mergeResults(old, trimmed);
  assert.equal(merged.meta.commit, 'bbb2222');
  assert.deepEqual(merged.runs.map((r) => [rowKey(r), r.capacityStreams ?? r.cpuUsPerDelta, r.from?.commit ?? null]), [
    ['stream/service//provider_c/true/1000/20', 33, null],
    ['capacity/service//provider_c/true//20', 1040, null],
    ['stream/peer//provider_c/true/1000/20', 50, 'aaa1111'],
  ]);
});

test('a check this run skipped keeps the earlier measurement with its origin; a measured one replaces it', () => {
  const merged = mergeResults(old, trimmed);
  assert.deepEqual(merged.checks.overloadShedding, { phases: 3, from: { date: '2026-11-25T18:00:00.000Z', commit: 'aaa1111' } });
  assert.deepEqual(merged.checks.rollingRestart, { lost: 0 });
  assert.deepEqual(merged.checks.historySearch, { runs: [{ database: 'postgres' }], from: { date: '2026-11-25T18:00:00.000Z', commit: 'aaa1111' } });
});

test('a row carried twice keeps its first origin', () => {
  const third: Results = { meta: meta('2026-11-27T10:00:00.000Z', 'ccc3333'), runs: [row({})], checks: {} };
  const peer = mergeResults(mergeResults(old, trimmed), third).runs.find((r) => r.target === 'peer');
  assert.equal(peer?.from?.commit, 'aaa1111');
});

test("each carried row's run keeps its knobs in meta.origins; a run nothing refers to any more is dropped", () => {
  const knobsOf = (m: Results['meta'], k: string) => ({ ...m, knobs: { BENCH_ONLY: k } });
  const first = { ...old, meta: knobsOf(old.meta, 'first') };
  const second = { ...trimmed, meta: knobsOf(trimmed.meta, 'second') };
  const merged = mergeResults(first, second);
  assert.deepEqual(merged.meta.origins, [{ date: '2026-11-25T18:00:00.000Z', commit: 'aaa1111', knobs: { BENCH_ONLY: 'first' } }]);
  assert.deepEqual(merged.meta.knobs, { BENCH_ONLY: 'second' });
  // A third run carries rows of both earlier runs: both origins stay, each with its own knobs.
  const third: Results = { meta: knobsOf(meta('2026-11-27T10:00:00.000Z', 'ccc3333'), 'third'), runs: [row({ target: 'peer' })], checks: {} };
  const again = mergeResults(merged, third);
  assert.deepEqual((again.meta.origins as Array<{ commit: string; knobs: unknown }>).map((o) => [o.commit, o.knobs]), [
    ['aaa1111', { BENCH_ONLY: 'first' }],
    ['bbb2222', { BENCH_ONLY: 'second' }],
  ]);
  // Once every row and check of a run has been measured again, its origin goes.
  const all: Results = { meta: meta('2026-11-28T10:00:00.000Z', 'ddd4444'), runs: again.runs.map(({ from: _, ...r }) => r), checks: { overloadShedding: { phases: 1 }, rollingRestart: { lost: 0 }, historySearch: [] } };
  assert.equal(mergeResults(again, all).meta.origins, undefined);
});

test('carried rows are listed apart in the Markdown, not mixed into the measured tables', () => {
  const md = markdown(mergeResults(old, trimmed).runs, trimmed.meta, {});
  const [measured, carried] = md.split('## Carried from earlier runs');
  assert.ok(carried, 'a carried section');
  assert.doesNotMatch(measured!, /^\| peer/m);
  assert.match(carried!, /\| stream \| peer \| provider_c .* commit aaa1111 \|/);
});

test('the knobs of a run are its BENCH_, LEDGER_ and ACTOR_THREADS variables', () => {
  assert.deepEqual(knobs({ BENCH_SWEEP: '1000:20:120', LEDGER_RUNS: '3', ACTOR_THREADS: '1', HOME: '/root' }), {
    BENCH_SWEEP: '1000:20:120', LEDGER_RUNS: '3', ACTOR_THREADS: '1',
  });
});
