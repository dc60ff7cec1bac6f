// A database that holds a statement (a lock taken elsewhere, a server that stopped answering): with
// DATABASE_STATEMENT_TIMEOUT_MS the statement is cancelled, so a run ends with its `error` and a whole
// completion answers 503 with Retry-After, as any request whose database is unavailable, instead of
// waiting for as long as the lock is held. The chat is free for its next run. Real Postgres: a row
// lock from another connection holds the run's statement.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { NEEDS_POSTGRES, serverOnScratchPostgres, sim, waitFor, type SseEvent } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const body = (content: string, chatId?: string) => ({ provider: 'provider_c', model: 'm', enabledTools: [], ...(chatId ? { chatId } : {}), messages: [{ role: 'user', content }] });

// A deadline on the whole suite: the defect it pins is a run that waits for good.
describe('a statement past DATABASE_STATEMENT_TIMEOUT_MS', { skip: NEEDS_POSTGRES, timeout: 60_000 }, () => {
  const scratch = serverOnScratchPostgres({ DATABASE_STATEMENT_TIMEOUT_MS: '1000' });

  /** Holds the chat's row (FOR UPDATE) from another connection until `release`. */
  const holdChat = async (chatId: string) => {
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    await db.query('BEGIN');
    await db.query('SELECT 1 FROM chats WHERE id = $1 FOR UPDATE', [chatId]);
    return {
      db,
      release: async () => {
        await db.query('ROLLBACK').catch(() => undefined);
        await db.end();
      },
    };
  };

  it('ends a stream whose answer cannot be stored with a database error; the chat takes the next run', async () => {
    const t = scratch.server();
    const gate = gateName();
    const events: SseEvent[] = [];
    const streamed = t.stream('/v1/chat-completions/stream', body(sim({ reply: 'held back', gate })), { stopAfter: (ev) => (events.push(ev), false) });
    await waitFor(() => events.some((e) => e.event === 'meta'), 10_000, 'meta');
    const chatId = events[0]!.data.chatId as string;
    const callId = events[0]!.data.callId as string;
    await waitFor(async () => (await t.call('GET', `/v1/chats/${chatId}`)).status === 200, 10_000, 'the chat to be stored');
    const held = await holdChat(chatId);
    try {
      t.sim.openGate(gate);
      await waitFor(() => events.some((e) => e.event === 'error' || e.event === 'done'), 15_000, 'the stream to end');
      const last = events.at(-1)!;
      assert.equal(last.event, 'error');
      assert.match(last.data.message, /^database unavailable: canceling statement due to statement timeout/);
    } finally {
      await held.release();
    }
    await streamed;
    const call = async () => (await t.server.ctx.pool.query('SELECT status, error FROM llm_calls WHERE id = $1', [callId])).rows[0];
    await waitFor(async () => (await call())?.status === 'failed', 10_000, 'the call to be failed');
    assert.match((await call()).error, /^database unavailable/);
    const next = await t.stream('/v1/chat-completions/stream', body(sim({ reply: 'second' }), chatId));
    assert.equal(next.events.at(-1)?.event, 'done', 'the chat is not held by the run that failed');
  });

  it("ends the round's other tools when a tool message cannot be stored", async () => {
    const t = scratch.server();
    const round = gateName();
    const held = gateName('search');
    const tools = [
      { name: 'web_search', args: { query: 'tide pools' } },
      { name: 'web_search', args: { query: `slow SIM ${JSON.stringify({ searchGate: held })}` } },
    ];
    const events: SseEvent[] = [];
    const streamed = t.stream('/v1/chat-completions/stream', { ...body(sim({ tools, reply: 'never', gate: round })), enabledTools: ['web_search'] }, { stopAfter: (ev) => (events.push(ev), false) });
    await waitFor(() => events.some((e) => e.event === 'meta'), 10_000, 'meta');
    const chatId = events[0]!.data.chatId as string;
    await waitFor(async () => (await t.call('GET', `/v1/chats/${chatId}`)).status === 200, 10_000, 'the chat to be stored');
    // Reads go on; the first tool's message cannot be inserted before its statement times out.
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE messages IN SHARE MODE');
      t.sim.openGate(round);
      await waitFor(() => t.sim.heldAt(held) === 1, 10_000, 'the second search to be held at the engine');
      await waitFor(() => events.some((e) => e.event === 'error'), 15_000, 'the run to fail');
      assert.match(events.at(-1)!.data.message, /^database unavailable/);
      // Else it runs on (a remote command would go on in the chat's workdir) after its run has ended.
      await waitFor(() => t.sim.heldAt(held) === 0, 10_000, 'the held search to be given up');
    } finally {
      await db.query('ROLLBACK').catch(() => undefined);
      await db.end();
    }
    await streamed;
  });

  it('a search run whose save fails leaves no mark behind for recovery to find later', async () => {
    const t = scratch.server();
    const gate = gateName('search');
    const s = (await t.call('POST', '/v1/searches', { query: `held save SIM ${JSON.stringify({ searchGate: gate })}` })).body.search;
    const row = async () =>
      (await t.server.ctx.pool.query<{ run_instance_id: string | null; error: string | null }>('SELECT run_instance_id, error FROM searches WHERE id = $1', [s.id])).rows[0]!;
    const events: SseEvent[] = [];
    const streamed = t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: (ev) => (events.push(ev), false) });
    await waitFor(() => t.sim.heldAt(gate) === 1, 10_000, 'the search call to be held');
    await waitFor(async () => (await row()).run_instance_id !== null, 10_000, 'the run to mark the search');
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('SELECT 1 FROM searches WHERE id = $1 FOR UPDATE', [s.id]);
      t.sim.openGate(gate);
      await waitFor(() => events.some((e) => e.event === 'error' || e.event === 'done'), 15_000, 'the run to end');
      assert.equal(events.at(-1)!.event, 'error');
      assert.match(events.at(-1)!.data.message, /^search run could not be stored: /);
    } finally {
      await db.query('ROLLBACK').catch(() => undefined);
      await db.end();
    }
    await streamed;
    // The run has ended: its mark goes once the database takes writes again, and the search says why
    // the run stored nothing. Were the mark left, this instance's later loss would stamp the search
    // `instance lost` long after the run ended.
    await waitFor(async () => (await row()).run_instance_id === null, 15_000, 'the ended run’s mark to be cleared');
    assert.match((await row()).error ?? '', /^search run could not be stored: /);
    assert.equal((await t.call('GET', '/v1/active-runs')).body.searches.length, 0);
  });

  it('answers a whole completion that cannot start in time with 503 and Retry-After', async () => {
    const t = scratch.server();
    const created = await t.call('POST', '/v1/chats', { title: 'held', messages: [] });
    const chatId = created.body.chat.id as string;
    const held = await holdChat(chatId);
    try {
      const r = await t.call('POST', '/v1/chat-completions', body(sim({ reply: 'never' }), chatId));
      assert.equal(r.status, 503);
      assert.match(r.body.message, /^database unavailable: /);
      assert.equal(r.headers.get('retry-after'), '2');
    } finally {
      await held.release();
    }
  });
});
