// The noisy-neighbour check counts refusals by status from the generator's reasons (`http <status> <body>`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refusedBy } from '../../bench/load/noisy.ts';

test('refusals are counted by their status, and nothing else is', () => {
  const reasons = {
    'http 429 {"message":"too many active runs for this user (limit 20)"}': 7,
    'http 503 {"message":"server is overloaded, retry later"}': 2,
    'http 4290 odd': 5,
    'error event: upstream failed': 1,
  };
  assert.equal(refusedBy(reasons, 429), 7);
  assert.equal(refusedBy(reasons, 503), 2);
  assert.equal(refusedBy({}, 429), 0);
});
