// Run leases and instance liveness in Redis. A run key (a chat, a search) is owned by the instance
// whose id is the value of its lease: taken with SET NX PX (two simultaneous takers: Redis answers
// one of them), renewed by the owner's beat with compare-and-pexpire, released with compare-and-del, so an
// instance can never extend or drop a lease it does not hold. An instance that dies stops renewing:
// its leases, its liveness key and its run set expire together, after at most one TTL.
import type { Redis } from 'ioredis';
import { parseRunMember, runMember, type ClusterKeys, type RunKind } from './keys.ts';
import { asRedisError } from './redis.ts';

// KEYS: lease, run set. ARGV: me, ttl, member. → {1} won, {0, owner} held by another.
const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return {1}
end
return {0, redis.call('GET', KEYS[1])}`;

// KEYS: lease, run set. ARGV: me, member. Deletes only a lease this instance holds.
const RELEASE = `
redis.call('SREM', KEYS[2], ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// One beat of an instance. KEYS: alive, instances, run set, lease… ARGV: me, ttl, member…
// Each lease is renewed when ours (compare-and-pexpire) and taken again when missing (Redis lost
// its data, e.g. restarted without persistence); a lease another instance took meanwhile is lost.
// → the 1-based indexes of lost leases.
const BEAT = `
local me, ttl = ARGV[1], ARGV[2]
redis.call('SET', KEYS[1], me, 'PX', ttl)
redis.call('SADD', KEYS[2], me)
local lost = {}
for i = 4, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == me then
    redis.call('PEXPIRE', KEYS[i], ttl)
    redis.call('SADD', KEYS[3], ARGV[i - 1])
  elseif not v then
    redis.call('SET', KEYS[i], me, 'PX', ttl)
    redis.call('SADD', KEYS[3], ARGV[i - 1])
  else
    redis.call('SREM', KEYS[3], ARGV[i - 1])
    lost[#lost + 1] = i - 3
  end
end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ttl) end
return lost`;

/** Leases per beat script call: one call must stay short for Redis. */
const BEAT_CHUNK = 500;

export interface LeaseRef {
  kind: RunKind;
  key: string;
}

export class Leases {
  private readonly redis: Redis;
  private readonly keys: ClusterKeys;
  readonly instanceId: string;
  readonly ttlMs: number;

  constructor(redis: Redis, keys: ClusterKeys, instanceId: string, ttlMs: number) {
    this.redis = redis;
    this.keys = keys;
    this.instanceId = instanceId;
    this.ttlMs = ttlMs;
  }

  /** Takes the lease: null when won, else the id of the instance that holds it. */
  async acquire(kind: RunKind, key: string): Promise<string | null> {
    try {
      const r = (await this.redis.eval(ACQUIRE, 2, this.keys.lease(kind, key), this.keys.runs(this.instanceId), this.instanceId, this.ttlMs, runMember(kind, key))) as [number, string?];
      // The lease can expire between SET and GET: report it as held by nobody known.
      return r[0] === 1 ? null : (r[1] ?? '');
    } catch (err) {
      throw asRedisError(err);
    }
  }

  async release(kind: RunKind, key: string): Promise<boolean> {
    try {
      return (await this.redis.eval(RELEASE, 2, this.keys.lease(kind, key), this.keys.runs(this.instanceId), this.instanceId, runMember(kind, key))) === 1;
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /** The id of the instance holding the run key, or null. */
  async owner(kind: RunKind, key: string): Promise<string | null> {
    try {
      return await this.redis.get(this.keys.lease(kind, key));
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /**
   * Claims the instance id at start: refused while another live instance beats under it (a
   * restarted instance waits out its dead predecessor's liveness key, at most one TTL).
   */
  async claimInstance(waitMs = this.ttlMs + 1000): Promise<boolean> {
    const until = Date.now() + waitMs;
    for (;;) {
      try {
        const ok = await this.redis.set(this.keys.alive(this.instanceId), this.instanceId, 'PX', this.ttlMs, 'NX');
        if (ok) {
          await this.redis.sadd(this.keys.instances, this.instanceId);
          return true;
        }
      } catch (err) {
        throw asRedisError(err);
      }
      if (Date.now() >= until) return false;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** One beat: liveness, and every lease in `owned` renewed. Returns the leases lost to another instance. */
  async beat(owned: readonly LeaseRef[]): Promise<LeaseRef[]> {
    const lost: LeaseRef[] = [];
    try {
      for (let i = 0; i === 0 || i < owned.length; i += BEAT_CHUNK) {
        const chunk = owned.slice(i, i + BEAT_CHUNK);
        const keys = [this.keys.alive(this.instanceId), this.keys.instances, this.keys.runs(this.instanceId), ...chunk.map((l) => this.keys.lease(l.kind, l.key))];
        const args = [this.instanceId, String(this.ttlMs), ...chunk.map((l) => runMember(l.kind, l.key))];
        const idx = (await this.redis.eval(BEAT, keys.length, ...keys, ...args)) as number[];
        for (const n of idx) lost.push(chunk[n - 1]!);
      }
    } catch (err) {
      throw asRedisError(err);
    }
    return lost;
  }

  /** Leaves at once (SIGTERM): liveness key, run set and the given leases go now, not after a TTL. */
  async leave(owned: readonly LeaseRef[]): Promise<void> {
    try {
      const p = this.redis.pipeline();
      for (const l of owned) p.eval(RELEASE, 2, this.keys.lease(l.kind, l.key), this.keys.runs(this.instanceId), this.instanceId, runMember(l.kind, l.key));
      p.del(this.keys.alive(this.instanceId), this.keys.runs(this.instanceId));
      p.srem(this.keys.instances, this.instanceId);
      await p.exec();
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /** Whether an instance is alive (its liveness key exists). */
  async isAlive(instanceId: string): Promise<boolean> {
    try {
      return (await this.redis.exists(this.keys.alive(instanceId))) === 1;
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /** Every live instance's runs. Dead instances are forgotten. */
  async clusterRuns(): Promise<LeaseRef[]> {
    try {
      const ids = await this.redis.smembers(this.keys.instances);
      const p = this.redis.pipeline();
      for (const id of ids) p.exists(this.keys.alive(id)).smembers(this.keys.runs(id));
      const replies = ids.length ? ((await p.exec()) ?? []) : [];
      const runs: LeaseRef[] = [];
      const dead: string[] = [];
      ids.forEach((id, i) => {
        const [aliveErr, alive] = replies[2 * i]!;
        const [runsErr, members] = replies[2 * i + 1]!;
        if (aliveErr || runsErr) throw aliveErr ?? runsErr;
        if (alive !== 1) return void dead.push(id);
        for (const m of members as string[]) {
          const run = parseRunMember(m);
          if (run) runs.push(run);
        }
      });
      if (dead.length) await this.redis.srem(this.keys.instances, ...dead);
      return runs;
    } catch (err) {
      throw asRedisError(err);
    }
  }
}
