// Cluster mode, composed of one part per role: Membership (liveness and the beat), HeldLeases (the
// leases this instance holds, and fencing), Follower (runs owned elsewhere) and RunServer (this
// instance's runs served to others). The routes see only this class (through src/service/runs.ts).
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';
import { Bus } from './bus.ts';
import { Follower } from './follower.ts';
import { FENCED_MESSAGE, HeldLeases } from './held-leases.ts';
import { clusterKeys, type RunKind } from './keys.ts';
import { Leases, type LeaseRef } from './leases.ts';
import { Membership } from './membership.ts';
import type { LocalRunPort } from './port.ts';
import { connectRedis, RedisUnavailableError, type RedisTimeouts } from './redis.ts';
import { RunServer } from './run-server.ts';
import { clusterTiming } from './timing.ts';
import { UserRuns } from './user-runs.ts';

export { OwnerUnreachableError, BadOwnerReplyError } from './follower.ts';
export { FENCED_MESSAGE } from './held-leases.ts';

/** Another live instance of the cluster beats under this INSTANCE_ID. */
export class InstanceIdInUseError extends ServiceError {
  constructor(instanceId: string) {
    super(ErrorCodes.INSTANCE_ID_IN_USE, `INSTANCE_ID ${instanceId} is in use by another live instance: give each instance its own INSTANCE_ID`);
    this.name = 'InstanceIdInUseError';
  }
}

export interface ClusterOptions {
  url: string;
  prefix: string;
  instanceId: string;
  /** Lease and liveness expiry; an instance that dies is forgotten after at most this long. */
  leaseTtlMs: number;
  local: LocalRunPort;
  log: Logger;
  /** The command timeout is capped below the fencing margin (timing.ts). */
  timeouts?: RedisTimeouts;
  /** How long a follower waits for the owner's first answer. */
  ownerReplyTimeoutMs?: number;
}

export class Cluster {
  readonly instanceId: string;
  readonly leaseTtlMs: number;
  private readonly redis: Redis;
  private readonly subscriber: Redis;
  private readonly leases: Leases;
  private readonly held: HeldLeases;
  private readonly membership: Membership;
  private readonly follower: Follower;
  private readonly server: RunServer;
  private readonly bus: Bus;
  private readonly log: Logger;
  private readonly prefix: string;
  /** Each user's runs going across the cluster (their limit is cluster-wide). */
  readonly userRuns: UserRuns;
  private closed = false;

  private constructor(opts: ClusterOptions, redis: Redis, subscriber: Redis, beatMs: number, held: (leases: Leases) => HeldLeases) {
    this.instanceId = opts.instanceId;
    this.leaseTtlMs = opts.leaseTtlMs;
    this.redis = redis;
    this.subscriber = subscriber;
    this.log = opts.log;
    this.prefix = opts.prefix;
    this.userRuns = new UserRuns(redis, opts.prefix, opts.instanceId, opts.leaseTtlMs, beatMs);
    const keys = clusterKeys(opts.prefix);
    this.leases = new Leases(redis, keys, opts.instanceId, opts.leaseTtlMs);
    this.held = held(this.leases);
    this.bus = new Bus(redis, subscriber, keys, opts.instanceId);
    this.follower = new Follower(this.bus, opts.instanceId, opts.ownerReplyTimeoutMs ?? 5000);
    this.server = new RunServer(this.bus, opts.local, opts.log);
    this.membership = new Membership({
      leases: this.leases,
      held: this.held,
      beatMs,
      peers: () => {
        const peers = new Set([...this.follower.owners(), ...this.server.subscribers()]);
        peers.delete(this.instanceId);
        return peers;
      },
      lost: (peer) => {
        this.follower.ownerLost(peer);
        this.server.peerLost(peer);
      },
      reached: () => this.server.resend(),
      log: opts.log,
    });
  }

  /**
   * Resolves once no live instance beats under `instanceId` (a dead predecessor's liveness key is
   * waited out); throws InstanceIdInUseError when one does, RedisUnavailableError naming REDIS_URL.
   * A start asks before anything else of its id: a duplicate refused only at join would already have
   * recovered the live instance's running answers as lost and removed its heartbeat row on its way out.
   */
  static async awaitInstanceId(opts: Pick<ClusterOptions, 'url' | 'prefix' | 'instanceId' | 'leaseTtlMs' | 'timeouts'>): Promise<void> {
    const redis = await connectRedis(opts.url, `${opts.instanceId}:start`, clusterTiming(opts.leaseTtlMs, opts.timeouts).redis);
    try {
      const leases = new Leases(redis, clusterKeys(opts.prefix), opts.instanceId, opts.leaseTtlMs);
      if (!(await leases.instanceIdFree())) throw new InstanceIdInUseError(opts.instanceId);
    } finally {
      redis.disconnect();
    }
  }

  /** Connects, claims the instance id and starts beating. Throws RedisUnavailableError naming REDIS_URL. */
  static async join(opts: ClusterOptions): Promise<Cluster> {
    const timing = clusterTiming(opts.leaseTtlMs, opts.timeouts);
    const redis = await connectRedis(opts.url, `${opts.instanceId}:cmd`, timing.redis);
    let subscriber: Redis | undefined;
    try {
      subscriber = await connectRedis(opts.url, `${opts.instanceId}:sub`, timing.redis);
      const fence = (kind: RunKind, key: string) => {
        if (!opts.local.fence(kind, key, FENCED_MESSAGE)) opts.log.warn({ kind, key }, 'fenced lease has no run here');
      };
      const cluster = new Cluster(opts, redis, subscriber, timing.beatMs, (leases) => new HeldLeases(leases, timing, fence, opts.log));
      if (!(await cluster.membership.join())) {
        throw new InstanceIdInUseError(opts.instanceId);
      }
      await cluster.userRuns.reset();
      await cluster.bus.listen(
        (m, payload) => {
          if (!cluster.server.serve(m)) cluster.follower.onReply(m, payload);
        },
        (err) => opts.log.warn({ err }, 'bad cluster message'),
      );
      // Messages published while the subscription is down are lost: every follower ends now.
      cluster.bus.onConnection((up) => up || cluster.follower.endAll(new RedisUnavailableError('the connection to Redis was lost')));
      return cluster;
    } catch (err) {
      redis.disconnect();
      subscriber?.disconnect();
      throw err;
    }
  }

  /** Takes the run key cluster-wide (for `user`'s run, when it has one): null when this instance now owns it, else the owner's id. */
  claim(kind: RunKind, key: string, user?: string): Promise<string | null> {
    return this.held.claim(kind, key, user);
  }

  /** Gives the run key back (the run ended or never started). A failure leaves it to expire. */
  release(kind: RunKind, key: string): void {
    this.held.release(kind, key);
  }

  owner(kind: RunKind, key: string): Promise<string | null> {
    return this.leases.owner(kind, key);
  }

  /** The run key's instance and, where known, its user (attach and stop decide by it who may reach the run). */
  holder(kind: RunKind, key: string): Promise<{ instanceId: string; user?: string } | null> {
    return this.leases.holder(kind, key);
  }

  /** Every live instance's runs, with their users where known (`GET /v1/active-runs?scope=cluster`). */
  list(): Promise<LeaseRef[]> {
    return this.leases.clusterRuns();
  }

  /** Readiness: Redis answers a command now. */
  async ping(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (err) {
      throw new RedisUnavailableError((err as Error).message);
    }
  }

  get ownedCount(): number {
    return this.held.size;
  }

  follow(kind: RunKind, key: string, owner: string, open: () => Subscriber): Promise<boolean> {
    return this.follower.follow(kind, key, owner, open);
  }

  wait(kind: RunKind, key: string, owner: string): Promise<RunResult | null> {
    return this.follower.wait(kind, key, owner);
  }

  stop(kind: RunKind, key: string, owner: string, reason: string, cancel = false): Promise<boolean> {
    return this.follower.stop(kind, key, owner, reason, cancel);
  }

  /**
   * Hears what any instance (this one included) broadcasts on `topic`. Messages sent while the
   * connection to Redis is down are lost: `reconnected` runs when it is back, so the listener can
   * assume it missed some.
   */
  async listenTo(topic: string, heard: (message: string) => void, reconnected: () => void): Promise<void> {
    const channel = `${this.prefix}broadcast:${topic}`;
    this.subscriber.on('message', (ch: string, raw: string) => ch === channel && heard(raw));
    let wasDown = false;
    this.subscriber.on('close', () => (wasDown = true));
    this.subscriber.on('ready', () => wasDown && reconnected());
    try {
      await this.subscriber.subscribe(channel);
    } catch (err) {
      throw new RedisUnavailableError((err as Error).message);
    }
  }

  /** Sends `message` to every instance listening to `topic`. */
  async broadcast(topic: string, message: string): Promise<void> {
    try {
      await this.redis.publish(`${this.prefix}broadcast:${topic}`, message);
    } catch (err) {
      throw new RedisUnavailableError((err as Error).message);
    }
  }

  /** SIGTERM: runs have ended (their leases went with them); leave the cluster now, not after a TTL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.userRuns.close();
    await this.membership.close();
    this.follower.close();
    this.server.close();
    await this.leases.leave(this.held.refs()).catch((err) => this.log.warn({ err }, 'leaving the cluster failed; leases will expire'));
    this.held.clear();
    this.subscriber.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
