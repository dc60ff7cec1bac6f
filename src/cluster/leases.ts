// Run leases and instance liveness in Redis. A run key (a chat, a search) is owned by the instance
// whose id is the value of its lease: taken with SET NX PX (two simultaneous takers: Redis answers
// one of them), renewed by the owner's beat with compare-and-pexpire, released with compare-and-del, so an
// instance can never extend or drop a lease it does not hold. An instance that dies stops renewing:
// its leases, its liveness key and its run set expire together, after at most one TTL.
//
// Beside its run set, an instance keeps the user of each run that has one (a hash, written with the
// lease in the same script): another instance lists a user's runs from it without waiting for the
// run's chat or search row, which is written beside the run's first round. An instance of an earlier
// version writes no user: its runs are still listed, their user then read from that row.
import type { Redis } from 'ioredis';
import { parseRunMember, runMember, type ClusterKeys, type RunKind } from './keys.ts';
import { asRedisError } from './redis.ts';
import { ROOT_CONTEXT, SpanKind, type Span } from '@opentelemetry/api';
import { markError, startChildSpan, startSpan } from '../telemetry/tracing.ts';

/** What every lease span says it is: a script run in Redis. */
const REDIS_EVAL = { 'db.system.name': 'redis', 'db.operation.name': 'EVAL' } as const;

// KEYS: lease, run set, run users. ARGV: me, ttl, member, user ('' for none). → {1} won, {0, owner} held by another.
const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  if ARGV[4] ~= '' then
    redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
    redis.call('PEXPIRE', KEYS[3], ARGV[2])
  end
  return {1}
end
return {0, redis.call('GET', KEYS[1])}`;

// KEYS: lease, run set, run users. ARGV: me, member. Deletes only a lease this instance holds.
const RELEASE = `
redis.call('SREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// One beat of an instance. KEYS: alive, instances, run set, run users, lease… ARGV: me, ttl, then
// member and user ('' for none) per lease. Each lease is renewed when ours (compare-and-pexpire) and
// taken again when missing (Redis lost its data, e.g. restarted without persistence; its user is
// written again then); a lease another instance took meanwhile is lost. → the 1-based indexes of lost leases.
const BEAT = `
local me, ttl = ARGV[1], ARGV[2]
redis.call('SET', KEYS[1], me, 'PX', ttl)
redis.call('SADD', KEYS[2], me)
local lost = {}
for i = 5, #KEYS do
  local member, user = ARGV[2 * (i - 4) + 1], ARGV[2 * (i - 4) + 2]
  local v = redis.call('GET', KEYS[i])
  if v == me then
    redis.call('PEXPIRE', KEYS[i], ttl)
    redis.call('SADD', KEYS[3], member)
  elseif not v then
    redis.call('SET', KEYS[i], me, 'PX', ttl)
    redis.call('SADD', KEYS[3], member)
    if user ~= '' then redis.call('HSET', KEYS[4], member, user) end
  else
    redis.call('SREM', KEYS[3], member)
    redis.call('HDEL', KEYS[4], member)
    lost[#lost + 1] = i - 4
  end
end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ttl) end
if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('PEXPIRE', KEYS[4], ttl) end
return lost`;

/** Leases per beat script call: one call must stay short for Redis. */
const BEAT_CHUNK = 500;

export interface LeaseRef {
  kind: RunKind;
  key: string;
  /** The user whose run it is, when it has one. */
  user?: string;
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

  /** Takes the lease (for `user`'s run, when it has one): null when won, else the id of the instance that holds it. */
  async acquire(kind: RunKind, key: string, user?: string): Promise<string | null> {
    const span = leaseSpan('acquire', kind, key);
    return spanned(span, async () => {
      const r = (await this.redis.eval(ACQUIRE, 3, this.keys.lease(kind, key), this.keys.runs(this.instanceId), this.keys.runUsers(this.instanceId), this.instanceId, this.ttlMs, runMember(kind, key), user ?? '')) as [number, string?];
      // The lease can expire between SET and GET: report it as held by nobody known.
      span?.setAttribute('lease.won', r[0] === 1);
      return r[0] === 1 ? null : (r[1] ?? '');
    });
  }

  async release(kind: RunKind, key: string): Promise<boolean> {
    const span = leaseSpan('release', kind, key);
    return spanned(span, async () => {
      const released = (await this.redis.eval(RELEASE, 3, ...this.releaseArgs(kind, key))) === 1;
      span?.setAttribute('lease.released', released);
      return released;
    });
  }

  private releaseArgs(kind: RunKind, key: string): [string, string, string, string, string] {
    return [this.keys.lease(kind, key), this.keys.runs(this.instanceId), this.keys.runUsers(this.instanceId), this.instanceId, runMember(kind, key)];
  }

  /** The id of the instance holding the run key, or null. */
  async owner(kind: RunKind, key: string): Promise<string | null> {
    try {
      return await this.redis.get(this.keys.lease(kind, key));
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /** The instance holding the run key and, where that instance wrote one, the run's user; null when none holds it. */
  async holder(kind: RunKind, key: string): Promise<{ instanceId: string; user?: string } | null> {
    const instanceId = await this.owner(kind, key);
    if (!instanceId) return null;
    try {
      const user = await this.redis.hget(this.keys.runUsers(instanceId), runMember(kind, key));
      return user === null ? { instanceId } : { instanceId, user };
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /**
   * Claims the instance id at start: refused while another live instance beats under it (a
   * restarted instance waits out its dead predecessor's liveness key, at most one TTL).
   */
  async claimInstance(waitMs = this.ttlMs + 1000): Promise<boolean> {
    return this.untilFree(waitMs, async () => {
      const ok = await this.redis.set(this.keys.alive(this.instanceId), this.instanceId, 'PX', this.ttlMs, 'NX');
      if (!ok) return false;
      // A predecessor killed under this id may have left its run set and their users: renewed at
      // each lease claim, they can outlive its liveness key, and this instance's beats would then
      // keep its dead runs listed for good. It starts with none.
      await this.redis.del(this.keys.runs(this.instanceId), this.keys.runUsers(this.instanceId));
      await this.redis.sadd(this.keys.instances, this.instanceId);
      return true;
    });
  }

  /**
   * Waits, as claimInstance does, until no live instance beats under this id, without claiming it: a
   * start checks this before it touches anything of its id's (its heartbeat row, its lost runs).
   */
  async instanceIdFree(waitMs = this.ttlMs + 1000): Promise<boolean> {
    return this.untilFree(waitMs, async () => (await this.redis.exists(this.keys.alive(this.instanceId))) === 0);
  }

  private async untilFree(waitMs: number, free: () => Promise<boolean>): Promise<boolean> {
    const until = Date.now() + waitMs;
    for (;;) {
      try {
        if (await free()) return true;
      } catch (err) {
        throw asRedisError(err);
      }
      if (Date.now() >= until) return false;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** One beat: liveness, and every lease in `owned` renewed. Returns the leases lost to another instance. */
  async beat(owned: readonly LeaseRef[]): Promise<LeaseRef[]> {
    // A beat serves every run here, none in particular: a trace of its own (tracing on).
    const span = startSpan('lease renew', { kind: SpanKind.CLIENT, parent: ROOT_CONTEXT, attributes: { ...REDIS_EVAL, 'lease.operation': 'renew', 'lease.count': owned.length } });
    return spanned(span, async () => {
      const lost: LeaseRef[] = [];
      for (let i = 0; i === 0 || i < owned.length; i += BEAT_CHUNK) {
        const chunk = owned.slice(i, i + BEAT_CHUNK);
        const keys = [this.keys.alive(this.instanceId), this.keys.instances, this.keys.runs(this.instanceId), this.keys.runUsers(this.instanceId), ...chunk.map((l) => this.keys.lease(l.kind, l.key))];
        const args = [this.instanceId, String(this.ttlMs), ...chunk.flatMap((l) => [runMember(l.kind, l.key), l.user ?? ''])];
        const idx = (await this.redis.eval(BEAT, keys.length, ...keys, ...args)) as number[];
        for (const n of idx) lost.push(chunk[n - 1]!);
      }
      span?.setAttribute('lease.lost', lost.length);
      return lost;
    });
  }

  /** Leaves at once (SIGTERM): liveness key, run set and the given leases go now, not after a TTL. */
  async leave(owned: readonly LeaseRef[]): Promise<void> {
    try {
      const p = this.redis.pipeline();
      for (const l of owned) p.eval(RELEASE, 3, ...this.releaseArgs(l.kind, l.key));
      p.del(this.keys.alive(this.instanceId), this.keys.runs(this.instanceId), this.keys.runUsers(this.instanceId));
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

  /** Every live instance's runs, each with its user where its instance wrote one. Dead instances are forgotten. */
  async clusterRuns(): Promise<LeaseRef[]> {
    try {
      const ids = await this.redis.smembers(this.keys.instances);
      const p = this.redis.pipeline();
      for (const id of ids) p.exists(this.keys.alive(id)).smembers(this.keys.runs(id)).hgetall(this.keys.runUsers(id));
      const replies = ids.length ? ((await p.exec()) ?? []) : [];
      const runs: LeaseRef[] = [];
      const dead: string[] = [];
      ids.forEach((id, i) => {
        const [aliveErr, alive] = replies[3 * i]!;
        const [runsErr, members] = replies[3 * i + 1]!;
        const [usersErr, users] = replies[3 * i + 2]!;
        if (aliveErr || runsErr || usersErr) throw aliveErr ?? runsErr ?? usersErr;
        if (alive !== 1) return void dead.push(id);
        const byMember = users as Record<string, string>;
        for (const m of members as string[]) {
          const run = parseRunMember(m);
          if (!run) continue;
          const user = byMember[m];
          runs.push(user === undefined ? run : { ...run, user });
        }
      });
      if (dead.length) await this.redis.srem(this.keys.instances, ...dead);
      return runs;
    } catch (err) {
      throw asRedisError(err);
    }
  }
}

/** `op`, a lease's script, under `span` (its failure marked; ended either way), Redis's errors as the cluster's. */
async function spanned<T>(span: Span | null, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if (span) markError(span, err);
    throw asRedisError(err);
  } finally {
    span?.end();
  }
}

/** A lease operation's span, under the request or run that asked for it (tracing on). */
function leaseSpan(operation: string, kind: RunKind, key: string): Span | null {
  return startChildSpan(`lease ${operation}`, {
    kind: SpanKind.CLIENT,
    attributes: { ...REDIS_EVAL, 'lease.operation': operation, 'lease.run': `${kind}:${key}` },
  });
}
