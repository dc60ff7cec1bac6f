// The capacity search's decisions (bench/load/capacity.ts): which K to try next, whether a measured
// run held the bound, and whether one run decides its step or a majority of runs must. The search
// itself runs in `make bench`; these pin its rules, and how repeated searches make one figure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capacityRatio, decisive, median, miss, nextK, searchOrder, spread, spreadPct, verdict } from '../../bench/load/capacity.ts';
import { pinPlan } from '../../bench/load/pin.ts';
import type { Row } from '../../bench/load/measure.ts';

const row = (o: Partial<Row>): Row => ({
  target: 'nginx', provider: 'provider_c', persist: null, k: 1000, rate: 20, scenario: 'capacity',
  ttfdP50Ms: 2, ttfdP99Ms: 20, addedP50Ms: 0, addedP99Ms: 10, cpuUsPerDelta: 15, rssKbPerStream: 10,
  streams: 1000, failed: 0, lost: 0, duplicated: 0, latencyP99Ms: 12, ...o,
});
const floor = row({ target: 'floor', addedP99Ms: null, latencyP99Ms: 5 });

test('K doubles from the start until a step misses, capped at the largest K', () => {
  assert.equal(nextK(100, null), 200);
  assert.equal(nextK(6400, null), 10_000);
  assert.equal(nextK(10_000, null), null);
});

test('after a miss K is bisected geometrically, to within 10 %', () => {
  assert.equal(nextK(1600, 3200), 2260);
  assert.equal(nextK(2000, 2260), 2130);
  assert.equal(nextK(2000, 2190), null);
});

test('a step holds only within every bound', () => {
  assert.equal(miss(row({}), floor), null);
  assert.match(miss(row({ addedP99Ms: 51 }), floor)!, /added p99 51 ms > 50/);
  assert.match(miss(row({ ttfdP99Ms: 251 }), floor)!, /ttfd p99 251 ms > 250/);
  assert.match(miss(row({ lost: 1 }), floor)!, /lost 1/);
  assert.match(miss(row({ duplicated: 2 }), floor)!, /doubled 2/);
  assert.match(miss(row({ failed: null, note: 'run failed: boom' }), floor)!, /boom/);
});

test('above the floor\'s own capacity no target holds, and the floor is judged by its own p99', () => {
  const saturated = row({ target: 'floor', addedP99Ms: null, latencyP99Ms: 80 });
  assert.match(miss(row({}), saturated)!, /the floor itself misses/);
  assert.match(miss(saturated, null)!, /latency p99 80 ms > 50/);
  assert.equal(miss(floor, null), null);
});

test('one run decides its step only far from the bound: half of each bound to spare, twice a bound, or a failure', () => {
  assert.equal(decisive(row({ addedP99Ms: 25, ttfdP99Ms: 125 }), floor), true);
  assert.equal(decisive(row({ addedP99Ms: 26, ttfdP99Ms: 20 }), floor), false);
  assert.equal(decisive(row({ addedP99Ms: 10, ttfdP99Ms: 126 }), floor), false);
  assert.equal(decisive(row({ addedP99Ms: 59 }), floor), false);
  assert.equal(decisive(row({ addedP99Ms: 100 }), floor), false);
  assert.equal(decisive(row({ addedP99Ms: 101 }), floor), true);
  assert.equal(decisive(row({ ttfdP99Ms: 501 }), floor), true);
  assert.equal(decisive(row({ addedP99Ms: 40, lost: 1 }), floor), true);
  assert.equal(decisive(row({ failed: null, note: 'run failed: boom' }), floor), true);
  assert.equal(decisive(row({ addedP99Ms: 40 }), row({ target: 'floor', latencyP99Ms: 80 })), true);
});

test('a step near the bound is decided by a majority of the runs, run until one agrees', () => {
  assert.equal(verdict([true], 3), null);
  assert.equal(verdict([true, true], 3), true);
  assert.equal(verdict([false, false], 3), false);
  assert.equal(verdict([true, false], 3), null);
  assert.equal(verdict([true, false, false], 3), false);
  assert.equal(verdict([false, true, true], 3), true);
  assert.equal(verdict([false], 1), false);
  assert.equal(verdict([true], 1), true);
});

test('a target\'s figure is the median of its searches, with their min–max beside it', () => {
  assert.equal(median([1740, 2260, 2070]), 2070);
  assert.equal(median([1130]), 1130);
  assert.equal(median([1000, 1100]), 1050);
  assert.deepEqual(spread([1740, 2260, 2070]), [1740, 2260]);
  assert.deepEqual(spread([1040]), [1040, 1040]);
});

test('the searches alternate between targets round by round, the floor searched once', () => {
  assert.deepEqual(searchOrder(['floor', 'service', 'nginx'], 3).map((s) => `${s.target}${s.search}`),
    ['floor1', 'service1', 'nginx1', 'service2', 'nginx2', 'service3', 'nginx3']);
  assert.deepEqual(searchOrder(['nginx', 'service'], 1).map((s) => `${s.target}${s.search}`), ['nginx1', 'service1']);
});

test('the capacity ratio is the service\'s median over nginx\'s, passing at 0.6, each target\'s spread in % of its median', () => {
  const cap = (target: Row['target'], searches: number[], variant?: string): Row =>
    row({ target, scenario: 'capacity', capacityStreams: median(searches), capacitySearches: searches, capacitySpread: spread(searches), ...(variant ? { variant } : {}) });
  const r = capacityRatio([cap('floor', [2700]), cap('nginx', [1740, 2260, 2070]), cap('service', [1040, 1130, 1500]), cap('service', [3000, 3000, 3000], 'h2c')])!;
  assert.equal(r.ratio, 0.55);
  assert.equal(r.pass, false);
  assert.deepEqual(r.service, { median: 1130, searches: [1040, 1130, 1500], spread: [1040, 1500], spreadPct: 33, atFloorCap: 0 });
  assert.deepEqual(r.nginx.spread, [1740, 2260]);
  assert.equal(r.spreadsWithin, false);
  const close = capacityRatio([cap('nginx', [1000, 1100, 950]), { ...cap('service', [620, 600, 640]), pinned: 'on CPU 0' }])!;
  assert.equal(close.pass, true);
  assert.equal(close.spreadsWithin, true);
  assert.equal(close.pinned, 'on CPU 0');
  assert.equal(capacityRatio([cap('nginx', [1000, 1000, 1000]), cap('service', [590, 650, 500])])!.pass, false);
  assert.equal(capacityRatio([cap('service', [700])]), null);
});

test('a spread is the farthest search from the median, in % of it', () => {
  assert.equal(spreadPct([1230, 1040, 1135]), 8);
  assert.equal(spreadPct([480, 570]), 9);
  assert.equal(spreadPct([700]), 0);
  assert.equal(spreadPct([0, 0, 100]), 100);
});

test('the search is pinned only with two cores or more and taskset there', () => {
  const two = pinPlan(2, true);
  assert.ok('note' in two && two.targetCpus === '0' && two.loadCpus === '1', JSON.stringify(two));
  assert.match((pinPlan(1, true) as { none: string }).none, /1 core/);
  assert.match((pinPlan(2, false) as { none: string }).none, /taskset/);
});
