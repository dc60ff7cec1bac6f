// Cluster mode when Redis goes away and comes back (a throwaway redis-server on its own port, no
// persistence): runs already started finish and are stored, new runs get 503 naming Redis and
// /ready says why, and once Redis is back new runs start and one run per chat holds again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { openStream, rebuilt, slow, startCluster, storedAnswer, type Instance, type TestCluster } from '../helpers/cluster.ts';
import { redisServerInstalled, startRedisServer, type RedisServer } from '../helpers/redis.ts';
import { waitFor } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const skip = !process.env.TEST_DATABASE_URL
  ? 'Redis restart test skipped: it needs TEST_DATABASE_URL (a Postgres the instances share)'
  : !redisServerInstalled()
    ? 'Redis restart test skipped: no redis-server installed to start a throwaway one'
    : false;
if (skip) console.log(`# ${skip}`);

describe('cluster mode: Redis restarted mid-run', { skip }, () => {
  let server: RedisServer;
  let simh: SimHandle;
  let c: TestCluster;
  before(async () => {
    server = await startRedisServer();
    simh = await startSimulator();
    c = await startCluster({ n: 2, redisUrl: server.url, prefix: 'r:', sim: simh });
  });
  after(async () => {
    await c?.close();
    await simh?.close();
    await server?.stop();
  });

  it('running streams finish and are stored; new runs get 503 naming Redis until it is back', async () => {
    const [a, b] = c.instances as [Instance, Instance];
    // Held after its first delta until the outage has been seen, then let go while Redis is still down.
    const gate = gateName();
    const run = await openStream(a, '/v1/chat-completions/stream', slow(45, 0, {}, { gate, gateAfter: 1 }));
    const chatId = run.meta.data.chatId as string;
    await server.stop();
    const refused = await b.stream('/v1/chat-completions/stream', slow(3, 0));
    assert.equal(refused.status, 503);
    assert.match(refused.body.message, /Redis/);
    const ready = await b.call('GET', '/ready');
    assert.equal(ready.status, 503);
    assert.match(ready.body.message, /redis/i);
    simh.openGate(gate);
    const events = await run.events;
    assert.equal(events.at(-1)!.event, 'done', 'the run started before the outage finishes');
    assert.equal(await storedAnswer(a, chatId), rebuilt(events), 'and is stored');
    await server.start();
    await waitFor(async () => (await b.stream('/v1/chat-completions/stream', slow(3, 0))).status === 200, 30_000, 'new runs once Redis is back');
    assert.equal((await b.call('GET', '/ready')).status, 200);
    // Each instance reconnects on its own schedule (at most a second apart).
    await waitFor(async () => (await a.call('GET', '/ready')).status === 200, 30_000, 'the other instance to reconnect');
    // One run per chat holds again across instances.
    const heldGate = gateName();
    const held = await openStream(a, '/v1/chat-completions/stream', slow(40, 0, {}, { gate: heldGate, gateAfter: 1 }));
    const second = await b.stream('/v1/chat-completions/stream', slow(3, 0, { chatId: held.meta.data.chatId }));
    assert.equal(second.status, 409);
    simh.openGate(heldGate);
    held.abort();
  });
});
