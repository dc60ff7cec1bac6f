// The one retry loop, the retry budget and the breakers, through the real adapters and SDKs against the
// simulator: which failures are retried (counted in the simulator's request log), the provider's
// retry-after within PROVIDER_RETRY_MAX_WAIT_MS, the budget during a full outage (local, and shared by
// two instances through Redis), breakers opening, refusing, shared by instances, and half-open.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createProviders } from '../../src/providers/index.ts';
import { BUDGET_FLOOR_PER_S, BUDGET_WINDOW_S, LocalRetryBudget, RedisRetryBudget, type RetryBudget } from '../../src/providers/resilience/budget.ts';
import { LocalBreakers, RedisBreakers, type Breakers } from '../../src/providers/resilience/breaker.ts';
import { createResilience, settingsFrom, type ResilienceConfig } from '../../src/providers/resilience/index.ts';
import { retryWaitMs } from '../../src/providers/resilience/policy.ts';
import { statsOf } from '../../src/providers/resilience/resilient.ts';
import { ProviderError, ProviderUnavailableError, type ProviderAdapter, type ProviderName } from '../../src/providers/types.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { testRedis, type TestRedis } from '../helpers/redis.ts';
import { collect, request, resilienceConfig } from './helpers.ts';

describe('providers/resilience', () => {
  let sim: SimHandle;
  before(async () => {
    sim = await startSimulator({ defaultReply: { mode: 'echo' } });
  });
  after(() => sim.close());
  beforeEach(() => {
    sim.setFaults([]);
    sim.clearRequests();
  });

  const config = (extra: ResilienceConfig = {}) => resilienceConfig(sim, extra);

  const fail = (adapter: ProviderAdapter, directive: Record<string, unknown>, over = {}) =>
    collect(adapter.startSession(request(directive, over))).then(
      () => assert.fail('expected a failure'),
      (e: unknown) => e as ProviderError,
    );

  describe('which failures are retried', () => {
    let c: ProviderAdapter;
    // A fresh retry budget per test: a budget's floor allows 10 retries in its first second, and this
    // suite's tests together retry more than that within a second.
    beforeEach(() => {
      c = createProviders(config()).get('provider_c')!;
    });

    for (const status of [408, 409, 429, 500, 502, 503, 504, 529]) {
      test(`${status} before any output: the call and PROVIDER_RETRIES (2) more`, async () => {
        const e = await fail(c, { status, retryAfterMs: 1 });
        assert.equal(e.status, status);
        assert.equal(sim.calls('provider_c'), 3);
      });
    }

    test('a reset before any output is retried, and the retry answers', async () => {
      const r = await collect(c.startSession(request({ reset: true, failAttempts: 1, reply: 'after the reset' })));
      assert.equal(r.text, 'after the reset');
      assert.equal(sim.calls('provider_c'), 2);
    });

    for (const status of [400, 401, 403, 404, 422]) {
      test(`${status} is not retried`, async () => {
        const e = await fail(c, { status });
        assert.equal(e.status, status);
        assert.equal(sim.calls('provider_c'), 1);
      });
    }

    test('a stream that failed after text went out is not retried (the text is out)', async () => {
      let text = '';
      const e = await c
        .startSession(request({ reply: 'abcdef', deltas: 6, failAfter: 2, failMode: 'disconnect' }))
        .round(null, (t) => (text += t))
        .catch((err: unknown) => err);
      assert.ok(e instanceof ProviderError);
      assert.equal(text, 'ab');
      assert.equal(sim.calls('provider_c'), 1);
    });

    test('a 503 that clears on the second try answers once, whole', async () => {
      const r = await collect(c.startSession(request({ status: 503, failAttempts: 1, reply: 'second try' })));
      assert.equal(r.text, 'second try');
      assert.equal(sim.calls('provider_c'), 2);
    });
  });

  describe('retry-after', () => {
    test('a wait past PROVIDER_RETRY_MAX_WAIT_MS is not waited: the call fails at once with the provider\'s wait', async () => {
      const c = createProviders(config({ PROVIDER_RETRY_MAX_WAIT_MS: 5000 })).get('provider_c')!;
      const e = await fail(c, { status: 429, retryAfter: 30 });
      assert.equal(e.status, 429);
      assert.equal(e.retryAfterMs, 30_000);
      assert.equal(sim.calls('provider_c'), 1);
    });

    test('retry-after-ms wins over retry-after; an HTTP date is read too', () => {
      const bounds = { baseMs: 100, maxWaitMs: 10_000 };
      assert.equal(retryWaitMs(1, new ProviderError('x', 429, { retryAfterMs: 1500 }), bounds), 1500);
      assert.equal(retryWaitMs(1, new ProviderError('x', 429, { retryAfterMs: 10_001 }), bounds), null);
      // Without the provider's word: exponential from the base, the upper half jittered, capped by the max wait.
      assert.equal(retryWaitMs(1, new ProviderError('x', 503), bounds, () => 0), 50);
      assert.equal(retryWaitMs(1, new ProviderError('x', 503), bounds, () => 1), 100);
      assert.equal(retryWaitMs(3, new ProviderError('x', 503), bounds, () => 1), 400);
      assert.equal(retryWaitMs(20, new ProviderError('x', 503), bounds, () => 1), 10_000);
    });

    test('the headers as the SDK hands them become the wait', async () => {
      const c = createProviders(config({ PROVIDER_RETRIES: 0 })).get('provider_c')!;
      assert.equal((await fail(c, { status: 429, retryAfterMs: 1234 })).retryAfterMs, 1234);
      assert.equal((await fail(c, { status: 503, retryAfter: 7 })).retryAfterMs, 7000);
    });
  });

  describe('the retry budget', () => {
    test('during a full outage retries stop at the budget\'s share of the first calls, or its floor when that is more', async () => {
      let now = 1_000_000;
      const budget = new LocalRetryBudget({ percent: 20, now: () => now });
      assert.equal(await drain(budget, 'provider_c', 1000), 0.2 * 1000);
      // Another provider has its own budget; a window later the old calls and retries have left it, and
      // the floor of a budget that has seen a whole window remains.
      assert.equal(await budget.withdraw('provider_b'), true);
      now += BUDGET_WINDOW_S * 1000;
      assert.equal(await drain(budget, 'provider_c', 0), BUDGET_FLOOR_PER_S * BUDGET_WINDOW_S);
    });

    test('the floor is a minimum, 10 a second over the part of the window the budget has seen, not an allowance on top of the share', async () => {
      let now = 2_000_000;
      const budget = new LocalRetryBudget({ percent: 20, now: () => now });
      // 20 first calls' share is 4: the first second's floor, 10, is what a service just started may retry.
      assert.equal(await drain(budget, 'provider_c', 20), BUDGET_FLOOR_PER_S);
      now += 1000;
      assert.equal(await drain(budget, 'provider_c', 0), BUDGET_FLOOR_PER_S);
      // Its tenth second: the whole window's floor, 100 retries in all.
      now += (BUDGET_WINDOW_S - 2) * 1000;
      assert.equal(await drain(budget, 'provider_c', 0), BUDGET_FLOOR_PER_S * BUDGET_WINDOW_S - 20);
      // A second on, the first second's 20 calls and 10 retries have left: 90 retries against 100.
      now += 1000;
      assert.equal(await drain(budget, 'provider_c', 0), 10);
      // 1000 first calls: their share, 200, is the allowance (the floor's 100 is not added to it).
      assert.equal(await drain(budget, 'provider_c', 1000), 200 - BUDGET_FLOOR_PER_S * BUDGET_WINDOW_S);
    });

    test('a budget of 0 % still allows the floor, then refuses, through the retry loop', async () => {
      const now = 3_000_000;
      const r = createResilience(settingsFrom({ PROVIDER_RETRY_BUDGET_PERCENT: 0, PROVIDER_RETRY_BASE_MS: 1, PROVIDER_BREAKER_FAILURES: 0 }), { now: () => now });
      for (let i = 0; i < BUDGET_FLOOR_PER_S - 1; i++) assert.equal(await r.budget.withdraw('provider_c'), true);
      const c = createProviders(config(), r).get('provider_c')!;
      await fail(c, { status: 503 });
      // One retry was left in the floor: the first call and that one.
      assert.equal(sim.calls('provider_c'), 2);
      assert.equal(r.stats.retries.provider_c, 1);
    });
  });

  describe('breakers', () => {
    test('open after PROVIDER_BREAKER_FAILURES consecutive failures: refused at once with the wait, no call', async () => {
      let now = 5_000_000;
      const r = createResilience(settingsFrom({ PROVIDER_RETRIES: 0, PROVIDER_BREAKER_FAILURES: 3, PROVIDER_BREAKER_OPEN_MS: 15_000 }), { now: () => now });
      const c = createProviders(config(), r).get('provider_c')!;
      for (let i = 0; i < 3; i++) assert.equal((await fail(c, { status: 503 })).status, 503);
      assert.equal(sim.calls('provider_c'), 3);
      now += 1000;
      const refused = await fail(c, { reply: 'never asked' });
      assert.ok(refused instanceof ProviderUnavailableError);
      assert.equal(refused.message, 'provider_c is unavailable, retry later');
      assert.equal(refused.retryAfterMs, 14_000);
      assert.equal(sim.calls('provider_c'), 3);
      assert.equal(statsOf(r).breakerOpen.provider_c, 1);
      // Per provider and model: another model of the same provider still answers (the gauge stays 1).
      assert.equal((await collect(c.startSession(request({ reply: 'other model' }, { model: 'sim-c-small' })))).text, 'other model');
      assert.equal(statsOf(r).breakerOpen.provider_c, 1);
      // Once its time is up the gauge reads 0, before any call; the half-open trial then answers and closes it.
      now += 14_000;
      assert.equal(statsOf(r).breakerOpen.provider_c, 0);
      assert.equal((await collect(c.startSession(request({ reply: 'trial' })))).text, 'trial');
      assert.equal((await collect(c.startSession(request({ reply: 'closed again' })))).text, 'closed again');
      assert.equal(sim.calls('provider_c'), 6);
    });

    test('a call counts as a success once its text begins, not when its stream ends', async () => {
      const r = createResilience(settingsFrom({ PROVIDER_RETRIES: 0, PROVIDER_BREAKER_FAILURES: 2 }));
      const c = createProviders(config(), r).get('provider_c')!;
      await fail(c, { status: 503 });
      // A long answer, held after its first delta until the test opens the gate.
      const gate = `first-${process.pid}`;
      let started!: () => void;
      const first = new Promise<void>((resolve) => (started = resolve));
      let text = '';
      const long = c.startSession(request({ reply: 'one two three', deltas: 3, gate, gateAfter: 1 })).round(null, (t) => {
        text += t;
        started();
      });
      await first;
      // Failure, success (begun), failure: never two in a row, so the breaker stays closed.
      await fail(c, { status: 503 });
      assert.equal((await collect(c.startSession(request({ reply: 'still admitted' })))).text, 'still admitted');
      sim.openGate(gate);
      await long;
      assert.equal(text, 'one two three');
    });

    breakerSuite('local', async () => {
      let now = 0;
      return { clock: (t: number) => (now = t), make: () => new LocalBreakers({ failures: 2, openMs: 1000, now: () => now }), shared: false };
    });

    let redis: TestRedis | string;
    const redisUrl = () => (redis as TestRedis).url;
    const conns: Redis[] = [];
    before(async () => {
      redis = await testRedis();
    });
    after(async () => {
      for (const c of conns) c.disconnect();
      if (typeof redis !== 'string') await redis.close();
    });

    breakerSuite('redis', async (t) => {
      if (typeof redis === 'string') {
        t.skip(redis);
        return null;
      }
      let now = 0;
      const prefix = redis.prefix();
      const url = redis.url;
      return {
        clock: (at: number) => (now = at),
        // One connection per breaker set, as two instances have.
        make: () => {
          const conn = new Redis(url);
          conns.push(conn);
          return new RedisBreakers(conn, prefix, { failures: 2, openMs: 1000, now: () => now });
        },
        shared: true,
      };
    });

    test('two instances on one Redis (REDIS_URL): a breaker opened by the calls of one refuses on the other, which never calls', async (t) => {
      if (typeof redis === 'string') return t.skip(redis);
      const prefix = redis.prefix();
      const instance = async () => {
        const r = createResilience(settingsFrom({ REDIS_URL: redisUrl(), REDIS_KEY_PREFIX: prefix, PROVIDER_RETRIES: 0, PROVIDER_BREAKER_FAILURES: 2, PROVIDER_BREAKER_OPEN_MS: 60_000 }));
        assert.equal(await r.shared, true);
        return { r, c: createProviders(config(), r).get('provider_c')! };
      };
      const one = await instance();
      const two = await instance();
      for (let i = 0; i < 2; i++) assert.equal((await fail(one.c, { status: 503 })).status, 503);
      assert.equal(sim.calls('provider_c'), 2);
      const refused = await fail(two.c, { reply: 'never asked' });
      assert.ok(refused instanceof ProviderUnavailableError, String(refused));
      assert.ok(refused.retryAfterMs! > 0 && refused.retryAfterMs! <= 60_000);
      assert.equal(sim.calls('provider_c'), 2);
      assert.equal(statsOf(two.r).breakerOpen.provider_c, 1);
      await redis.clean(prefix);
    });

    test('the retry budget through Redis is the cluster\'s: two instances share one share and one floor', async (t) => {
      if (typeof redis === 'string') return t.skip(redis);
      const now = 9_000_000;
      const prefix = redis.prefix();
      const a = new Redis(redis.url);
      const b = new Redis(redis.url);
      conns.push(a, b);
      const one = new RedisRetryBudget(a, prefix, { percent: 20, now: () => now });
      const two = new RedisRetryBudget(b, prefix, { percent: 20, now: () => now });
      // A full outage seen by both: the first calls of one pay for the retries of the other (alone, two
      // would have its floor of 10); the cluster's allowance is 20 % of the 500, not that plus a floor.
      for (let i = 0; i < 500; i++) one.deposit('provider_c');
      await a.ping(); // one's deposits have landed (a connection answers in order)
      assert.equal(await drain(two, 'provider_c', 0), 0.2 * 500);
      assert.equal(await one.withdraw('provider_c'), false);
      // Without calls both instances share one floor (10 in this second), not 10 each.
      let granted = 0;
      for (let i = 0; i < 2 * BUDGET_FLOOR_PER_S + 2; i++) if (await (i % 2 ? two : one).withdraw('provider_b')) granted++;
      assert.equal(granted, BUDGET_FLOOR_PER_S);
      await redis.clean(prefix);
    });
  });

  /** The same breaker behaviour, local and through Redis (`shared`: a second set sees the first's state). */
  function breakerSuite(name: string, setup: (t: { skip(msg: string): void }) => Promise<{ clock(t: number): void; make(): Breakers; shared: boolean } | null>) {
    test(`${name}: half-open lets one trial through; its success closes, its failure opens again`, async (t) => {
      const s = await setup(t);
      if (!s) return;
      const one = s.make();
      const other = s.shared ? s.make() : one;
      const key = 'provider_c/sim-c-large';
      s.clock(10_000);
      assert.deepEqual(await one.admit(key), { allow: true, trial: false });
      await one.record(key, true);
      await one.record(key, true);
      // Open (on the other instance too, when shared).
      assert.deepEqual(await other.admit(key), { allow: false, retryAfterMs: 1000 });
      s.clock(11_000);
      // Half-open: one trial, the next call refused while it is out.
      assert.deepEqual(await other.admit(key), { allow: true, trial: true });
      assert.equal((await one.admit(key)).allow, false);
      await other.record(key, true);
      assert.deepEqual(await one.admit(key), { allow: false, retryAfterMs: 1000 });
      s.clock(12_000);
      assert.deepEqual(await one.admit(key), { allow: true, trial: true });
      await one.record(key, false);
      assert.deepEqual(await other.admit(key), { allow: true, trial: false });
      // A success resets the consecutive count: one failure does not open it.
      await other.record(key, true);
      assert.equal((await one.admit(key)).allow, true);
    });

    test(`${name}: half of at least 20 calls failing within 10 s opens it, without 2 in a row`, async (t) => {
      const s = await setup(t);
      if (!s) return;
      const one = s.make();
      const key = 'provider_b/sim-b-large';
      s.clock(50_000);
      for (let i = 0; i < 20; i++) {
        assert.equal((await one.admit(key)).allow, true, `call ${i}`);
        await one.record(key, i % 2 === 1);
      }
      assert.equal((await one.admit(key)).allow, false);
    });

    test(`${name}: calls older than 10 s leave the failure rate`, async (t) => {
      const s = await setup(t);
      if (!s) return;
      const one = s.make();
      const key = 'provider_a/sim-a-large';
      s.clock(80_000);
      for (let i = 0; i < 18; i++) await one.record(key, i % 2 === 1);
      // Ten seconds on, the 18 have left the window: 2 more calls (one failed) are not 20 calls.
      s.clock(90_000);
      for (let i = 0; i < 2; i++) {
        assert.equal((await one.admit(key)).allow, true, `call ${i}`);
        await one.record(key, i % 2 === 1);
      }
      assert.equal((await one.admit(key)).allow, true);
    });
  }

  async function drain(budget: RetryBudget, provider: ProviderName, deposits: number): Promise<number> {
    for (let i = 0; i < deposits; i++) budget.deposit(provider);
    let n = 0;
    while (await budget.withdraw(provider)) n++;
    return n;
  }
});
