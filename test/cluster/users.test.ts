// Users across two instances on one Postgres and one Redis: a key rotated or a user deleted on one
// instance stops working on the other at once (its key cache dropped through Redis), a deleted user's
// run on the other instance ends, a user's run limit holds across the cluster, another user's run
// on another instance reads as absent, and a user's run is listed on (and reachable from) the other
// instance before its chat row exists, to that user alone (its user travels with its lease).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import pg from 'pg';
import { clusterSuite, openStream, type Instance } from '../helpers/cluster.ts';
import { sim, waitFor } from '../helpers/server.ts';

const ADMIN_TOKEN = 'cluster-users-admin';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const slowChat = { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas: 4000, rate: 5 }) }] };

async function newUser(inst: Instance, name: string, extra: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const r = await inst.call('POST', '/v1/users', { name, ...extra }, admin);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.user.id, key: r.body.apiKey };
}

const clusterChats = async (inst: Instance, key: string) => (await inst.call('GET', '/v1/active-runs?scope=cluster', undefined, bearer(key))).body.chats as string[];

describe('users in cluster mode: two instances', async () => {
  const suite = await clusterSuite({ n: 2, env: { ADMIN_TOKEN } });
  if (!suite) return;
  let a: Instance, b: Instance;
  before(() => {
    [a, b] = suite.cluster.instances as [Instance, Instance];
  });

  it('a key rotated on one instance stops at once on the other, which had it cached', async () => {
    const u = await newUser(a, 'Rot');
    assert.equal((await b.call('GET', '/v1/chats', undefined, bearer(u.key))).status, 200);
    const rotated = await a.call('POST', `/v1/users/${u.id}/keys`, undefined, admin);
    assert.equal(rotated.status, 201);
    // The revocation reaches b through Redis pub/sub: wait for that event, with a deadline well
    // under the cache's own expiry (60 s), so only the message can have done it.
    await waitFor(async () => (await b.call('GET', '/v1/chats', undefined, bearer(u.key))).status === 401, 5_000, 'the old key refused on b');
    assert.equal((await b.call('GET', '/v1/chats', undefined, bearer(rotated.body.apiKey))).status, 200);
  });

  it("a user's limit holds across instances, and another user sees none of their runs", async () => {
    const u = await newUser(a, 'Lim', { maxActiveRuns: 1 });
    const other = await newUser(a, 'Other');
    const running = a.stream('/v1/chat-completions/stream', slowChat, { headers: bearer(u.key) });
    await waitFor(async () => (await clusterChats(b, u.key)).length === 1, 10_000, "the user's run, seen from b");
    const [chatId] = await clusterChats(b, u.key);
    const refused = await b.call('POST', '/v1/chat-completions', { ...slowChat, messages: [{ role: 'user', content: 'hi' }] }, bearer(u.key));
    assert.deepEqual([refused.status, refused.body], [429, { message: 'too many active runs for this user (limit 1)' }]);
    assert.deepEqual(await clusterChats(b, other.key), []);
    const attach = await b.call('POST', `/v1/chats/${chatId}/stream/attach`, undefined, bearer(other.key));
    assert.deepEqual([attach.status, attach.body], [404, { message: 'active chat stream not found' }]);
    const stop = await b.call('POST', `/v1/chats/${chatId}/stream/stop`, undefined, bearer(other.key));
    assert.deepEqual([stop.status, stop.body], [404, { message: 'active chat stream not found' }]);
    assert.equal((await b.call('POST', `/v1/chats/${chatId}/stream/stop`, undefined, bearer(u.key))).status, 200, 'the owner stops it from b');
    await running;
    await waitFor(async () => (await b.call('POST', '/v1/chat-completions', { ...slowChat, messages: [{ role: 'user', content: 'hi' }] }, bearer(u.key))).status === 200, 10_000, 'the slot back');
  });

  it("a user's run on another instance is listed and reached before its chat row is written, by that user alone", async () => {
    const u = await newUser(a, 'Early');
    const other = await newUser(a, 'Else');
    // The chat row is written beside the run's first round: held here by a lock on the table, the run
    // streams while its row does not exist yet, so only the lease can tell b whose run it is.
    const db = new pg.Client({ connectionString: suite.cluster.databaseUrl });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE chats IN SHARE MODE');
      const origin = await openStream(a, '/v1/chat-completions/stream', slowChat, { headers: bearer(u.key) });
      const chatId = origin.meta.data.chatId as string;
      await origin.firstDelta;
      assert.equal((await db.query('SELECT 1 FROM chats WHERE id = $1', [chatId])).rowCount, 0, 'its row is not written yet');
      assert.deepEqual(await clusterChats(b, u.key), [chatId]);
      assert.deepEqual(await clusterChats(b, other.key), [], 'another user does not see it');
      // Nor reaches it: with no row to read, only the lease's user tells b that the run is not theirs.
      // (Read as a status first: a wrongly granted attach is a stream that would not end while the lock holds.)
      const attach = await fetch(`${b.url}/v1/chats/${chatId}/stream/attach`, { method: 'POST', headers: bearer(other.key) });
      if (attach.status !== 404) await attach.body?.cancel();
      assert.deepEqual([attach.status, attach.status === 404 ? await attach.json() : null], [404, { message: 'active chat stream not found' }]);
      const stop = await b.call('POST', `/v1/chats/${chatId}/stream/stop`, undefined, bearer(other.key));
      assert.deepEqual([stop.status, stop.body], [404, { message: 'active chat stream not found' }]);
      const followed = await openStream(b, `/v1/chats/${chatId}/stream/attach`, undefined, { headers: bearer(u.key) });
      assert.equal(followed.meta.data.chatId, chatId, 'its user attaches from b');
      await db.query('ROLLBACK');
      assert.equal((await b.call('POST', `/v1/chats/${chatId}/stream/stop`, undefined, bearer(u.key))).status, 200);
      assert.equal((await origin.events).at(-1)?.event, 'done');
      assert.equal((await followed.events).at(-1)?.event, 'done');
    } finally {
      await db.end();
    }
  });

  it("deleting a user on one instance ends their run on the other with the deletion's error", async () => {
    const u = await newUser(a, 'Gone');
    const running = b.stream('/v1/chat-completions/stream', slowChat, { headers: bearer(u.key) });
    await waitFor(async () => (await clusterChats(a, u.key)).length === 1, 10_000, "the user's run on b");
    assert.deepEqual((await a.call('DELETE', `/v1/users/${u.id}`, undefined, admin)).body, { deleted: true });
    const { events } = await running;
    assert.deepEqual(events.at(-1), { event: 'error', data: { type: 'error', message: 'run cancelled: user deleted' } });
    await waitFor(async () => (await b.call('GET', '/v1/chats', undefined, bearer(u.key))).status === 401, 5_000, 'the key refused on b');
  });

  it("a killed instance's runs stop counting against their user's limit once its leases would go", async () => {
    const u = await newUser(a, 'Kil', { maxActiveRuns: 1 });
    const hi = { ...slowChat, messages: [{ role: 'user', content: 'hi' }] };
    void b.stream('/v1/chat-completions/stream', slowChat, { headers: bearer(u.key) }).catch(() => {});
    await waitFor(async () => (await clusterChats(a, u.key)).length === 1, 10_000, "the user's run on b");
    assert.equal((await a.call('POST', '/v1/chat-completions', hi, bearer(u.key))).status, 429);
    await b.kill('SIGKILL');
    // Freed with the instance's liveness (one lease TTL, 10 s by default), as its leases are.
    await waitFor(async () => (await a.call('POST', '/v1/chat-completions', hi, bearer(u.key))).status === 200, 15_000, 'the slot freed');
  });
});
