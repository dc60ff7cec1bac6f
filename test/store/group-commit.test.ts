// Group commit (src/db/group-commit.ts, src/store/run-groups.ts) against both databases: run starts
// and answers made in one turn go in one statement, each member with its own rows, token and
// outcome; a failing member (a duplicate chat, an unknown call, a stale token) fails alone.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Database, Queryable } from '../../src/db/types.ts';
import { createChat, startChatRun } from '../../src/store/chats.ts';
import { FencedWriteError, FIRST_RUN_TOKEN } from '../../src/store/fencing.ts';
import { finishLlmCallWithMessage } from '../../src/store/llm-calls.ts';
import { CREATE_CHATS, FINISH_MANY } from '../../src/store/run-groups.ts';
import { testDatabases } from '../helpers/db.ts';
import { getLlmCall, listMessages } from '../helpers/store.ts';
import { waitFor } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

/** The pool behind an object that counts the statements sent through it (a group is keyed by it). */
function counting(pool: Queryable): { db: Queryable; statements: () => number } {
  let n = 0;
  const db = { query: (...args: unknown[]) => (n++, (pool.query as (...a: unknown[]) => unknown)(...args)) } as unknown as Queryable;
  return { db, statements: () => n };
}

for (const target of await testDatabases()) {
  describe(`group commit ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    const start = (q: Queryable, id: string = randomUUID(), callId: string = randomUUID()) =>
      createChat(q, { owner: ADMIN_USER_ID, id, provider: 'provider_c', model: 'm', enabledTools: ['t'], messages: [{ role: 'user', content: `q ${id}` }, { role: 'user', content: 'q2' }], call: { id: callId, instanceId: 'i' } });
    const answer = (q: Queryable, o: { callId: string; chatId: string; content: string; runToken: number | null }) =>
      finishLlmCallWithMessage(q, { ...o, assistant: { content: o.content }, usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 }, latencyMs: 5 });

    it('starts made in one turn go in one statement, each with its own chat, input, call and token', async () => {
      const { db: q, statements } = counting(db.pool);
      const ids = Array.from({ length: 5 }, () => ({ chatId: randomUUID(), callId: randomUUID() }));
      const chats = await Promise.all(ids.map((r) => start(q, r.chatId, r.callId)));
      assert.equal(statements(), 1, 'one round trip for five starts');
      assert.deepEqual(chats.map((c) => c.id), ids.map((r) => r.chatId));
      for (const [i, r] of ids.entries()) {
        assert.deepEqual(chats[i]!.enabledTools, ['t']);
        assert.deepEqual((await listMessages(db.pool, r.chatId)).map((m) => m.content), [`q ${r.chatId}`, 'q2'], 'each chat has its own input, in order');
        assert.equal((await getLlmCall(db.pool, r.callId))?.status, 'running');
      }

      const answers = await Promise.all(ids.map((r, i) => answer(q, { ...r, content: `a${i}`, runToken: FIRST_RUN_TOKEN })));
      assert.equal(statements(), 2, 'one round trip for five answers');
      assert.deepEqual(answers.map((m) => m?.content), ['a0', 'a1', 'a2', 'a3', 'a4']);
      const call = await getLlmCall(db.pool, ids[1]!.callId);
      assert.equal(call?.status, 'succeeded');
      // The next run on a chat takes the token after the first: the group gave each chat the first.
      const next = await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: ids[0]!.chatId, provider: 'provider_c', model: 'm', messages: [], call: null });
      assert.equal(next, FIRST_RUN_TOKEN + 1);
    });

    it('a member that fails does not fail the others', async () => {
      const taken = (await start(db.pool)).id;
      const { db: q } = counting(db.pool);
      const results = await Promise.allSettled([start(q), start(q, taken), start(q)]);
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'], 'the duplicate chat alone is refused');
      const [a, , b] = results.map((r) => (r.status === 'fulfilled' ? r.value : null));
      assert.ok(a && b && (await listMessages(db.pool, a.id)).length === 2 && (await listMessages(db.pool, b.id)).length === 2);

      const callA = randomUUID();
      const chatA = await start(db.pool, randomUUID(), callA);
      const settled = await Promise.allSettled([
        answer(q, { callId: randomUUID(), chatId: randomUUID(), content: 'nobody', runToken: null }),
        answer(q, { callId: callA, chatId: chatA.id, content: 'kept', runToken: FIRST_RUN_TOKEN }),
      ]);
      assert.equal(settled[0]!.status, 'rejected');
      assert.match(String((settled[0] as PromiseRejectedResult).reason), /not found/);
      assert.equal(settled[1]!.status, 'fulfilled');
      assert.deepEqual((await listMessages(db.pool, chatA.id)).map((m) => m.content).slice(-1), ['kept']);
    });

    it('refuses a stale run’s answer inside a group, writing nothing for it, and stores the others', async () => {
      const staleCall = randomUUID();
      const moved = await start(db.pool, randomUUID(), staleCall);
      const later = randomUUID();
      const token = await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: moved.id, provider: 'provider_c', model: 'm', messages: [], call: { id: later, instanceId: 'i' } });
      const freshCall = randomUUID();
      const fresh = await start(db.pool, randomUUID(), freshCall);
      const { db: q, statements } = counting(db.pool);
      const settled = await Promise.allSettled([
        answer(q, { callId: staleCall, chatId: moved.id, content: 'late', runToken: FIRST_RUN_TOKEN }),
        answer(q, { callId: freshCall, chatId: fresh.id, content: 'on time', runToken: FIRST_RUN_TOKEN }),
      ]);
      assert.equal(statements(), 1, 'both answers went in one statement');
      assert.ok(settled[0]!.status === 'rejected' && settled[0].reason instanceof FencedWriteError);
      assert.equal(settled[1]!.status, 'fulfilled');
      assert.equal((await getLlmCall(db.pool, staleCall))?.status, 'running', 'the refused member wrote nothing');
      assert.ok(!(await listMessages(db.pool, moved.id)).some((m) => m.content === 'late'));
      assert.deepEqual((await listMessages(db.pool, fresh.id)).map((m) => m.content).slice(-1), ['on time']);
      // The current run's answer still lands.
      assert.equal((await answer(q, { callId: later, chatId: moved.id, content: 'current', runToken: token }))?.content, 'current');
    });

    it('writes behind a group that stalls go without it', { skip: target.name === 'embedded' && 'one connection: nothing can hold a statement' }, async () => {
      const held = { chatId: randomUUID(), callId: randomUUID() };
      const free = { chatId: randomUUID(), callId: randomUUID() };
      await start(db.pool, held.chatId, held.callId);
      await start(db.pool, free.chatId, free.callId);
      const locker = await db.pool.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('SELECT 1 FROM chats WHERE id = $1 FOR UPDATE', [held.chatId]);
        const { db: q } = counting(db.pool);
        let heldDone = false;
        const stuck = answer(q, { ...held, content: 'held', runToken: FIRST_RUN_TOKEN }).finally(() => (heldDone = true));
        // Not on the locker: inside its transaction pg_stat_activity is one snapshot.
        await waitFor(async () => (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'`)).rowCount! > 0, 10_000, 'the first group to wait at the lock');
        let freeDone = false;
        const next = answer(q, { ...free, content: 'free', runToken: FIRST_RUN_TOKEN }).finally(() => (freeDone = true));
        await waitFor(() => freeDone, 10_000, 'the write behind the stalled group to land');
        assert.equal((await next)?.content, 'free');
        assert.equal(heldDone, false, 'the first group is still held');
        await locker.query('ROLLBACK');
        assert.equal((await stuck)?.content, 'held');
      } finally {
        await locker.query('ROLLBACK').catch(() => undefined);
        locker.release();
      }
    });

    it('reads no table whole: the cached generic plans find chats, messages and calls by key', async () => {
      // A named statement runs on a generic plan, where json_to_recordset counts as 100 rows: with
      // `id IN (SELECT ...)` the answer's statement hashed those and read every chat (a seq scan per
      // answer, growing with the table). A few thousand analysed chats, messages and calls are enough to tempt the planner.
      await db.pool.query(`INSERT INTO chats (id, initiated_provider, initiated_model, last_used_provider, last_used_model)
                           SELECT 'plan-' || g, 'p', 'm', 'p', 'm' FROM generate_series(1, 3000) g`);
      await db.pool.query(`INSERT INTO messages (id, chat_id, role, content) SELECT id || '-m', id, 'user', 'q' FROM chats WHERE id LIKE 'plan-%'`);
      await db.pool.query(`INSERT INTO llm_calls (id, chat_id, provider, model, status) SELECT id || '-c', id, 'p', 'm', 'succeeded' FROM chats WHERE id LIKE 'plan-%'`);
      await db.pool.query('ANALYZE chats, messages, llm_calls');
      const client = await db.pool.connect();
      try {
        await client.query('SET plan_cache_mode = force_generic_plan');
        for (const [name, text] of [['create_probe', CREATE_CHATS], ['finish_probe', FINISH_MANY]] as const) {
          await client.query(`PREPARE ${name}(json) AS ${text}`);
          const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${name}('[]')`)).rows.map((r) => r['QUERY PLAN']).join('\n');
          await client.query(`DEALLOCATE ${name}`);
          assert.doesNotMatch(plan, /Seq Scan on (chats|messages|llm_calls)\b/, `${name}'s generic plan reads a table whole:\n${plan}`);
          // The start's statement only inserts; the answer's locks its chats through their key.
          if (name === 'finish_probe') assert.match(plan, /chats_pkey/, `${name}'s plan finds its chats by key:\n${plan}`);
        }
      } finally {
        await client.query('RESET plan_cache_mode').catch(() => {});
        client.release();
      }
    });
  });
}
