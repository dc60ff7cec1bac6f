// `kill -9` of the real entry point (`src/app/main.ts`) with runs in flight, then a start with ANOTHER
// INSTANCE_ID (a restart with the same id was the only cure before): the dead instance's running
// LlmCalls are failed by the heartbeat sweeper of the new instance.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INTERRUPTED_ERROR } from '../../src/store/llm-calls.ts';
import { freshPostgres, realPostgresSkipReason, sqlRows as rows } from '../helpers/pg-cluster.ts';
import { simCompletion, startLongStream, startService, stopService, type ServiceProcess } from '../helpers/process.ts';
import { readSse, sim, waitFor } from '../helpers/server.ts';

const skipKill = realPostgresSkipReason();

describe('kill -9 mid-run', { skip: skipKill ?? false }, () => {
  it('the dead instance’s running calls are failed by the sweeper of an instance with another id', async () => {
    const db = await freshPostgres();
    const env = { DATABASE_URL: db.url, PORT: '0', ACTOR_THREADS: '1', INSTANCE_HEARTBEAT_MS: '200' };
    let victim: ServiceProcess | undefined;
    let successor: ServiceProcess | undefined;
    try {
      victim = await startService({ ...env, INSTANCE_ID: 'victim' });
      const streams = [await startLongStream(victim), await startLongStream(victim), await startLongStream(victim)];
      const callIds = streams.map((s) => s.meta.data.callId as string);
      await waitFor(
        async () => (await rows(db.url, `SELECT count(*)::int AS n FROM llm_calls WHERE status = 'running' AND instance_id = 'victim'`))[0].n === 3,
        30_000,
        'the three calls to be stored as running',
      );
      victim.child.kill('SIGKILL');
      assert.equal(await victim.exited, null, 'killed by the signal');
      await Promise.all(streams.map((s) => s.rest));

      successor = await startService({ ...env, INSTANCE_ID: 'successor' });
      await waitFor(
        async () => (await rows(db.url, `SELECT count(*)::int AS n FROM llm_calls WHERE status = 'running'`))[0].n === 0,
        30_000,
        'the victim’s calls to be failed',
      );
      const calls = await rows(db.url, 'SELECT status, error, instance_id FROM llm_calls WHERE id = ANY($1)', [callIds]);
      assert.deepEqual(
        calls.map((c) => [c.status, c.error, c.instance_id]),
        callIds.map(() => ['failed', INTERRUPTED_ERROR, 'victim']),
      );
      // The sweeper did it (a start fails only calls of its own id); it names the instance it swept.
      assert.match(successor.output(), /"instanceId":"victim","calls":3,"msg":"marked the running LlmCalls of a stopped instance as failed"/);

      const next = await fetch(`${successor.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: simCompletion(sim({ reply: 'served' })) });
      const events = await readSse(next, new AbortController());
      assert.deepEqual([events.at(-1)!.event, events.at(-1)!.data.text], ['done', 'served']);
      assert.equal(await stopService(successor), 0);
      successor = undefined;
    } finally {
      victim?.child.kill('SIGKILL');
      if (successor) await stopService(successor, 'SIGKILL');
      await db.drop();
    }
  });
});

