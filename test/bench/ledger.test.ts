// The arithmetic the ledger and the bench read their figures with (bench/ledger/timing.ts,
// bench/load/measure.ts): a stage's difference and share, the sum that leaves parts out, a row's median
// run, and the service's CPU split by thread.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { medianRows, minus, per, sum, type Stage } from '../../bench/ledger/timing.ts';
import { threadSplit } from '../../bench/load/measure.ts';

const stage = (name: string, cpuUs: number, o: Partial<Stage> = {}): Stage => ({ name, cpuUs, wallUs: cpuUs * 2, ...o });

test('the sum counts the rows in it and leaves the parts shown beside them out', () => {
  const rows = [stage('whole', 100, { otherUs: 10 }), stage('(part)', 60, { inSum: false, otherUs: 5 }), stage('other', 20)];
  assert.equal(sum(rows, 'cpuUs'), 120);
  assert.equal(sum(rows, 'otherUs'), 10);
});

test('minus and per take every figure a stage has, and only those', () => {
  const d = minus(stage('post', 90, { otherUs: 30, wakeUps: 2 }), stage('get', 60, { otherUs: 10, wakeUps: 1.5 }));
  assert.deepEqual([d.name, d.cpuUs, d.wallUs, d.otherUs, d.wakeUps], ['post', 30, 60, 20, 0.5]);
  assert.equal('cpuInOpsUs' in d, false);
  const p = per(stage('batch', 40, { cpuInOpsUs: 8 }), 4);
  assert.deepEqual([p.cpuUs, p.wallUs, p.cpuInOpsUs, 'otherUs' in p, 'kernelUs' in p], [10, 20, 2, false, false]);
  const k = minus(stage('read', 16, { kernelUs: 4 }), stage('idle', 1, { kernelUs: 0.5 }));
  assert.equal(k.kernelUs, 3.5);
  assert.equal(per(stage('reads', 40, { kernelUs: 12 }), 4).kernelUs, 3);
  assert.equal(sum([stage('a', 10, { kernelUs: 2 }), stage('b', 5, { kernelUs: 1, inSum: false })], 'kernelUs'), 2);
});

test('a row of several runs is the run with the median CPU, whole, with every run listed', () => {
  const runs = [
    [stage('a', 10, { otherUs: 1 }), stage('b', 7)],
    [stage('a', 30, { otherUs: 3 }), stage('b', 5)],
    [stage('a', 20, { otherUs: 2 }), stage('b', 9)],
  ];
  const rows = medianRows(runs);
  assert.deepEqual(rows.map((r) => [r.cpuUs, r.otherUs]), [[20, 2], [7, undefined]]);
  assert.match(rows[0]!.note!, /median of 3 runs: 10\.0, 30\.0, 20\.0/);
  assert.equal(medianRows([runs[0]!]), runs[0], 'one run is shown as it is');
});

test('the thread split names the main thread by the pid, the actor thread as the busiest other', () => {
  const pid = 100;
  const before = new Map([[100, 1_000], [101, 50], [102, 5_000], [103, 0]]);
  const after = new Map([[100, 3_000], [101, 250], [102, 9_000], [103, 100], [104, 200]]);
  assert.deepEqual(threadSplit(pid, [before, after], 100), { main: 20, actor: 40, rest: 5 });
  assert.equal(threadSplit(pid, [new Map([[100, 0]]), new Map([[100, 10]])], 1), null, 'one thread: nothing to split');
  assert.equal(threadSplit(pid, null, 1), null, 'a reading missing: no figure');
});
