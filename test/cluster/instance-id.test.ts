// A second process started under the INSTANCE_ID of a live instance (a copied config, an orchestrator
// starting a replacement too early) is refused at start. Refused, it must have done nothing to the
// live instance on its way out: not recovered its running answers as lost ones, not removed its
// heartbeat row (which would make it look dead to every peer's sweeper).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { clusterSuite, openStream, rebuilt, slow, startInstance, type Instance } from '../helpers/cluster.ts';
import { simEnv, waitFor } from '../helpers/server.ts';
import { CHECKPOINTED_TEXT } from '../helpers/store.ts';
import { gateName } from '../helpers/wait.ts';

const TTL_MS = 3000;

describe('cluster mode: a second process under a live instance’s INSTANCE_ID', async () => {
  let db: pg.Client;
  const suite = await clusterSuite({ n: 1, env: { CLUSTER_LEASE_TTL_MS: String(TTL_MS), CHECKPOINT_MS: '100' }, beforeClose: async () => db?.end() });
  if (!suite) return;

  it('is refused, and the live instance’s run goes on to its answer', async () => {
    const [live] = suite.cluster.instances as [Instance];
    db = new pg.Client({ connectionString: suite.cluster.databaseUrl });
    await db.connect();
    const gate = gateName();
    const run = await openStream(live, '/v1/chat-completions/stream', slow(20, 0, {}, { gate, gateAfter: 3 }));
    const callId = run.meta.data.callId as string;
    const chatId = run.meta.data.chatId as string;
    await waitFor(async () => ((await db.query(CHECKPOINTED_TEXT, [callId])).rows[0]?.checkpoint_text ?? '') !== '', 30_000, 'a checkpoint');

    const duplicate = startInstance('dup', {
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: suite.cluster.databaseUrl,
      REDIS_URL: suite.redis.url,
      REDIS_KEY_PREFIX: suite.prefix,
      INSTANCE_ID: live.id,
      CLUSTER_LEASE_TTL_MS: String(TTL_MS),
      ...simEnv(suite.sim),
    });
    await assert.rejects(duplicate, /is in use by another live instance/);

    suite.sim.openGate(gate);
    const events = await run.events;
    assert.equal(events.at(-1)?.event, 'done', JSON.stringify(events.at(-1)));
    const call = (await db.query('SELECT status, error FROM llm_calls WHERE id = $1', [callId])).rows[0];
    assert.deepEqual(call, { status: 'succeeded', error: null });
    const answers = (await db.query(`SELECT content, metadata FROM messages WHERE chat_id = $1 AND role = 'assistant'`, [chatId])).rows;
    assert.deepEqual(answers, [{ content: rebuilt(events), metadata: null }]);
    assert.equal((await db.query('SELECT 1 FROM instances WHERE id = $1', [live.id])).rowCount, 1, 'the live instance’s heartbeat row stays');
  });
});
