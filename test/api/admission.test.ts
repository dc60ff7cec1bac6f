// Adaptive admission on a real server and real Postgres: a lock on `chats` held from another connection
// keeps each new chat's first statement waiting while its stream already runs (the statement goes beside
// the first provider round), so the starts in flight stay in flight. (Nothing settles while the lock
// holds, so the limit stays at its start.) Decided by the /metrics gauges and the answers, never by the
// clock.
// - A chat start is in flight (css_start_backlog) until its first statement answers, not merely until
//   an actor thread takes it up; the starts past the limit are taken and wait their turn
//   (css_starts_waiting), none refused, and every one streams to its end once the database answers.
// - A flood that lasts (starts keep coming while none can go) is refused at once, 503 with the
//   contract's message and Retry-After, and counted; another user's start is taken all the same; once
//   the database answers, every start taken ends `done` and the flooding user's starts are taken again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LIMIT_DEFAULTS } from '../../src/admission/limit.ts';
import { follow } from '../helpers/drain.ts';
import { NEEDS_POSTGRES, serverOnScratchPostgres, sim, waitFor, type TestServer } from '../helpers/server.ts';
import { gauge, lockChats } from '../helpers/start-queue.ts';
import { ADMIN_TOKEN, createUser } from '../helpers/users.ts';

const body = (deltas: number) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas, rate: 50 }) }] });

describe('starts in flight are bounded by the limit; the rest wait their turn', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres({ ADMIN_TOKEN });

  it('counts a chat start until its first statement answers, holds the starts past the limit, refuses none, and all end done', async () => {
    const t = scratch.server();
    const limit = LIMIT_DEFAULTS.initial;
    const waiting = 4;
    assert.equal(await gauge(t, 'css_start_limit'), limit);
    const lock = await lockChats(scratch.url());
    try {
      const streams = Array.from({ length: limit + waiting }, () => t.stream('/v1/chat-completions/stream', body(3), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
      await waitFor(
        async () => (await gauge(t, 'css_start_backlog')) === limit && (await gauge(t, 'css_starts_waiting')) === waiting,
        20_000,
        `${limit} starts in flight, held by the lock, and ${waiting} waiting`,
      );
      await lock.release();
      const ends = (await Promise.all(streams)).map((s) => s.events.at(-1)?.event);
      assert.deepEqual(ends, ends.map(() => 'done'));
      assert.equal(await gauge(t, 'css_start_backlog'), 0);
      assert.equal(await gauge(t, 'css_starts_waiting'), 0);
      assert.equal(await gauge(t, 'css_runs_refused_total{reason="overload"}'), 0);
    } finally {
      await lock.close();
    }
  });
});

/** Sends a stream start as `key`'s user and reads nothing yet. */
const startAs = (t: TestServer, key: string) =>
  fetch(`${t.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body(3)) });

describe('a flood that lasts is refused at once, and not for another user', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres({ ADMIN_TOKEN });

  it('refuses the flooding user once its starts have waited past the interval, takes another user\'s, and all taken end done', async () => {
    const t = scratch.server();
    const noisy = await createUser(t, 'noisy', { maxActiveRuns: 10_000 });
    const quiet = await createUser(t, 'quiet');
    const lock = await lockChats(scratch.url());
    const taken: Response[] = [];
    try {
      const limit = LIMIT_DEFAULTS.initial;
      const first = await Promise.all(Array.from({ length: limit + 1 }, () => startAs(t, noisy.key)));
      taken.push(...first);
      assert.deepEqual(first.map((r) => r.status), first.map(() => 200), 'the burst is taken');
      await waitFor(async () => (await gauge(t, 'css_starts_waiting')) === 1, 20_000, 'one start waiting');

      // The flood goes on: starts keep coming while none can go, until the oldest waiting has waited
      // past the interval and the next is refused.
      let refused: Response | null = null;
      await waitFor(async () => {
        const res = await startAs(t, noisy.key);
        if (res.status === 200) taken.push(res);
        else refused = res;
        return refused !== null;
      }, 30_000, 'a start of the flood to be refused');
      const r = refused! as Response;
      assert.equal(r.status, 503);
      assert.deepEqual(await r.json(), { message: 'server is overloaded, retry later' });
      assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After');
      assert.equal((await startAs(t, noisy.key)).status, 503, 'and the next at once');
      assert.ok((await gauge(t, 'css_runs_refused_total{reason="overload"}')) >= 2);

      const other = await startAs(t, quiet.key);
      assert.equal(other.status, 200, 'another user is not refused for the flood');
      taken.push(other);

      await lock.release();
      const ends = await Promise.all(taken.map((res) => follow(res).events.then((evs) => evs.at(-1)?.event)));
      assert.deepEqual(ends, ends.map(() => 'done'), `${ends.length} taken, every one done`);
      await waitFor(async () => {
        const res = await startAs(t, noisy.key);
        if (res.status !== 200) return false;
        await follow(res).events;
        return true;
      }, 30_000, 'the flooding user\'s start to be taken again');
    } finally {
      await lock.close();
    }
  });
});
