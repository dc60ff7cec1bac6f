// An instance killed with SIGKILL mid-run (two instances of the real entry point on one Postgres and
// one Redis, the default lease TTL): once its lease expires its run leaves ?scope=cluster and its chat takes
// a new stream on the survivor, a follower on the survivor is told the run's instance stopped (in its
// run kind's shape: a search run's `error` is `{"message"}`, a chat's has `type`), and the heartbeat sweeper (issue 16's, not a second mechanism) marks its LlmCall failed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { clusterRuns, clusterSuite, openStream, slow, type Instance } from '../helpers/cluster.ts';
import { waitFor, type StreamResult } from '../helpers/server.ts';
import { gateName, onFrame } from '../helpers/wait.ts';

describe('cluster mode: an instance killed with SIGKILL', async () => {
  const suite = await clusterSuite({ n: 2 });
  if (!suite) return;

  it('an instance killed with SIGKILL frees its runs once their leases expire; followers elsewhere get an error; its LlmCall reads failed', async (t) => {
    const [a, victim] = suite.cluster.instances as [Instance, Instance];
    // Held after its first delta at a gate nobody opens: it can only end by the kill.
    const run = await openStream(victim, '/v1/chat-completions/stream', slow(400, 10, {}, { gate: gateName(), gateAfter: 1 }));
    const chatId = run.meta.data.chatId as string;
    const callId = run.meta.data.callId as string;
    // A follower on another instance, attached (its replay arrived) before the kill.
    const follower = await openStream(a, `/v1/chats/${chatId}/stream/attach`, {});
    await waitFor(async () => (await clusterRuns(a)).chats.includes(chatId), 5000, 'the run to be listed');
    // A search run on the victim, its engine search held at a gate nobody opens, followed from `a` too.
    const searchGate = gateName('search');
    const search = (await victim.call('POST', '/v1/searches', { query: `killed owner ${Date.now()} SIM ${JSON.stringify({ searchGate })}` })).body.search;
    const runPath = `/v1/searches/${search.id}/run/stream`;
    void victim.stream(runPath, {}).catch(() => undefined);
    await waitFor(async () => (await clusterRuns(a)).searches.includes(search.id) && suite.sim.heldAt(searchGate) === 1, 5000, 'the search run to be listed and held');
    let searchJoined = false;
    const searchFollower = a.stream(`${runPath}/attach`, undefined, { stopAfter: onFrame('answer', () => (searchJoined = true)) });
    await waitFor(() => searchJoined, 10_000, 'the search follower to get its replay');
    await victim.kill('SIGKILL');
    const killedAt = Date.now();
    // How soon is the bench's to measure (the lease TTL); the test waits for it, with a deadline.
    let again: StreamResult | undefined;
    await waitFor(async () => {
      if ((await clusterRuns(a)).chats.includes(chatId)) return false;
      const r = await a.stream('/v1/chat-completions/stream', slow(3, 0, { chatId }));
      if (r.status !== 200) assert.equal(r.status, 409, JSON.stringify(r.body));
      again = r.status === 200 ? r : undefined;
      return again !== undefined;
    }, 60_000, 'the chat to take a new stream');
    assert.equal(again!.events.at(-1)?.event, 'done');
    t.diagnostic(`SIGKILL: chat free for a new stream after ${Date.now() - killedAt} ms`);
    const f = await follower.events;
    assert.equal(f.at(-1)?.event, 'error', 'the follower is told the run’s instance stopped');
    assert.match(f.at(-1)!.data.message, /stopped/);
    const sf = (await searchFollower).events.at(-1)!;
    assert.equal(sf.event, 'error', 'the search follower is told the run’s instance stopped');
    assert.deepEqual(Object.keys(sf.data), ['message'], 'in the search run’s shape, not the chat’s');
    assert.match(sf.data.message, /stopped/);
    // The heartbeat sweeper (dead after 3 missed beats, swept at a peer's next beat once that peer
    // has beaten cleanly as long) fails its LlmCall; with the default 3 s beat that is 9–12 s after
    // the last beat. A loaded machine delays beats, so the wait is generous.
    const db = new pg.Client({ connectionString: suite.cluster.databaseUrl });
    await db.connect();
    try {
      await waitFor(async () => (await db.query('SELECT status FROM llm_calls WHERE id = $1', [callId])).rows[0]?.status === 'failed', 60_000, 'the LlmCall to be marked failed');
      t.diagnostic(`SIGKILL: LlmCall failed after ${Date.now() - killedAt} ms`);
    } finally {
      await db.end();
    }
  });

});
