// A keyed start that fails after taking its chat's lease (Redis failing between the lease and the
// user's slot) gives the lease back: the next start of that chat is taken, where it used to be refused
// 409 for the life of the process (the lease held and renewed by every beat). A real server on real
// Redis; the failure is injected into that one Redis call, as a dropped connection would make it.
// Likewise a user's slot whose claim ran in Redis but whose reply was lost is given back.
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

  it("gives the user's slot back when the claim's reply is lost after Redis counted it", async () => {
    const t = scratch.server();
    const may = await createUser(t, 'May', { maxActiveRuns: 1 });
    const userRuns = (t.server.ctx.runs as unknown as { cluster: { userRuns: { redis: { eval: (...a: unknown[]) => Promise<unknown> } } } }).cluster.userRuns;
    const redisClient = userRuns.redis;
    const evalReal = redisClient.eval;
    // The claim script runs in Redis; its reply is lost on the way back (a command timeout).
    let lost = 0;
    redisClient.eval = async function (this: unknown, ...a: unknown[]) {
      const out = await evalReal.apply(this, a);
      if (lost === 0 && String(a[0]).includes("'SMEMBERS'")) {
        lost++;
        throw new RedisUnavailableError('Command timed out');
      }
      return out;
    };
    let failed;
    try {
      failed = await may.call('POST', '/v1/chat-completions', chatBody('hi'));
    } finally {
      redisClient.eval = evalReal;
    }
    assert.equal(lost, 1, "the claim's reply was not the one lost");
    assert.equal(failed.status, 503, JSON.stringify(failed.body));
    const next = await may.call('POST', '/v1/chat-completions', chatBody('hi'));
    assert.equal(next.status, 200, `the user is held to a run that never started: ${JSON.stringify(next.body)}`);
  });
});
