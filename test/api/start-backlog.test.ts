// A chat start counts among the starts the instance is behind on (OVERLOAD_START_BACKLOG) until its
// first statement answers, not merely until an actor thread takes it up: a database falling behind the
// starts refuses the next ones. Real Postgres: a lock on `chats` held from another connection keeps a
// new chat's statement waiting while its stream already runs (the statement goes beside the first
// provider round). Decided by the /metrics gauge and the answers, never by the clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { NEEDS_POSTGRES, serverOnScratchPostgres, sim, waitFor, type TestServer } from '../helpers/server.ts';

const body = (deltas: number) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas, rate: 50 }) }] });

async function backlog(t: TestServer): Promise<number> {
  const text = (await t.call('GET', '/metrics')).body as string;
  return Number(/^css_start_backlog (\d+)/m.exec(text)?.[1] ?? NaN);
}

describe('the start backlog counts a chat start until its first statement answers', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres({ OVERLOAD_START_BACKLOG: '1' });

  it('refuses a start while one waits on the database, and takes one again once it is stored', async () => {
    const t = scratch.server();
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE chats IN SHARE MODE');
      const first = t.stream('/v1/chat-completions/stream', body(200));
      await waitFor(async () => (await backlog(t)) === 1, 10_000, 'the first start counted while its chat waits on the lock');
      const refused = await t.call('POST', '/v1/chat-completions/stream', body(1));
      assert.deepEqual([refused.status, refused.body], [503, { message: 'server is overloaded, retry later' }]);
      await db.query('ROLLBACK');
      await waitFor(async () => (await backlog(t)) === 0, 10_000, 'the first start stored');
      const taken = await t.stream('/v1/chat-completions/stream', body(1));
      assert.equal(taken.events.at(-1)?.event, 'done');
      assert.equal((await first).events.at(-1)?.event, 'done', 'the waiting start streamed to its end');
    } finally {
      await db.end();
    }
  });
});
