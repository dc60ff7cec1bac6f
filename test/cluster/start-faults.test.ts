// A keyed start that fails after taking its chat's lease (Redis failing between the lease and the
// user's slot) gives the lease back: the next start of that chat is taken, where it used to be refused
// 409 for the life of the process (the lease held and renewed by every beat). A real server on real
// Redis; the failure is injected into that one Redis call, as a dropped connection would make it.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { RedisUnavailableError } from '../../src/cluster/redis.ts';
import { testRedis, type TestRedis } from '../helpers/redis.ts';
import { NEEDS_POSTGRES, serverOnScratchPostgres } from '../helpers/server.ts';
import { ADMIN_TOKEN, chatBody, createUser } from '../helpers/users.ts';

describe('a cluster start that fails after taking its lease', { skip: NEEDS_POSTGRES }, async () => {
  const redis = await testRedis();
  if (typeof redis === 'string') {
    it('needs Redis', { skip: redis }, () => {});
    return;
  }
  const r: TestRedis = redis;
  const prefix = r.prefix();
  // Cluster mode needs a shared Postgres (a cluster's instances share one).
  const scratch = serverOnScratchPostgres({ REDIS_URL: r.url, REDIS_KEY_PREFIX: prefix, ADMIN_TOKEN });
  after(async () => {
    await r.clean(prefix);
    await r.close();
  });

  it("gives the chat's lease back when the user's slot cannot be taken", async () => {
    const t = scratch.server();
    const lee = await createUser(t, 'Lee');
    const chat = (await lee.call('POST', '/v1/chats', {})).body.chat;
    const userRuns = (t.server.ctx.runs as unknown as { cluster: { userRuns: { claim: (...a: unknown[]) => Promise<boolean> } } }).cluster.userRuns;
    const claim = userRuns.claim;
    userRuns.claim = () => Promise.reject(new RedisUnavailableError('connection reset'));
    let failed;
    try {
      failed = await lee.call('POST', '/v1/chat-completions', chatBody('hi', { chatId: chat.id }));
    } finally {
      userRuns.claim = claim;
    }
    assert.equal(failed.status, 503, JSON.stringify(failed.body));
    assert.match(failed.body.message, /Redis is unavailable .*connection reset; retry when Redis is back/);
    const next = await lee.call('POST', '/v1/chat-completions', chatBody('hi', { chatId: chat.id }));
    assert.equal(next.status, 200, JSON.stringify(next.body));
  });
});
