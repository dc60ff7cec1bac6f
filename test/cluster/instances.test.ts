// Three instances of the real entry point sharing one Postgres, one Redis and one simulator behave
// as one service: one chat stream per chat under a start storm spread over every instance, attach
// on any instance at random moments equals the stored answer, a search started on two instances
// asks the engine once, a title suggested on two instances asks the model once, ?scope=cluster lists every instance's runs (a run whose chat
// row is not written yet too), a chat deleted on one instance ends its run on another, SIGTERM frees an instance's
// runs at once, and one whose Redis cannot be reached refuses to start. (SIGKILL: kill.test.ts;
// Redis restarted mid-run: redis-restart.test.ts; each file has its own time budget.)
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import pg from 'pg';
import { clusterRuns, clusterSuite, openStream, rebuilt, slow, startInstance, storedAnswer, type Instance } from '../helpers/cluster.ts';
import { freePort } from '../helpers/redis.ts';
import { sim, simEnv, startStorm, stopAfterFirstDelta, waitFor } from '../helpers/server.ts';
import { gateName, onFrame } from '../helpers/wait.ts';

describe('cluster mode: three instances on one Postgres and one Redis', async () => {
  const suite = await clusterSuite({ n: 3 });
  if (!suite) return;
  let a: Instance, b: Instance, cc: Instance;
  before(() => {
    [a, b, cc] = suite.cluster.instances as [Instance, Instance, Instance];
  });

  it('a start storm on one chat over three instances runs exactly once; the others get 409', async () => {
    const chat = (await a.call('POST', '/v1/chats', {})).body.chat;
    const { won, refused, statuses } = await startStorm(24, (i) => suite.cluster.instances[i % 3]!.url, slow(200, 20, { chatId: chat.id }, { gate: gateName(), gateAfter: 1 }));
    assert.equal(won.length, 1, statuses);
    assert.deepEqual(refused, Array(23).fill({ message: 'an active chat stream already exists for this chat' }));
    const { events, stopStatus } = await stopAfterFirstDelta(won[0]!, () => b.call('POST', `/v1/chats/${chat.id}/stream/stop`));
    assert.equal(stopStatus, 200);
    assert.deepEqual([events.at(-1)?.event, events.at(-1)?.data.stopped], ['done', true]);
    const db = new pg.Client({ connectionString: suite.cluster.databaseUrl });
    await db.connect();
    try {
      const calls = await db.query('SELECT count(*)::int AS n FROM llm_calls WHERE chat_id = $1', [chat.id]);
      assert.equal(calls.rows[0].n, 1, 'one provider call');
    } finally {
      await db.end();
    }
  });

  it('attach on any instance at random moments replays then follows: equal to the stored answer', async () => {
    // Held after 30 of its 40 deltas until every attach below has its replay, so none comes too late.
    const gate = gateName();
    const origin = await openStream(a, '/v1/chat-completions/stream', slow(40, 60, {}, { gate, gateAfter: 30 }));
    const chatId = origin.meta.data.chatId as string;
    assert.deepEqual((await b.call('GET', '/v1/active-runs')).body.chats, [], 'the spec’s meaning: this process only');
    assert.ok((await clusterRuns(b)).chats.includes(chatId), '?scope=cluster lists the run on another instance');
    // Random moments of the run, chosen by its progress (deltas the origin has seen), not by the clock:
    // the last attach comes by delta 26 of 40, before the hold at 30.
    const deltasSeen = () => origin.timeline.filter((e) => e.event === 'delta').length;
    let replayed = 0;
    const counted = { stopAfter: onFrame('meta', () => replayed++) };
    const attaches = Array.from({ length: 9 }, (_, i) => {
      const after = i * 3 + Math.floor(Math.random() * 3);
      return waitFor(() => deltasSeen() >= after, 30_000, `delta ${after} of the origin`).then(() => suite.cluster.instances[i % 3]!.stream(`/v1/chats/${chatId}/stream/attach`, undefined, counted));
    });
    // A client that drops mid-stream and re-attaches elsewhere gets everything too.
    const dropped = await b.stream(`/v1/chats/${chatId}/stream/attach`, undefined, { stopAfter: (_e, all) => all.length >= 3 });
    assert.equal(dropped.status, 200);
    await waitFor(() => replayed === 9, 30_000, 'the nine attaches to be replayed to');
    suite.sim.openGate(gate);
    const [own, ...others] = await Promise.all([origin.events, ...attaches]);
    const stored = await storedAnswer(a, chatId);
    assert.ok(stored);
    assert.equal(rebuilt(own!), stored);
    others.forEach((x, i) => {
      assert.equal(x.status, 200, `attach ${i}`);
      const names = x.events.map((e) => e.event);
      assert.equal(names[0], 'meta', 'replay starts with meta');
      assert.equal(names.filter((n) => n === 'done' || n === 'error').length, 1, 'one terminal event');
      assert.equal(names.at(-1), 'done');
      assert.equal(rebuilt(x.events), stored, `attach ${i} on ${suite.cluster.instances[i % 3]!.id}: nothing lost or doubled`);
      assert.equal(x.events.at(-1)!.data.text, stored);
    });
    const gone = await cc.call('POST', `/v1/chats/${chatId}/stream/attach`);
    assert.deepEqual([gone.status, gone.body.message], [404, 'active chat stream not found']);
  });

  it('a run started on one instance is stopped by a request to another; attached streams end too', async () => {
    // Held after its first delta at a gate nobody opens: only the stop can end it.
    const origin = await openStream(a, '/v1/chat-completions/stream', slow(60, 20, {}, { gate: gateName(), gateAfter: 1 }));
    const chatId = origin.meta.data.chatId as string;
    // The follower has attached once its replay (starting with meta) arrived; the stop comes after some
    // text (a run stopped before its first delta stores no answer).
    const follower = await openStream(cc, `/v1/chats/${chatId}/stream/attach`, {});
    await origin.firstDelta;
    const stop = await b.call('POST', `/v1/chats/${chatId}/stream/stop`);
    assert.deepEqual([stop.status, stop.body], [200, { stopped: true }]);
    const events = await origin.events;
    const done = events.at(-1)!;
    assert.deepEqual([done.event, done.data.stopped], ['done', true]);
    assert.equal(done.data.text, rebuilt(events));
    const followed = (await follower.events).at(-1)!;
    assert.deepEqual([followed.event, followed.data.text], ['done', done.data.text], 'the attached stream on a third instance ends the same');
    assert.equal(await storedAnswer(b, chatId), done.data.text);
    assert.equal((await b.call('GET', `/v1/chats/${chatId}`)).body.chat.lastRun.status, 'stopped');
    await waitFor(async () => !(await clusterRuns(b)).chats.includes(chatId), 5_000, 'the key to be free');
    const again = await b.call('POST', `/v1/chats/${chatId}/stream/stop`);
    assert.deepEqual([again.status, again.body], [404, { message: 'active chat stream not found' }]);
  });

  it('a chat deleted through another instance ends its run where it goes, and its followers', async () => {
    const origin = await openStream(a, '/v1/chat-completions/stream', slow(60, 20, {}, { gate: gateName(), gateAfter: 1 }));
    const chatId = origin.meta.data.chatId as string;
    const follower = await openStream(cc, `/v1/chats/${chatId}/stream/attach`, {});
    await origin.firstDelta;
    assert.deepEqual((await b.call('DELETE', `/v1/chats/${chatId}`)).body, { deleted: true });
    const cancelled = { event: 'error', data: { type: 'error', message: 'run cancelled: chat deleted' } };
    assert.deepEqual((await origin.events).at(-1), cancelled);
    assert.deepEqual((await follower.events).at(-1), cancelled);
    await waitFor(async () => !(await clusterRuns(b)).chats.includes(chatId), 5_000, 'the key to be free');
  });

  it('?scope=cluster lists a run on another instance before its chat row is written (open mode)', async () => {
    // The chat row is written beside the run's first round, not before it: held here by a lock on the
    // table, the run streams while its row does not exist yet. Then too the other instances list it.
    const db = new pg.Client({ connectionString: suite.cluster.databaseUrl });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE chats IN SHARE MODE');
      const origin = await openStream(a, '/v1/chat-completions/stream', slow(60, 20, {}, { gate: gateName(), gateAfter: 1 }));
      const chatId = origin.meta.data.chatId as string;
      await origin.firstDelta;
      const rows = await db.query('SELECT 1 FROM chats WHERE id = $1', [chatId]);
      assert.equal(rows.rowCount, 0, 'its row is not written yet');
      const listed = await clusterRuns(b);
      assert.ok(listed.chats.includes(chatId), `${chatId} not in ${JSON.stringify(listed)}`);
      await db.query('ROLLBACK');
      const stop = await b.call('POST', `/v1/chats/${chatId}/stream/stop`);
      assert.deepEqual([stop.status, stop.body], [200, { stopped: true }]);
      assert.equal((await origin.events).at(-1)?.event, 'done');
    } finally {
      await db.end();
    }
  });

  it('a search started on two instances joins one run: one engine call, the same outcome everywhere', async () => {
    const gate = gateName();
    const q = `cluster join ${Date.now()} SIM ${JSON.stringify({ searchGate: gate })}`;
    // A search with no stored query: only the first run's body has one, and the joiners send none.
    const s = (await a.call('POST', '/v1/searches', { title: 'cluster join' })).body.search;
    const path = `/v1/searches/${s.id}/run/stream`;
    // The whole run on cc starts it, its search call held at the gate; the streams on a and b and an
    // attach on cc join while it is held, each seen joined by its replayed answer; then it may answer.
    const wholeRun = cc.call('POST', `/v1/searches/${s.id}/run`, { query: q });
    await waitFor(async () => (await clusterRuns(b)).searches.includes(s.id) && suite.sim.heldAt(gate) === 1, 5000, 'the search run to be listed and held');
    let joined = 0;
    const join = { stopAfter: onFrame('answer', () => joined++) };
    const streams = Promise.all([a.stream(path, {}, join), b.stream(path, {}, join), cc.stream(`${path}/attach`, undefined, join)]);
    await waitFor(() => joined === 3, 10_000, 'the three to join');
    suite.sim.openGate(gate);
    const [[one, two, attached], whole] = await Promise.all([streams, wholeRun]);
    for (const x of [one, two, attached]) assert.deepEqual(x.events.map((e) => e.event), ['answer', 'search_results', 'done']);
    assert.deepEqual(two.events.at(-1)!.data, one.events.at(-1)!.data);
    assert.deepEqual(attached.events.at(-1)!.data, one.events.at(-1)!.data);
    assert.equal(whole.status, 200);
    assert.deepEqual(whole.body.search, one.events.at(-1)!.data.search);
    const engine = (what: string) => suite.sim.requests.filter((x) => x.upstream === 'engine_a' && x.path.endsWith(what) && x.body?.query === q).length;
    assert.equal(engine('/search'), 1, 'the engine is asked once');
    assert.equal(engine('/answer'), 1);
    // With no run going anywhere, a body without a query has nothing to search for.
    const idle = (await a.call('POST', '/v1/searches', { title: 'nothing to join' })).body.search;
    const refused = await b.call('POST', `/v1/searches/${idle.id}/run`, {});
    assert.deepEqual([refused.status, refused.body.message], [400, 'this search has no query: send `query` in the run body']);
  });

  it('a title suggested on two instances at once is one model call; both get the stored title', async () => {
    const chat = (await a.call('POST', '/v1/chats', {})).body.chat;
    const gate = gateName();
    const content = sim({ reply: 'Shared Cluster Title', gate }, `title ${chat.id}`);
    const calls = () => suite.sim.requests.filter((x) => x.upstream === 'provider_a' && x.path.endsWith('/responses') && JSON.stringify(x.body?.input).includes(chat.id)).length;
    const both = Promise.all([a, b].map((i) => i.call('POST', '/v1/chats/title/suggest', { chatId: chat.id, content })));
    // Sent together; the model's answer waits until one has reached it (one that came after the answer
    // would find the chat titled and return it without a call: the same verdict).
    await waitFor(() => suite.sim.heldAt(gate) > 0, 10_000, 'the title request to reach the model');
    suite.sim.openGate(gate);
    const [one, two] = await both;
    assert.deepEqual([one!.status, two!.status], [200, 200], JSON.stringify([one!.body, two!.body]));
    assert.deepEqual([one!.body.chat.title, two!.body.chat.title], ['Shared Cluster Title', 'Shared Cluster Title']);
    assert.equal(calls(), 1, 'provider_a is asked once');
  });

  it('an instance whose Redis cannot be reached refuses to start, naming REDIS_URL', async () => {
    const port = await freePort();
    await assert.rejects(
      startInstance('lonely', { PORT: '0', DATABASE_URL: suite.cluster.databaseUrl, REDIS_URL: `redis://127.0.0.1:${port}`, ...simEnv(suite.sim) }),
      (err: { code: number; out: string }) => {
        assert.equal(err.code, 1);
        assert.match(err.out, /REDIS_URL/);
        assert.match(err.out, new RegExp(`cannot reach redis://127\\.0\\.0\\.1:${port}`));
        return true;
      },
    );
  });

  it('an instance stopped with SIGTERM ends its runs and frees their keys at once', async () => {
    const run = await openStream(b, '/v1/chat-completions/stream', slow(400, 10, {}, { gate: gateName(), gateAfter: 1 }));
    const chatId = run.meta.data.chatId as string;
    await b.kill('SIGTERM');
    const ended = await run.events;
    assert.equal(ended.at(-1)?.event, 'error', 'its run ends as today');
    assert.ok(!(await clusterRuns(a)).chats.includes(chatId), 'no longer listed');
    const again = await a.stream('/v1/chat-completions/stream', slow(3, 0, { chatId }));
    assert.equal(again.status, 200, 'its chat takes a new stream at once, no lease to wait out');
  });
});
