// handleWithin (actors/runtime/turn-budget.ts): the slicing that the SSE flush and an actor thread's
// inbox share. A slice stops once its budget is spent (looked at every `checkEvery` items) and the next
// one goes on from where it stopped, every item handled once, in order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { handleWithin } from '../../actors/runtime/turn-budget.ts';

describe('handleWithin', () => {
  it('handles every item in one slice while the budget lasts', () => {
    const seen: number[] = [];
    assert.equal(handleWithin([1, 2, 3], 0, (n) => seen.push(n), 60_000), 3);
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('past its budget a slice stops at the next look at the clock; the next slice goes on from there', () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    const seen: number[] = [];
    const handle = (n: number) => void seen.push(n);
    // A budget of 0 is spent at the first look: every slice is checkEvery items long.
    assert.equal(handleWithin(items, 0, handle, 0, 4), 4);
    assert.equal(handleWithin(items, 4, handle, 0, 4), 8);
    assert.equal(handleWithin(items, 8, handle, 0, 4), 10, 'the last slice ends with the items, not at a look');
    assert.deepEqual(seen, items);
  });

  it('looks at the clock after each item by default', () => {
    const seen: string[] = [];
    assert.equal(handleWithin(['a', 'b'], 0, (s) => seen.push(s), 0), 1);
    assert.deepEqual(seen, ['a']);
  });
});
