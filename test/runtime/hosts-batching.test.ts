// The supervisor's messages to a worker (actors/hosts.ts): one crossing per event-loop turn, and a
// release that waits for company, since each crossing wakes the worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batched } from '../../actors/hosts.ts';
import type { ToHost } from '../../actors/runtime/protocol.ts';
import { turn } from './fake.ts';
import { waitFor } from '../helpers/wait.ts';

const start = (runId: string): ToHost => ({ t: 'start', runId, kind: 'chat', request: {} });
const release = (runId: string): ToHost => ({ t: 'release', runId });

test('the messages of one turn cross once, in order, at the end of the turn', async () => {
  const posts: ToHost[][] = [];
  const send = batched((msgs) => posts.push(msgs));
  send(start('a'));
  send(release('x'));
  send(start('b'));
  assert.equal(posts.length, 0, 'nothing crosses before the turn ends');
  await turn();
  assert.deepEqual(posts, [[start('a'), release('x'), start('b')]]);
});

test('a release alone waits for the next start and crosses with it', async () => {
  const posts: ToHost[][] = [];
  // A wait far longer than any stall of a loaded machine: with the default 20 ms, a turn that took
  // longer on CI let the release cross on its own before the assertion (a clock-dependent failure).
  const send = batched((msgs) => posts.push(msgs), 60_000);
  send(release('x'));
  await turn();
  assert.equal(posts.length, 0, 'a lone release waits for company (up to its wait)');
  send(start('a'));
  await turn();
  assert.deepEqual(posts, [[release('x'), start('a')]]);
});

test('a release with no company crosses on its own after the wait', async () => {
  const posts: ToHost[][] = [];
  const send = batched((msgs) => posts.push(msgs));
  send(release('x'));
  send(release('y'));
  await waitFor(() => posts.length === 1, 10_000, 'the releases');
  assert.deepEqual(posts, [[release('x'), release('y')]]);
});
