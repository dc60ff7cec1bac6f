// SIGTERM to the real entry point (`src/app/main.ts`) with runs in flight: every stream ends with an
// `error` event, a waiting non-streaming completion is answered 503, every LlmCall is stored failed
// with that error, the heartbeat row is removed, and the process exits 0.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { openDatabase } from '../../src/db/pool.ts';
import { migratedEmbeddedDataDir } from '../helpers/db.ts';
import { simCompletion, startLongStream, startService, stopService } from '../helpers/process.ts';
import { sim, waitFor } from '../helpers/server.ts';

const rows = async <R extends pg.QueryResultRow = any>(pool: pg.Pool, text: string): Promise<R[]> => (await pool.query<R>(text)).rows;

describe('SIGTERM with active runs', () => {
  it('ends every run with an error event and a stored error, then exits 0', async (t) => {
    const { dataDir, cleanup } = await migratedEmbeddedDataDir();
    try {
      const service = await startService({ DATA_DIR: dataDir, PORT: '0', ACTOR_THREADS: '1', SHUTDOWN_GRACE_MS: '0' });
      const streams = [await startLongStream(service), await startLongStream(service), await startLongStream(service)];
      // A non-streaming completion holding a chat: it must be answered too.
      const chat = await fetch(`${service.url}/v1/chats`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then((r) => r.json());
      const whole = fetch(`${service.url}/v1/chat-completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // Its answer is held at a gate nobody opens: only the shutdown can answer it.
        body: simCompletion(sim({ gate: 'never' }), { chatId: chat.chat.id }),
      }).then(
        async (r) => ({ status: r.status, body: await r.json() }),
        (err: Error) => ({ status: 0, body: { message: `no answer: ${err.message}` } }),
      );
      await waitFor(
        async () => (await fetch(`${service.url}/v1/active-runs`).then((r) => r.json())).chats.includes(chat.chat.id),
        30_000,
        'the completion to run',
      );

      assert.equal(await stopService(service, 'SIGTERM'), 0, `exit code 0:\n${service.output()}`);
      for (const s of streams) {
        const events = await s.rest;
        const last = events.at(-1)!;
        assert.equal(last.event, 'error', 'each stream ends with error');
        assert.match(last.data.message, /server is shutting down/);
        assert.ok(!events.some((e) => e.event === 'done'));
      }
      const answered = await whole;
      assert.equal(answered.status, 503, `${answered.body.message}\n${service.output()}`);
      assert.match(answered.body.message, /server is shutting down/);

      // What the runs stored, read after the process is gone (before any restart could touch it).
      const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
      try {
        const calls = await rows(db.pool, 'SELECT id, status, error FROM llm_calls ORDER BY started_at');
        assert.equal(calls.length, 4);
        // A run that did not stop within the shutdown grace (only on a starved machine) was ended by
        // the supervisor; its call is left to the next start. Every other run stored its own error.
        const endings = [...(await Promise.all(streams.map((s) => s.rest))).map((e) => e.at(-1)!.data.message as string), answered.body.message as string];
        const late = endings.filter((m) => /did not stop in time/.test(m)).length;
        if (late > 0) t.diagnostic(`${late} run(s) did not stop within the shutdown grace`);
        assert.ok(calls.filter((c) => c.status === 'running').length <= late);
        for (const c of calls.filter((c) => c.status !== 'running')) {
          assert.equal(c.status, 'failed');
          assert.match(c.error, /^run cancelled: server is shutting down/);
        }
        const errors = new Map(calls.map((c) => [c.id, c.error]));
        for (const [i, s] of streams.entries()) {
          if (!/did not stop in time/.test(endings[i]!)) assert.equal(errors.get(s.meta.data.callId), endings[i], 'stored error = streamed error');
        }
        assert.deepEqual(await rows(db.pool, 'SELECT id FROM instances'), [], 'a clean stop removes its heartbeat row');
      } finally {
        await db.close();
      }
    } finally {
      await cleanup();
    }
  });
});
