// The database goes away under running streams and comes back, on a throwaway Postgres cluster this
// test starts itself: the runs end with `error`, GET /ready says 503 while it is away and 200 after,
// requests that need the database are refused with 503 and Retry-After (not failed with 500), every
// interrupted LlmCall is marked failed (with the error its client saw) once it is back, and the
// service serves new runs without a restart.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pgClusterSkipReason, sqlRows as sql, startPgCluster, type PgCluster } from '../helpers/pg-cluster.ts';
import { readSse, sim, startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';

const skip = pgClusterSkipReason();

describe('a database outage mid-run', { skip: skip ?? false }, () => {
  let cluster: PgCluster;
  let url: string;
  let t: TestServer;
  before(async () => {
    cluster = await startPgCluster();
    url = await cluster.createDatabase('service');
    // One worker thread: the runs and their retried writes live off the main thread, as in production.
    t = await startTestServer({ databaseUrl: url, actorThreads: 1, env: { INSTANCE_HEARTBEAT_MS: '200' } });
  });
  after(async () => {
    await t?.close();
    await cluster?.destroy();
  });

  const ask = (content: string) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content }] });

  it('ends the runs with error, answers 503 on /ready, fails the calls once it is back, and recovers', async () => {
    for (const path of ['/ready', '/api/ready']) {
      const r = await t.call('GET', path);
      assert.deepEqual([r.status, r.body], [200, { ready: true }], path);
    }

    // Three persisted streams of about six seconds each: the outage starts while they stream.
    const streams = Array.from({ length: 3 }, async () => {
      const res = await fetch(`${t.url}/v1/chat-completions/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ask(sim({ deltas: 120, rate: 20 }))),
      });
      return readSse(res, new AbortController());
    });
    await waitFor(
      async () => (await sql(url, `SELECT count(*)::int AS n FROM llm_calls WHERE status = 'running'`))[0].n === 3,
      30_000,
      'the three calls to be stored as running',
    );

    await cluster.stop('fast');
    let ready = await t.call('GET', '/ready');
    assert.equal(ready.status, 503);
    assert.match(ready.body.message, /^database unavailable: /);
    assert.equal((await t.call('GET', '/health')).status, 200, '/health stays the liveness check');

    // A refusal, not a failure: the client may retry, and the message says what is missing.
    for (const [method, path, body] of [
      ['GET', '/v1/workspace-items', undefined],
      ['GET', '/v1/chats', undefined],
      ['POST', '/v1/chats', {}],
      ['POST', '/v1/searches', { query: 'during the outage' }],
    ] as const) {
      const r = await t.call(method, path, body);
      assert.equal(r.status, 503, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.message, /^database unavailable: /, `${method} ${path}`);
      assert.match(r.headers.get('retry-after') ?? '', /^\d+$/, `${method} ${path} says when to retry`);
    }

    const during = await t.stream('/v1/chat-completions/stream', ask('during the outage'));
    assert.deepEqual([during.events[0]!.event, during.events.at(-1)!.event], ['meta', 'error'], 'a run started now ends with error');

    const ended: SseEvent[][] = await Promise.all(streams);
    for (const events of ended) {
      const names = events.map((e) => e.event);
      assert.equal(names[0], 'meta');
      assert.equal(names.at(-1), 'error');
      assert.ok(!names.includes('done'));
    }

    await cluster.start();
    await waitFor(async () => (await t.call('GET', '/ready')).status === 200, 30_000, '/ready to say 200 again');
    ready = await t.call('GET', '/api/ready');
    assert.deepEqual([ready.status, ready.body], [200, { ready: true }]);

    // The failures were queued while the database was away; they land once it is back.
    const callIds = ended.map((events) => events[0]!.data.callId as string);
    await waitFor(
      async () => (await sql(url, `SELECT count(*)::int AS n FROM llm_calls WHERE status = 'running'`))[0].n === 0,
      30_000,
      'no LlmCall left running',
    );
    const rows = await sql<{ id: string; status: string; error: string }>(url, 'SELECT id, status, error FROM llm_calls WHERE id = ANY($1)', [callIds]);
    assert.equal(rows.length, 3);
    for (const [i, events] of ended.entries()) {
      const row = rows.find((r) => r.id === callIds[i])!;
      assert.deepEqual([row.status, row.error], ['failed', events.at(-1)!.data.message], 'the stored error is the one the client saw');
    }

    // Recovered without a restart: a new run is served and stored, and the heartbeat beats again.
    const next = await t.stream('/v1/chat-completions/stream', ask(sim({ reply: 'back again' })));
    assert.equal(next.events.at(-1)!.event, 'done');
    assert.equal(next.events.at(-1)!.data.text, 'back again');
    const stored = await sql(url, 'SELECT status FROM llm_calls WHERE id = $1', [next.events[0]!.data.callId]);
    assert.deepEqual(stored, [{ status: 'succeeded' }]);
    const instanceId = t.server.ctx.config.instanceId;
    await waitFor(
      async () => (await sql(url, `SELECT now() - last_beat < interval '2 seconds' AS fresh FROM instances WHERE id = $1`, [instanceId]))[0]?.fresh === true,
      10_000,
      'the heartbeat to resume',
    );
  });
});
