// A user's runs counted across the cluster (src/cluster/user-runs.ts) when an instance is killed and
// started again under its INSTANCE_ID (the documented deployment: a stable id per instance): the
// dead instance's runs must not count against their users on its successor, which runs none of them,
// nor be listed among its active runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { clusterSuite, type Instance } from '../helpers/cluster.ts';
import { sim, waitFor } from '../helpers/server.ts';

const ADMIN_TOKEN = 'cluster-user-runs-admin';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const chat = (content: string) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content }] });

describe("a user's run count when an instance comes back under its INSTANCE_ID", async () => {
  // A long TTL: the dead instance's counts outlive its kill for the whole test, whatever the machine's load.
  const suite = await clusterSuite({ n: 1, env: { ADMIN_TOKEN, CLUSTER_LEASE_TTL_MS: '60000' } });
  if (!suite) return;

  it("the killed instance's runs do not count against their user on its successor", async () => {
    const a = suite.cluster.instances[0]!;
    const made = await a.call('POST', '/v1/users', { name: 'Phoenix', maxActiveRuns: 1 }, admin);
    assert.equal(made.status, 201);
    const u = { id: made.body.user.id as string, key: made.body.apiKey as string };
    void a.stream('/v1/chat-completions/stream', chat(sim({ deltas: 4000, rate: 5 })), { headers: bearer(u.key) }).catch(() => {});
    await waitFor(async () => (await a.call('GET', '/v1/active-runs', undefined, bearer(u.key))).body.chats.length === 1, 10_000, "the user's run");
    await a.kill('SIGKILL');

    const redis = new Redis(suite.redis.url);
    try {
      // Its liveness key expires while its per-user counts are still there (their last renewal came
      // after its last beat, up to a beat later): that moment made now rather than waited for.
      await redis.del(`${suite.prefix}alive:${a.id}`);
      assert.equal(await redis.hget(`${suite.prefix}userruns:${a.id}`, u.id), '1', "the dead instance's count is still in Redis");
    } finally {
      redis.disconnect();
    }
    const successor: Instance = await suite.cluster.add(a.id);
    const r = await successor.call('POST', '/v1/chat-completions', chat('hi'), bearer(u.key));
    assert.deepEqual([r.status, r.status === 200 ? null : r.body], [200, null], 'the user is held to a run that died with its instance');
  });

  it("the killed instance's runs are not listed as its successor's", async () => {
    const a = suite.cluster.instances.at(-1)!;
    const made = await a.call('POST', '/v1/users', { name: 'Ghost' }, admin);
    const key = made.body.apiKey as string;
    const clusterChats = async (inst: Instance) => (await inst.call('GET', '/v1/active-runs?scope=cluster', undefined, bearer(key))).body.chats as string[];
    void a.stream('/v1/chat-completions/stream', chat(sim({ deltas: 4000, rate: 5 })), { headers: bearer(key) }).catch(() => {});
    await waitFor(async () => (await clusterChats(a)).length === 1, 10_000, "the user's run");
    const [chatId] = await clusterChats(a);
    await a.kill('SIGKILL');
    const redis = new Redis(suite.redis.url);
    try {
      // As above: its liveness key gone, its run set (renewed at each claim too) still there.
      await redis.del(`${suite.prefix}alive:${a.id}`);
      assert.equal(await redis.sismember(`${suite.prefix}runs:${a.id}`, `chat:${chatId}`), 1, "the dead instance's run set is still in Redis");
    } finally {
      redis.disconnect();
    }
    const successor = await suite.cluster.add(a.id);
    assert.deepEqual(await clusterChats(successor), [], 'a run that died with its instance is listed as running');
  });
});
