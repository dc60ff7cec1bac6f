// The kill check's judgement of one stream: the missing text in stream time, read from the stamps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { judgeRecovered } from '../../bench/load/missing-text.ts';

const stamps = (...ms: number[]) => ms.map((m) => `${(1_764_000_000_000 + m).toFixed(3)}|`).join('');

test('the text received beyond the checkpoint is missing, measured between the last stamps', () => {
  assert.deepEqual(judgeRecovered(stamps(0, 50, 100, 150, 200), stamps(0, 50)), { recovered: true, consistent: true, missingMs: 150 });
});

test('a checkpoint ahead of a slow client misses nothing', () => {
  assert.deepEqual(judgeRecovered(stamps(0, 50), stamps(0, 50, 100)), { recovered: true, consistent: true, missingMs: 0 });
  assert.deepEqual(judgeRecovered(stamps(0, 50), stamps(0, 50)), { recovered: true, consistent: true, missingMs: 0 });
});

test('an empty recovered answer misses everything received, from its first delta', () => {
  assert.deepEqual(judgeRecovered(stamps(100, 150, 400), ''), { recovered: true, consistent: true, missingMs: 300 });
});

test('no stored answer is not recovered; text that is no prefix is inconsistent', () => {
  assert.deepEqual(judgeRecovered(stamps(0, 50, 100), null), { recovered: false, consistent: false, missingMs: 100 });
  assert.equal(judgeRecovered(stamps(0, 50, 100), stamps(0, 60)).consistent, false);
});

test('a client that had received nothing has no missing figure', () => {
  assert.deepEqual(judgeRecovered('', ''), { recovered: true, consistent: true, missingMs: null });
});
