// The capacity search's decisions (bench/load/capacity.ts): which K to try next, whether a measured
// run held the bound, and whether one run decides its step or a majority of runs must. The search
// itself runs in `make bench`; these pin its rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decisive, miss, nextK, verdict } from '../../bench/load/capacity.ts';
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
