// The retry queue for writes that meet a database outage (src/db/write-retry.ts): what counts as
// transient, one probe at a time while the database is away, everything in order once it is back,
// and the bounds (give up after a while, keep at most so many).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTransientDbError, WriteRetryQueue, type RetryReport } from '../../src/db/write-retry.ts';
import { waitFor } from '../helpers/wait.ts';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const policy = { firstDelayMs: 5, maxDelayMs: 20, giveUpAfterMs: 60_000, maxPending: 100 };

/** A stand-in for the database: down until `up` is set; records every write attempted. */
function fakeDatabase() {
  const state = { up: false, attempts: [] as string[], written: [] as Array<{ label: string; since: number }> };
  const write = (label: string) => async (since: number) => {
    state.attempts.push(label);
    if (!state.up) throw refused();
    state.written.push({ label, since });
  };
  return { state, write };
}

describe('write retry queue', () => {
  it('tells transient failures from the statement’s own errors', () => {
    assert.equal(isTransientDbError(refused()), true);
    assert.equal(isTransientDbError(new Error('Connection terminated unexpectedly')), true);
    assert.equal(isTransientDbError(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })), true);
    assert.equal(isTransientDbError(Object.assign(new Error('the database system is starting up'), { code: '57P03' })), true);
    assert.equal(isTransientDbError(Object.assign(new Error('connection failure'), { code: '08006' })), true);
    assert.equal(isTransientDbError(Object.assign(new Error('relation "x" does not exist'), { code: '42P01' })), false);
    assert.equal(isTransientDbError(Object.assign(new Error('integer out of range'), { code: '22003' })), false);
  });

  it('writes at once when it can; a permanent error is the caller’s', async () => {
    const q = new WriteRetryQueue(policy, () => {});
    const db = fakeDatabase();
    db.state.up = true;
    assert.equal(await q.write('a', db.write('a')), 'written');
    await assert.rejects(q.write('b', () => Promise.reject(Object.assign(new Error('bad'), { code: '22003' }))), /bad/);
    assert.equal(q.pending, 0);
  });

  it('while the database is down only one write probes it; once back, all land in order', async () => {
    const reports: RetryReport[] = [];
    const q = new WriteRetryQueue(policy, (r) => reports.push(r));
    const db = fakeDatabase();
    const queuedAt = Date.now();
    for (const label of ['a', 'b', 'c']) assert.equal(await q.write(label, db.write(label)), 'queued');
    assert.equal(q.pending, 3);
    // The head probed twice (a count, not a guess of how many fit in a sleep), and at least 100 ms
    // gone for the `since` check below.
    await waitFor(() => db.state.attempts.length >= 5 && Date.now() - queuedAt >= 100, 10_000, 'two retries of the head');
    const retries = db.state.attempts.slice(3);
    assert.ok(retries.length >= 2, `the head was retried (${retries.length})`);
    assert.ok(retries.every((l) => l === 'a'), 'no write behind the head is tried while the probe fails');
    db.state.up = true;
    assert.equal(await q.drain(5000), true);
    assert.deepEqual(db.state.written.map((w) => w.label), ['a', 'b', 'c']);
    assert.ok(db.state.written[0]!.since >= 100, 'the write learns how long ago it was first tried');
    assert.deepEqual(reports.filter((r) => r.event === 'written').map((r) => r.label), ['a', 'b', 'c']);
    assert.equal(q.pending, 0);
  });

  it('gives up on a write after giveUpAfterMs and keeps at most maxPending', async () => {
    const reports: RetryReport[] = [];
    const q = new WriteRetryQueue({ ...policy, giveUpAfterMs: 50, maxPending: 2 }, (r) => reports.push(r));
    const db = fakeDatabase();
    for (const label of ['a', 'b', 'c']) await q.write(label, db.write(label));
    assert.deepEqual(reports.filter((r) => r.event === 'dropped').map((r) => r.label), ['a'], 'the oldest made room');
    assert.equal(await q.drain(5000), true, 'the queue empties by giving up');
    assert.deepEqual(reports.filter((r) => r.event === 'dropped').map((r) => r.label), ['a', 'b', 'c']);
    assert.deepEqual(db.state.written, []);
  });

  it('drain reports false when the database stays away past its deadline', async () => {
    const q = new WriteRetryQueue(policy, () => {});
    const db = fakeDatabase();
    await q.write('a', db.write('a'));
    assert.equal(await q.drain(30), false);
    db.state.up = true;
    assert.equal(await q.drain(5000), true);
  });
});
