// A keyed run's outcome meets a database blip (docs/api-notes.md, "Retrying a start safely"): the
// write that records it fails once, its connection cut by the server, and is retried until it lands,
// so the key does not stay `running` for good. A retry that was waiting for the run then gets the
// first answer, and so does a retry sent afterwards, each marked Idempotent-Replayed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { keyed, wholeRetryWaiting } from '../helpers/idempotency.ts';
import { NEEDS_POSTGRES, serverOnScratchPostgres, sim, waitFor } from '../helpers/server.ts';

// The outcome's UPDATE, held at a lock on its table.
const HELD_OUTCOME_WRITE = `SELECT pid FROM pg_stat_activity
  WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE idempotency_keys%'`;

// A deadline: the defect this pins is a retry that waits for good.
describe('the outcome of a keyed run through a database blip', { skip: NEEDS_POSTGRES, timeout: 120_000 }, () => {
  const scratch = serverOnScratchPostgres();

  it('is recorded once the database answers again, and retries replay it', async () => {
    const t = scratch.server();
    const providerCalls = () => t.sim.requests.filter((r) => r.upstream === 'provider_c' && r.method === 'POST').length;
    const bodyFor = (chatId: string, gate: string) => ({ provider: 'provider_c', model: 'm', enabledTools: [], chatId, messages: [{ role: 'user', content: sim({ reply: 'recorded after all', gate }) }] });
    const w = await wholeRetryWaiting(t, bodyFor, providerCalls);

    // SHARE mode holds the outcome's UPDATE and lets the waiting retry's reads through.
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE idempotency_keys IN SHARE MODE');
      t.sim.openGate(w.gate);
      const first = await w.pending;
      assert.equal(first.status, 200);
      let pid: number | undefined;
      await waitFor(async () => (pid = (await db.query(HELD_OUTCOME_WRITE)).rows[0]?.pid) !== undefined, 30_000, 'the outcome write to wait at the lock');
      // As a database restart would: the write fails with a connection error (57P01).
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      await db.query('COMMIT');
      const row = async () => (await db.query('SELECT status, response FROM idempotency_keys WHERE key = $1', [w.key])).rows[0];
      await waitFor(async () => (await row()).status === 'succeeded', 30_000, 'the outcome to be recorded after all');
      assert.deepEqual((await row()).response, { status: 200, body: first.body });

      const waiting = await w.retried;
      assert.deepEqual([waiting.status, waiting.body], [200, first.body]);
      assert.equal(waiting.headers.get('idempotent-replayed'), 'true');
      const later = await t.call('POST', '/v1/chat-completions', w.body, keyed(w.key));
      assert.deepEqual([later.status, later.body], [200, first.body]);
      assert.equal(later.headers.get('idempotent-replayed'), 'true');
      assert.equal(providerCalls(), w.calls + 1, 'one provider call for the three requests');
    } finally {
      await db.end();
    }
  });
});
