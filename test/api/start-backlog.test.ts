// A chat start is in flight (css_start_backlog) until its first statement answers, not merely until an
// actor thread takes it up, and the admission's limit bounds the starts in flight: while the database
// keeps the first ones waiting, the starts past the limit are taken and wait their turn (css_starts_waiting),
// none refused, and every one streams to its end once the database answers. Real Postgres: a lock on
// `chats` held from another connection keeps each new chat's statement waiting while its stream already
// runs (the statement goes beside the first provider round). Decided by the /metrics gauges and the
// answers, never by the clock. (Nothing settles while the lock holds, so the limit stays at its start.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { LIMIT_DEFAULTS } from '../../src/admission/limit.ts';
import { NEEDS_POSTGRES, serverOnScratchPostgres, sim, waitFor, type TestServer } from '../helpers/server.ts';

const body = (deltas: number) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas, rate: 50 }) }] });

async function gauge(t: TestServer, name: string): Promise<number> {
  const text = (await t.call('GET', '/metrics')).body as string;
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

describe('starts in flight are bounded by the limit; the rest wait their turn', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres();

  it('counts a chat start until its first statement answers, holds the starts past the limit, refuses none, and all end done', async () => {
    const t = scratch.server();
    const limit = LIMIT_DEFAULTS.initial;
    const waiting = 4;
    assert.equal(await gauge(t, 'css_start_limit'), limit);
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE chats IN SHARE MODE');
      const streams = Array.from({ length: limit + waiting }, () => t.stream('/v1/chat-completions/stream', body(3)));
      await waitFor(
        async () => (await gauge(t, 'css_start_backlog')) === limit && (await gauge(t, 'css_starts_waiting')) === waiting,
        20_000,
        `${limit} starts in flight, held by the lock, and ${waiting} waiting`,
      );
      await db.query('ROLLBACK');
      const ends = (await Promise.all(streams)).map((s) => s.events.at(-1)?.event);
      assert.deepEqual(ends, ends.map(() => 'done'));
      assert.equal(await gauge(t, 'css_start_backlog'), 0);
      assert.equal(await gauge(t, 'css_starts_waiting'), 0);
      assert.equal(await gauge(t, 'css_runs_refused_total{reason="overload"}'), 0);
    } finally {
      await db.end();
    }
  });
});
