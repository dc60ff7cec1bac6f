// Checkpoints (src/domain/checkpoints.ts, store/checkpoints.ts, sql/018_checkpoint_chunks.sql) against both
// databases: each run's new text is a chunk of its own, all runs in one statement, refused for an
// ended call or a chat a later run took; a statement's parameters hold only the new text, at most
// the host's budget of it, shared between the runs; surrogate pairs never split between chunks; a
// call's chunks go when it ends, however it ends; recovery and takeover join them in order; the
// migration makes a running call's text of the previous version its first chunk.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { EventBuffer } from '../../actors/runtime/event-buffer.ts';
import { Checkpoints, MAX_YIELDS, shares, type StreamedText } from '../../src/domain/checkpoints.ts';
import { migrate, readMigrations } from '../../src/db/migrate.ts';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';
import { createChat, startChatRun } from '../../src/store/chats.ts';
import { checkpointedDeltasSql, checkpointedTextSql, joinDeltaLengths, writeCheckpoints } from '../../src/store/checkpoints.ts';
import { failLlmCall, finishLlmCall, finishLlmCallWithMessage, markInterruptedLlmCalls } from '../../src/store/llm-calls.ts';
import { recoverLostCalls } from '../../src/store/recovery.ts';
import type { ContinuedRun } from '../../src/store/takeover.ts';
import { countQueries } from '../helpers/count-queries.ts';
import { createScratchPostgres, freshEmbeddedDataDir, testDatabases } from '../helpers/db.ts';
import { listMessages } from '../helpers/store.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';
import { sweptDatabase } from '../helpers/swept-db.ts';
import { waitFor } from '../helpers/wait.ts';

/** A run's streamed text as the actor keeps it (the real replay buffer), and its end. */
function streamed(text = '', keepDeltas = false): StreamedText & { append(text: string): void; finished: boolean } {
  const buffer = new EventBuffer(keepDeltas);
  if (text) buffer.appendText(text);
  return { newText: () => buffer.newText(), newDeltaLengths: () => buffer.newDeltaLengths(), append: (t) => buffer.appendText(t), finished: false };
}

describe('checkpoint budget shares', () => {
  it('gives every run all of its text while the total fits, else the small ones whole and the rest evenly', () => {
    assert.deepEqual(shares([3, 0, 5], 10), [3, 0, 5]);
    assert.deepEqual(shares([1_000, 2, 1_000, 3], 105), [50, 2, 50, 3]);
    assert.deepEqual(shares([7, 7], 5), [2, 3]);
  });
});

for (const target of await testDatabases()) {
  describe(`checkpoints ${target.tag}`, () => {
    let db!: Database;
    sweptDatabase(target, (opened) => (db = opened));

    /** A chat with a running call of `instanceId`, started a minute ago (older than any dead-after span). */
    const run = async (instanceId = 'dead', provider: 'provider_b' | 'provider_c' = 'provider_c') => {
      const call = { id: randomUUID(), instanceId };
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider, model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call });
      await db.pool.query(`UPDATE llm_calls SET started_at = now() - interval '1 minute' WHERE id = $1`, [call.id]);
      return { callId: call.id, chatId: chat.id, runToken: 1 };
    };
    /** The call's checkpointed text, its chunks joined, as recovery reads it. */
    const stored = async (callId: string) =>
      (await db.pool.query<{ text: string }>(`SELECT ${checkpointedTextSql('l')} AS text FROM llm_calls l WHERE l.id = $1`, [callId])).rows[0]!.text;
    /** Resolves once the call's checkpointed text reads `text`. */
    const landed = (callId: string, text: string, what: string, timeoutMs = 10_000) =>
      waitFor(async () => (await stored(callId)) === text, timeoutMs, what);
    const chunks = async (callId: string) =>
      (await db.pool.query<{ pos: number; text: string }>('SELECT pos, text FROM llm_call_checkpoint_chunks WHERE call_id = $1 ORDER BY pos', [callId])).rows;
    /** The text parameters of the checkpoint statements `fn` sent. */
    const checkpointTexts = async (fn: () => Promise<void>): Promise<string[][]> => {
      const { queries, params } = await countQueries(db.pool, fn);
      return queries.flatMap((q, i) => (q.includes('INSERT INTO llm_call_checkpoint_chunks') ? [params[i]![4] as string[]] : []));
    };

    it('writes every run’s new text in one statement, each a chunk after what is stored, idempotently', async () => {
      const a = await run();
      const b = await run();
      const first = await writeCheckpoints(db.pool, [
        { ...a, at: 0, text: 'Hello, ' },
        { ...b, at: 0, text: 'Bonjour 😀' },
      ]);
      assert.deepEqual([...first].sort(), [a.callId, b.callId].sort());
      // `at` counts UTF-16 units (the emoji is two), as the run's text in JavaScript does.
      const again = { ...b, at: 10, text: ' !' };
      await writeCheckpoints(db.pool, [{ ...a, at: 7, text: 'wor' }, again]);
      // Sent again from the same place (its reply lost), with more text: one chunk there, the later one.
      await writeCheckpoints(db.pool, [{ ...a, at: 7, text: 'world' }, again]);
      assert.deepEqual([await stored(a.callId), await stored(b.callId)], ['Hello, world', 'Bonjour 😀 !']);
      assert.deepEqual(await chunks(a.callId), [{ pos: 0, text: 'Hello, ' }, { pos: 7, text: 'world' }]);
    });

    it('writes nothing for an ended call or a chat a later run has taken, and says so', async () => {
      const ended = await run();
      const fenced = await run();
      await finishLlmCall(db.pool, { callId: ended.callId, usage: null, latencyMs: 1 });
      await startChatRun(db.pool, { owner: ADMIN_USER_ID, chatId: fenced.chatId, provider: 'provider_c', model: 'm', messages: [], call: null });
      const written = await writeCheckpoints(db.pool, [
        { ...ended, at: 0, text: 'late' },
        { ...fenced, at: 0, text: 'stale' },
      ]);
      assert.equal(written.size, 0);
      assert.deepEqual([await stored(ended.callId), await stored(fenced.callId)], ['', '']);
    });

    it('the host’s timer writes what runs streamed until they end, then stops', async () => {
      const a = await run();
      const text = streamed('first');
      const checkpoints = new Checkpoints(db.pool, 20);
      try {
        checkpoints.track(text, a);
        await landed(a.callId, 'first', 'the first checkpoint');
        text.append(' and second');
        await landed(a.callId, 'first and second', 'the second checkpoint');
        text.finished = true;
        await waitFor(() => checkpoints.size === 0, 10_000, 'the ended run to leave the timer');
      } finally {
        checkpoints.stop();
      }
    });

    it('a checkpoint statement carries only the text streamed since the last one', async () => {
      const a = await run();
      const long = 'x'.repeat(200_000);
      const text = streamed(long);
      const checkpoints = new Checkpoints(db.pool, 20);
      try {
        checkpoints.track(text, a);
        await landed(a.callId, long, 'the long text’s checkpoint');
        text.append(' and a tail');
        const sent = await checkpointTexts(() => landed(a.callId, `${long} and a tail`, 'the tail’s checkpoint'));
        assert.deepEqual(sent, [[' and a tail']], 'the tail alone, not the 200,000 characters before it');
        assert.deepEqual((await chunks(a.callId)).map((c) => c.pos), [0, long.length]);
      } finally {
        checkpoints.stop();
      }
    });

    it('one statement carries at most the budget, shared so a huge answer never holds back the others', async () => {
      const big = await run();
      const small = await run();
      const bigText = 'b'.repeat(100);
      const checkpoints = new Checkpoints(db.pool, 20, undefined, undefined, 16);
      try {
        const sent = await checkpointTexts(async () => {
          checkpoints.track(streamed(bigText), big);
          checkpoints.track(streamed('tiny'), small);
          await landed(big.callId, bigText, 'the big text over successive ticks', 20_000);
        });
        assert.ok(sent.length >= 100 / 16, `split over successive statements (${sent.length})`);
        for (const texts of sent) assert.ok(texts.join('').length <= 16, `at most the budget per statement: ${JSON.stringify(texts)}`);
        assert.ok(sent[0]!.includes('tiny'), 'the small run goes in the first statement beside the big one');
        assert.equal(await stored(small.callId), 'tiny');
      } finally {
        checkpoints.stop();
      }
    });

    it('never splits a surrogate pair between two chunks', async () => {
      const a = await run();
      const emoji = '😀'.repeat(20);
      // A budget of 5 units falls inside a pair at every other statement.
      const checkpoints = new Checkpoints(db.pool, 20, undefined, undefined, 5);
      const text = streamed('ab\uD83D');
      try {
        checkpoints.track(text, a);
        await landed(a.callId, 'ab', 'the text before the lone high surrogate');
        text.append(`\uDE00c${emoji}`);
        await landed(a.callId, `ab😀c${emoji}`, 'the pair and the emoji, whole', 20_000);
        for (const c of await chunks(a.callId)) assert.ok(!c.text.includes('\uFFFD') && c.text.isWellFormed(), `chunk at ${c.pos} is whole`);
      } finally {
        checkpoints.stop();
      }
    });

    it('a call’s chunks go when it ends, however it ends', async () => {
      const calls = [await run(), await run(), await run(), await run()];
      await writeCheckpoints(db.pool, calls.map((c) => ({ ...c, at: 0, text: 'Half' })));
      await writeCheckpoints(db.pool, calls.map((c) => ({ ...c, at: 4, text: ' an answer' })));
      const [answered, finished, failed, recovered] = calls;
      await finishLlmCallWithMessage(db.pool, { callId: answered!.callId, chatId: answered!.chatId, assistant: { content: 'Half an answer, whole' }, usage: null, latencyMs: 1, runToken: 1 });
      await finishLlmCall(db.pool, { callId: finished!.callId, usage: null, latencyMs: 1 });
      await failLlmCall(db.pool, { callId: failed!.callId, error: 'provider failed', latencyMs: 1 });
      await recoverLostCalls(db.pool, { where: 'c.id = $2', params: [recovered!.callId] });
      assert.deepEqual((await listMessages(db.pool, recovered!.chatId)).map((m) => m.content), ['q', 'Half an answer'], 'recovered from the chunks, joined');
      const left = await db.pool.query('SELECT call_id FROM llm_call_checkpoint_chunks WHERE call_id = ANY ($1::text[])', [calls.map((c) => c.callId)]);
      assert.equal(left.rowCount, 0);
    });

    it('a call that ends while a checkpoint waits on its row keeps no chunk', { skip: target.name === 'embedded' && 'one connection: nothing can hold the row' }, async () => {
      const a = await run();
      const holder = await db.pool.connect();
      let ended: Promise<boolean>;
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM llm_calls WHERE id = $1 FOR UPDATE', [a.callId]);
        const written = writeCheckpoints(db.pool, [{ ...a, at: 0, text: 'racing' }]);
        const waiters = async (n: number) =>
          (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)).rowCount! >= n;
        await waitFor(() => waiters(1), 10_000, 'the checkpoint to wait at the row lock');
        // Queued behind the checkpoint: it commits first, then the end must drop what it wrote.
        ended = finishLlmCall(db.pool, { callId: a.callId, usage: null, latencyMs: 1 });
        await waitFor(() => waiters(2), 10_000, 'the call’s end to wait behind it');
        await holder.query('ROLLBACK');
        assert.deepEqual([...(await written)], [a.callId]);
        assert.equal(await ended, true);
      } finally {
        holder.release();
      }
      assert.deepEqual(await chunks(a.callId), []);
    });

    it('lets ended runs leave the timer while a checkpoint statement hangs', { skip: target.name === 'embedded' && 'one connection: nothing can hold the statement' }, async () => {
      const a = await run();
      const text = streamed('held');
      const checkpoints = new Checkpoints(db.pool, 20);
      const holder = await db.pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM llm_calls WHERE id = $1 FOR UPDATE', [a.callId]);
        checkpoints.track(text, a);
        await waitFor(
          // Not on the holder: inside its transaction pg_stat_activity is one snapshot.
          async () => (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%llm_call_checkpoint_chunks%'`)).rowCount! > 0,
          10_000,
          'the checkpoint statement to wait at the row lock',
        );
        text.finished = true;
        // Else every run a host ever carried stays tracked for as long as the statement hangs.
        await waitFor(() => checkpoints.size === 0, 10_000, 'the ended run to leave the timer');
      } finally {
        checkpoints.stop();
        await holder.query('ROLLBACK');
        holder.release();
      }
      // The held statement goes on once the lock is gone: its end, before the next test's sweep (which
      // skips a row locked at that moment).
      await landed(a.callId, 'held', 'the held checkpoint to land');
    });

    it('gives its turn to callers waiting for the pool, a few ticks at most', async () => {
      const a = await run();
      // One connection (the embedded database's own pool has just that): held, with a caller queued for it.
      const own = target.name === 'embedded' ? null : new pg.Pool({ ...(db.pool as unknown as { options: pg.PoolConfig }).options, max: 1 });
      const pool = own ?? db.pool;
      const holder = await pool.connect();
      const checkpoints = new Checkpoints(pool, 20);
      try {
        const queued = pool.query('SELECT 1');
        checkpoints.track(streamed('patient'), a);
        // It yields MAX_YIELDS ticks, then queues its statement behind the caller anyway.
        await waitFor(() => pool.waitingCount === 2, 10_000, 'the checkpoint to queue after yielding');
        assert.equal(checkpoints.yielded, MAX_YIELDS);
        holder.release();
        await queued;
        await landed(a.callId, 'patient', 'the checkpoint to land');
      } finally {
        checkpoints.stop();
        await own?.end();
      }
    });

    it('keeps the cuts of a run’s deltas, one cut by a chunk joined again; a takeover gets them', async () => {
      const a = await run('dead', 'provider_b');
      const pieces = ['Hal', 'f an ', 'an', 'swer. '];
      // A budget of 4 units ends chunks inside deltas.
      const checkpoints = new Checkpoints(db.pool, 20, undefined, undefined, 4);
      const text = streamed('', true);
      try {
        checkpoints.track(text, a);
        for (const p of pieces) text.append(p);
        await landed(a.callId, pieces.join(''), 'the whole text, over several chunks');
      } finally {
        checkpoints.stop();
      }
      const joined = (await db.pool.query<{ d: string | null }>(`SELECT ${checkpointedDeltasSql('l')} AS d FROM llm_calls l WHERE l.id = $1`, [a.callId])).rows[0]!.d;
      assert.ok(joined!.includes('-'), `a delta continued across chunks: ${joined}`);
      assert.deepEqual(joinDeltaLengths(joined), pieces.map((p) => p.length));
      const started: ContinuedRun[] = [];
      await recoverLostCalls(db.pool, { where: 'c.id = $2', params: [a.callId] }, { takeover: { instanceId: 'peer', providers: new Set(['provider_b']), start: (r) => started.push(r) } });
      assert.deepEqual([started[0]?.text, started[0]?.deltas], ['Half an answer.', pieces.map((p) => p.length)]);
    });

    it('a run that does not keep its deltas checkpoints no cuts', async () => {
      const a = await run('dead', 'provider_b');
      await writeCheckpoints(db.pool, [{ ...a, at: 0, text: 'Half ' }]);
      const started: ContinuedRun[] = [];
      await recoverLostCalls(db.pool, { where: 'c.id = $2', params: [a.callId] }, { takeover: { instanceId: 'peer', providers: new Set(['provider_b']), start: (r) => started.push(r) } });
      assert.deepEqual([started[0]?.text, started[0]?.deltas], ['Half', null]);
    });

    it('recovery joins the chunks in order; a takeover’s continuation checkpoints after the resumed text', async () => {
      const a = await run('dead', 'provider_b');
      await writeCheckpoints(db.pool, [{ ...a, at: 0, text: 'Half ' }]);
      await writeCheckpoints(db.pool, [{ ...a, at: 5, text: 'an answer 😀 ' }]);
      const checkpoints = new Checkpoints(db.pool, 20);
      try {
        // The instance is lost here; a peer continues the run.
        const started: ContinuedRun[] = [];
        await recoverLostCalls(db.pool, { where: 'c.id = $2', params: [a.callId] }, { takeover: { instanceId: 'peer', providers: new Set(['provider_b']), start: (r) => started.push(r) } });
        const [cont] = started;
        assert.equal(cont?.text, 'Half an answer 😀', 'the lost run’s chunks, joined, the trailing space trimmed');
        assert.deepEqual(await chunks(a.callId), [], 'the lost call’s chunks went with its claim');
        // The continuation streams the resumed text first, then its own; only its own is checkpointed.
        const resumed = streamed(cont!.text);
        const sent = await checkpointTexts(async () => {
          checkpoints.track(resumed, { callId: cont!.newCallId, chatId: cont!.chatId, runToken: cont!.runToken, stored: cont!.text.length });
          resumed.append(' and the rest.');
          await landed(cont!.newCallId, 'Half an answer 😀 and the rest.', 'the continuation’s checkpoint');
        });
        assert.deepEqual(sent, [[' and the rest.']]);
        await markInterruptedLlmCalls(db.pool, { instanceId: 'peer' });
        const answers = (await listMessages(db.pool, a.chatId)).filter((m) => m.role === 'assistant').map((m) => m.content);
        assert.deepEqual(answers, ['Half an answer 😀 and the rest.'], 'the continuation, lost too, recovered whole');
      } finally {
        checkpoints.stop();
      }
    });
  });
}

/** A database migrated up to the file before `last` (sql/018 not yet applied), and its cleanup. */
async function migratedBefore(kind: 'embedded' | 'postgres', last: string): Promise<{ db: Database; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'migrations-'));
  for (const file of await readMigrations()) if (file.name < last) await writeFile(path.join(dir, file.name), file.sql);
  const where = kind === 'embedded' ? await freshEmbeddedDataDir() : await createScratchPostgres();
  const config = 'dataDir' in where ? { DATABASE_URL: undefined, DATA_DIR: where.dataDir } : { DATABASE_URL: where.url, DATA_DIR: '' };
  const db = await openDatabase(config, { migrationsDir: dir });
  return {
    db,
    cleanup: async () => {
      await db.close();
      await ('dataDir' in where ? where.cleanup() : where.drop());
      await rm(dir, { recursive: true, force: true });
    },
  };
}

for (const target of await testDatabases()) {
  describe(`migration 018 ${target.tag}`, () => {
    it('makes a running call’s checkpointed text its first chunk and drops ended calls’ text', async () => {
      const { db, cleanup } = await migratedBefore(target.name, '018_');
      try {
        const running = { id: randomUUID(), instanceId: 'old' };
        const ended = { id: randomUUID(), instanceId: 'old' };
        const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call: running });
        await db.pool.query(`INSERT INTO llm_calls (id, chat_id, provider, model, status) VALUES ($1, $2, 'provider_c', 'm', 'succeeded')`, [ended.id, chat.id]);
        await db.pool.query(`UPDATE llm_calls SET checkpoint_text = 'Written by the old version 😀', checkpoint_at = now() WHERE id = ANY ($1::text[])`, [[running.id, ended.id]]);

        assert.ok((await migrate(db.pool)).includes('018_checkpoint_chunks.sql'));
        const rows = (await db.pool.query('SELECT call_id, pos, text FROM llm_call_checkpoint_chunks')).rows;
        assert.deepEqual(rows, [{ call_id: running.id, pos: 0, text: 'Written by the old version 😀' }]);
        assert.equal((await db.pool.query('SELECT count(*)::int AS n FROM llm_calls WHERE checkpoint_text IS NOT NULL')).rows[0].n, 0);
        // Its recovery stores that text.
        await markInterruptedLlmCalls(db.pool, { instanceId: 'old' });
        const answers = (await listMessages(db.pool, chat.id)).filter((m) => m.role === 'assistant').map((m) => m.content);
        assert.deepEqual(answers, ['Written by the old version 😀']);
      } finally {
        await cleanup();
      }
    });
  });
}
