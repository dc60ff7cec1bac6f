// The cluster's Redis parts against a real Redis: leases (one winner out of simultaneous takers on
// separate connections, renew and release only by the holder, expiry), instance liveness and the
// cluster-wide run list, pub/sub between two instances (replay then live, numbered, a remote
// waiter's outcome, stop), and the faults: Redis unreachable at start, lost and back mid-way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Cluster, FENCED_MESSAGE, OwnerUnreachableError } from '../../src/cluster/cluster.ts';
import { clusterKeys } from '../../src/cluster/keys.ts';
import { Leases } from '../../src/cluster/leases.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { LocalRunPort } from '../../src/cluster/port.ts';
import { connectRedis, RedisUnavailableError } from '../../src/cluster/redis.ts';
import { freePort, redisServerInstalled, startRedisServer, testRedis, type TestRedis } from '../helpers/redis.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { waitFor } from '../helpers/wait.ts';

const silent = pino({ level: 'silent' });
const waitUntil = (check: () => Promise<boolean> | boolean, what?: string) => waitFor(check, 10_000, what);

/** A sink that keeps what it got. */
function memorySink(): Subscriber & { text: string; ended: boolean; close(): void } {
  const hooks: Array<() => void> = [];
  const sink = {
    text: '',
    ended: false,
    dropped: false,
    write(c: string) {
      sink.text += c;
    },
    end() {
      sink.ended = true;
      sink.close();
    },
    onClose(fn: () => void) {
      hooks.push(fn);
    },
    close() {
      for (const h of hooks.splice(0)) h();
    },
  };
  return sink;
}

/** A stand-in for this process's runs: one run per key with a replay buffer and live subscribers. */
function fakeRuns() {
  const runs = new Map<string, { buffer: string; subs: Set<Subscriber>; outcome: Promise<RunResult>; resolve(v: RunResult): void; stopped?: string; fenced?: string }>();
  const port: LocalRunPort = {
    attach(kind, key, sub) {
      const r = runs.get(`${kind}:${key}`);
      if (!r) return false;
      sub.write(r.buffer);
      r.subs.add(sub);
      sub.onClose(() => r.subs.delete(sub));
      return true;
    },
    outcome: (kind, key) => runs.get(`${kind}:${key}`)?.outcome ?? null,
    stop(kind, key, reason) {
      const r = runs.get(`${kind}:${key}`);
      if (!r) return false;
      r.stopped = reason;
      return true;
    },
    fence(kind, key, message) {
      const r = runs.get(`${kind}:${key}`);
      if (!r) return false;
      r.fenced = message;
      return true;
    },
  };
  return {
    port,
    runs,
    start(key: string) {
      let resolve!: (v: RunResult) => void;
      const outcome = new Promise<RunResult>((r) => (resolve = r));
      runs.set(`chat:${key}`, { buffer: '', subs: new Set(), outcome, resolve });
    },
    emit(key: string, frame: string) {
      const r = runs.get(`chat:${key}`)!;
      r.buffer += frame;
      for (const s of r.subs) s.write(frame);
    },
    end(key: string, value: RunResult) {
      const r = runs.get(`chat:${key}`)!;
      runs.delete(`chat:${key}`);
      for (const s of r.subs) s.end();
      r.resolve(value);
    },
  };
}

describe('cluster Redis parts', async () => {
  const redis = await testRedis();
  if (typeof redis === 'string') {
    it('needs Redis', { skip: redis }, () => {});
    console.log(`# ${redis}`);
    return;
  }
  const r: TestRedis = redis;
  const prefixes: string[] = [];
  const clients: Redis[] = [];
  const prefix = () => {
    const p = r.prefix();
    prefixes.push(p);
    return p;
  };
  const client = async () => {
    const c = await connectRedis(r.url, 'test');
    clients.push(c);
    return c;
  };
  after(async () => {
    for (const c of clients) c.disconnect();
    for (const p of prefixes) await r.clean(p);
    await r.close();
  });

  /** Instances `a` and `b` on one connection, both claimed (live), with leases of a minute. */
  const liveInstances = async () => {
    const keys = clusterKeys(prefix());
    const c = await client();
    const a = new Leases(c, keys, 'a', 60_000);
    const b = new Leases(c, keys, 'b', 60_000);
    assert.equal(await a.claimInstance(0), true);
    assert.equal(await b.claimInstance(0), true);
    return { keys, c, a, b };
  };

  it('gives a run key to exactly one of many simultaneous takers on separate connections', async () => {
    const keys = clusterKeys(prefix());
    const conns = await Promise.all([client(), client(), client(), client()]);
    for (let round = 0; round < 20; round++) {
      const leases = conns.map((c, i) => new Leases(c, keys, `i${i}`, 5000));
      const answers = await Promise.all(leases.map((l) => l.acquire('chat', `race-${round}`)));
      const winners = answers.filter((a) => a === null);
      assert.equal(winners.length, 1, `round ${round}: one winner`);
      const winner = `i${answers.indexOf(null)}`;
      for (const a of answers) if (a !== null) assert.equal(a, winner, 'losers are told who holds it');
      assert.equal(await leases[0]!.owner('chat', `race-${round}`), winner);
    }
  });

  it('renews (at the beat) and releases only the holder’s lease, and an unrenewed lease expires', async () => {
    const keys = clusterKeys(prefix());
    const c = await client();
    const a = new Leases(c, keys, 'a', 60_000);
    const b = new Leases(c, keys, 'b', 60_000);
    const lease = keys.lease('search', 's1');
    const s1 = { kind: 'search', key: 's1' } as const;
    assert.equal(await a.acquire('search', 's1'), null);
    await c.pexpire(lease, 5000);
    assert.deepEqual(await b.beat([s1]), [s1], 'another instance cannot extend it: it is told the lease is lost');
    assert.ok((await c.pttl(lease)) <= 5000, 'and its TTL is untouched');
    assert.equal(await b.release('search', 's1'), false, 'nor drop it');
    assert.equal(await a.owner('search', 's1'), 'a');
    assert.deepEqual(await a.beat([s1]), []);
    assert.ok((await c.pttl(lease)) > 30_000, 'renewing sets the full TTL again');
    await c.pexpire(lease, 20);
    await waitUntil(async () => (await a.owner('search', 's1')) === null);
    assert.equal(await b.acquire('search', 's1'), null, 'an expired lease can be taken by another instance');
    assert.deepEqual(await a.beat([s1]), [s1], 'and the old holder’s beat does not take it back');
    assert.equal(await b.release('search', 's1'), true);
    assert.equal(await a.owner('search', 's1'), null);
  });

  it('lists live instances’ runs; a silent instance’s runs disappear after one TTL; leave is immediate', async () => {
    const { keys, c, a, b } = await liveInstances();
    assert.equal(await a.claimInstance(0), false, 'a second live instance with the same id is refused');
    await a.acquire('chat', 'c1');
    await b.acquire('chat', 'c2');
    await b.acquire('search', 's2');
    const listed = await a.clusterRuns();
    assert.deepEqual(listed.map((r) => `${r.kind}:${r.key}`).sort(), ['chat:c1', 'chat:c2', 'search:s2']);
    // b goes silent (as if killed): its liveness, run set and leases all carry its TTL; the test cuts
    // that TTL short (as the lease test above does) rather than racing a short one, and waits for each
    // expiry (they were set one after the other).
    const bKeys = [keys.alive('b'), keys.runs('b'), keys.lease('chat', 'c2'), keys.lease('search', 's2')];
    for (const k of bKeys) {
      const ttl = await c.pttl(k);
      assert.ok(ttl > 0 && ttl <= 60_000, `${k} expires with b (pttl ${ttl})`);
      await c.pexpire(k, 20);
    }
    await waitUntil(async () => (await a.owner('chat', 'c2')) === null && (await a.owner('search', 's2')) === null);
    await waitUntil(async () => (await a.clusterRuns()).length === 1);
    assert.deepEqual(await a.clusterRuns(), [{ kind: 'chat', key: 'c1' }]);
    assert.deepEqual(await a.beat([{ kind: 'chat', key: 'c1' }]), []);
    await a.leave([{ kind: 'chat', key: 'c1' }]);
    assert.equal(await b.owner('chat', 'c1'), null, 'released at once');
    assert.deepEqual(await b.clusterRuns(), []);
  });

  it('takes a lease back at the next beat when Redis lost it, and reports one another instance took', async () => {
    const keys = clusterKeys(prefix());
    const c = await client();
    const a = new Leases(c, keys, 'a', 5000);
    const b = new Leases(c, keys, 'b', 5000);
    await a.acquire('chat', 'x');
    await a.acquire('chat', 'y');
    await c.del(keys.lease('chat', 'x'), keys.lease('chat', 'y'));
    await b.acquire('chat', 'y');
    const lost = await a.beat([{ kind: 'chat', key: 'x' }, { kind: 'chat', key: 'y' }]);
    assert.deepEqual(lost, [{ kind: 'chat', key: 'y' }]);
    assert.equal(await a.owner('chat', 'x'), 'a');
    assert.equal(await a.owner('chat', 'y'), 'b');
  });

  it('lists each run with its user where its instance wrote one, with the lease and gone with it; a beat that takes a lost lease back writes it again', async () => {
    const { keys, c, a, b } = await liveInstances();
    const listed = async () => (await a.clusterRuns()).map((r) => `${r.kind}:${r.key}@${r.user ?? '-'}`).sort();
    assert.equal(await a.acquire('chat', 'c1', 'u1'), null);
    assert.equal(await a.acquire('chat', 'c2'), null);
    assert.equal(await b.acquire('search', 's1', 'u2'), null);
    assert.notEqual(await b.acquire('chat', 'c1', 'u3'), null, 'a lost race writes no user');
    assert.deepEqual(await listed(), ['chat:c1@u1', 'chat:c2@-', 'search:s1@u2']);
    assert.deepEqual(await b.holder('chat', 'c1'), { instanceId: 'a', user: 'u1' }, "the holder's user, for attach and stop");
    assert.deepEqual(await b.holder('chat', 'c2'), { instanceId: 'a' });
    assert.equal(await b.holder('chat', 'nobody'), null);
    const ttl = await c.pttl(keys.runUsers('a'));
    assert.ok(ttl > 0 && ttl <= 60_000, `the users expire with the instance (pttl ${ttl})`);

    assert.equal(await a.release('chat', 'c1'), true);
    assert.equal(await c.hget(keys.runUsers('a'), 'chat:c1'), null, 'released with the lease');
    // An instance of an earlier version adds its run to its set and writes no user.
    await c.sadd(keys.runs('b'), 'chat:old');
    assert.deepEqual(await listed(), ['chat:c2@-', 'chat:old@-', 'search:s1@u2']);

    // Redis lost b's lease and users (a restart without persistence): b's next beat writes both again.
    await c.del(keys.lease('search', 's1'), keys.runUsers('b'));
    assert.deepEqual(await b.beat([{ kind: 'search', key: 's1', user: 'u2' }]), []);
    assert.deepEqual(await listed(), ['chat:c2@-', 'chat:old@-', 'search:s1@u2']);
    // A lease another instance took meanwhile: the loser's beat drops its user; the taker's is listed.
    assert.equal(await a.acquire('chat', 'c3', 'u1'), null);
    await c.del(keys.lease('chat', 'c3'));
    assert.equal(await b.acquire('chat', 'c3', 'u3'), null);
    assert.deepEqual(await a.beat([{ kind: 'chat', key: 'c3', user: 'u1' }]), [{ kind: 'chat', key: 'c3', user: 'u1' }]);
    assert.equal(await c.hget(keys.runUsers('a'), 'chat:c3'), null);
    assert.deepEqual(await listed(), ['chat:c2@-', 'chat:c3@u3', 'chat:old@-', 'search:s1@u2']);

    await b.leave([{ kind: 'search', key: 's1' }, { kind: 'chat', key: 'c3' }]);
    assert.equal(await c.exists(keys.runUsers('b')), 0, 'leave drops the users at once');
    assert.deepEqual(await listed(), ['chat:c2@-']);
  });

  it('follows a run on another instance: replay, then live frames in order, then the end; waits, stops, 404s', async () => {
    const p = prefix();
    const ownerRuns = fakeRuns();
    const owner = await Cluster.join({ url: r.url, prefix: p, instanceId: 'owner', leaseTtlMs: 3000, local: ownerRuns.port, log: silent });
    const other = await Cluster.join({ url: r.url, prefix: p, instanceId: 'other', leaseTtlMs: 3000, local: fakeRuns().port, log: silent });
    try {
      ownerRuns.start('c1');
      assert.equal(await owner.claim('chat', 'c1'), null);
      assert.equal(await other.claim('chat', 'c1'), 'owner', 'held cluster-wide');
      assert.equal(await other.owner('chat', 'c1'), 'owner');
      ownerRuns.emit('c1', 'A');
      ownerRuns.emit('c1', 'B');
      const sink = memorySink();
      assert.equal(await other.follow('chat', 'c1', 'owner', () => sink), true);
      for (let i = 0; i < 200; i++) ownerRuns.emit('c1', `${i},`);
      const waited = other.wait('chat', 'c1', 'owner');
      assert.equal(await other.stop('chat', 'c1', 'owner', 'stopped by a test'), true);
      assert.equal(ownerRuns.runs.get('chat:c1')!.stopped, 'stopped by a test');
      ownerRuns.end('c1', { ok: true, value: { text: 'done' } });
      owner.release('chat', 'c1');
      assert.deepEqual(await waited, { ok: true, value: { text: 'done' } });
      await waitUntil(() => sink.ended, 'the follower to see the end');
      assert.equal(sink.text, 'AB' + Array.from({ length: 200 }, (_, i) => `${i},`).join(''), 'replay then live: nothing lost, nothing doubled');
      assert.equal(await other.follow('chat', 'c1', 'owner', () => memorySink()), false, 'an ended run is gone');
      assert.equal(await other.wait('chat', 'c1', 'owner'), null);
      assert.equal(await other.stop('chat', 'c1', 'owner', 'x'), false);
    } finally {
      await owner.close();
      await other.close();
    }
  });

  it('stops feeding a follower that left, and answers an unknown owner with OwnerUnreachableError', async () => {
    const p = prefix();
    const ownerRuns = fakeRuns();
    const owner = await Cluster.join({ url: r.url, prefix: p, instanceId: 'o', leaseTtlMs: 3000, local: ownerRuns.port, log: silent });
    const other = await Cluster.join({ url: r.url, prefix: p, instanceId: 'f', leaseTtlMs: 3000, local: fakeRuns().port, log: silent, ownerReplyTimeoutMs: 300 });
    try {
      ownerRuns.start('c');
      const sink = memorySink();
      assert.equal(await other.follow('chat', 'c', 'o', () => sink), true);
      assert.equal(ownerRuns.runs.get('chat:c')!.subs.size, 1);
      sink.close();
      await waitUntil(() => ownerRuns.runs.get('chat:c')!.subs.size === 0, 'the owner to forget the remote subscriber');
      assert.equal(ownerRuns.runs.get('chat:c')!.subs.size, 0, 'the owner forgot the remote subscriber');
      await assert.rejects(other.follow('chat', 'c', 'nobody', () => memorySink()), OwnerUnreachableError);
    } finally {
      await owner.close();
      await other.close();
    }
  });

  it('a follower and a waiter hear the end of a run whose owner lost Redis for a moment (what it could not send goes at the next beat)', async () => {
    const p = prefix();
    const target = new URL(r.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const ownerRuns = fakeRuns();
    let waits = 0;
    const port: LocalRunPort = { ...ownerRuns.port, outcome: (kind, key) => (waits++, ownerRuns.port.outcome(kind, key)) };
    const logged: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
    // A TTL long enough that the owner stays alive to its peer through the blip: the follower must hear
    // the owner itself, not a peer's verdict that it died.
    const owner = await Cluster.join({ url: `redis://127.0.0.1:${proxy.port}`, prefix: p, instanceId: 'blip', leaseTtlMs: 10_000, local: port, log });
    const other = await Cluster.join({ url: r.url, prefix: p, instanceId: 'near', leaseTtlMs: 10_000, local: fakeRuns().port, log: silent });
    try {
      ownerRuns.start('c');
      ownerRuns.start('w');
      assert.equal(await owner.claim('chat', 'c'), null);
      assert.equal(await owner.claim('chat', 'w'), null);
      ownerRuns.emit('c', 'A');
      const sink = memorySink();
      assert.equal(await other.follow('chat', 'c', 'blip', () => sink), true);
      const waited = other.wait('chat', 'w', 'blip');
      await waitUntil(() => waits === 1, 'the owner to hear the waiter');

      proxy.drop();
      await waitUntil(() => owner.ping().then(() => false, () => true), 'the owner to lose Redis');
      ownerRuns.emit('c', 'B');
      ownerRuns.end('w', { ok: true, value: { text: 'done' } });
      await waitUntil(() => ownerRuns.runs.get('chat:c')!.subs.size === 0, 'the frame to fail');
      await waitUntil(() => logged.some((l) => l.includes('cluster reply')), 'the result to fail');
      proxy.restore();

      let result: RunResult | Error | null | undefined;
      waited.then((v) => (result = v), (err: Error) => (result = err));
      await waitUntil(() => result !== undefined, 'the waiter to hear');
      assert.deepEqual(result, { ok: true, value: { text: 'done' } }, 'the waiter gets the result once Redis is back');
      await waitUntil(() => sink.ended, "the follower's stream to end");
      assert.equal(sink.text, 'A', 'ended as a dropped connection (no error event): the client re-attaches');
      const again = memorySink();
      assert.equal(await other.follow('chat', 'c', 'blip', () => again), true);
      assert.equal(again.text, 'AB', 'the re-attach replays what the first stream missed');
    } finally {
      await proxy.close();
      await owner.close();
      await other.close();
    }
  });

  it('a request nobody hears fails at once: the owner is alive but not listening', async () => {
    const p = prefix();
    const c = await client();
    // Alive to its peers (its liveness key renewed) while its subscription is down.
    await c.set(clusterKeys(p).alive('deaf'), 'deaf', 'PX', 60_000);
    const other = await Cluster.join({ url: r.url, prefix: p, instanceId: 'alone', leaseTtlMs: 3000, local: fakeRuns().port, log: silent, ownerReplyTimeoutMs: 600_000 });
    try {
      // A waiter has no deadline: without this it would wait for as long as both instances live.
      let waited: unknown;
      other.wait('chat', 'c', 'deaf').then((v) => (waited = v), (err: unknown) => (waited = err));
      await waitUntil(() => waited !== undefined, 'the waiter to be answered');
      assert.ok(waited instanceof OwnerUnreachableError, String(waited));
      await assert.rejects(other.follow('chat', 'c', 'deaf', () => memorySink()), OwnerUnreachableError);
    } finally {
      await other.close();
    }
  });

  it('an owner cut from Redis fences its runs while their leases still hold; a lease taken by another is fenced at once', async () => {
    const p = prefix();
    const keys = clusterKeys(p);
    const c = await client();
    const target = new URL(r.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const runs = fakeRuns();
    const owner = await Cluster.join({ url: `redis://127.0.0.1:${proxy.port}`, prefix: p, instanceId: 'cut', leaseTtlMs: 1500, local: runs.port, log: silent });
    try {
      runs.start('taken');
      runs.start('held');
      assert.equal(await owner.claim('chat', 'taken'), null);
      assert.equal(await owner.claim('chat', 'held'), null);
      // Another instance takes a lease (as after an expiry the owner missed): the next beat fences it.
      await c.set(keys.lease('chat', 'taken'), 'other');
      await waitUntil(async () => runs.runs.get('chat:taken')!.fenced !== undefined);
      assert.equal(runs.runs.get('chat:taken')!.fenced, FENCED_MESSAGE);
      assert.equal(runs.runs.get('chat:held')!.fenced, undefined, 'a lease still held is not fenced');
      proxy.blackhole();
      await waitUntil(async () => runs.runs.get('chat:held')!.fenced !== undefined);
      assert.equal(await c.get(keys.lease('chat', 'held')), 'cut', 'fenced while its lease still held: nobody else could have taken the key yet');
    } finally {
      await proxy.close();
      await owner.close();
    }
  });

  it('refuses to start when Redis cannot be reached, naming REDIS_URL', async () => {
    const port = await freePort();
    await assert.rejects(connectRedis(`redis://127.0.0.1:${port}`, 'x', { connectTimeoutMs: 1000, commandTimeoutMs: 500 }), (err: Error) => {
      assert.ok(err instanceof RedisUnavailableError);
      assert.match(err.message, /REDIS_URL/);
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
      return true;
    });
  });

  it('fails commands at once while Redis is down and works again when it is back', { skip: redisServerInstalled() ? false : 'no redis-server installed' }, async () => {
    const server = await startRedisServer();
    const c = await connectRedis(server.url, 'fault', { connectTimeoutMs: 2000, commandTimeoutMs: 1000 });
    try {
      const leases = new Leases(c, clusterKeys('f:'), 'a', 5000);
      assert.equal(await leases.acquire('chat', 'k'), null);
      await server.stop();
      // No offline queue: the command fails (how soon is for the bench, not a test).
      await assert.rejects(leases.acquire('chat', 'k2'), RedisUnavailableError);
      await server.start();
      const acquired = () => leases.acquire('chat', 'k3').then((o) => o === null, () => false);
      await waitUntil(acquired, 'the client to reconnect by itself');
    } finally {
      c.disconnect();
      await server.stop();
    }
  });
});
