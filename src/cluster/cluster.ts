// Cluster mode: this instance's membership (liveness, leases of the runs it owns, one beat timer),
// the owner's side of remote subscribers, waiters and stops (served from this process's runs through
// LocalRunPort), and the follower's side: following, waiting for or stopping a run owned elsewhere.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Bus, type Message, type Reply, type Request } from './bus.ts';
import { clusterKeys, runMember, type ClusterKeys, type RunKind } from './keys.ts';
import { Leases, type LeaseRef } from './leases.ts';
import type { LocalRunPort, Subscriber } from './port.ts';
import { connectRedis, RedisUnavailableError, type RedisTimeouts, DEFAULT_REDIS_TIMEOUTS } from './redis.ts';
import { RemoteSink } from './remote-sink.ts';

export interface ClusterOptions {
  url: string;
  prefix: string;
  instanceId: string;
  /** Lease and liveness expiry; an instance that dies is forgotten after at most this long. */
  leaseTtlMs: number;
  local: LocalRunPort;
  log: Logger;
  timeouts?: RedisTimeouts;
  /** How long a follower waits for the owner's first answer. */
  ownerReplyTimeoutMs?: number;
}

/** The owner of a run did not answer (it may be dying: its lease has not expired yet). */
export class OwnerUnreachableError extends Error {
  constructor(owner: string) {
    super(`the instance running this run (${owner}) did not answer; retry shortly`);
    this.name = 'OwnerUnreachableError';
  }
}

type Pending =
  | { t: 'follow'; owner: string; next: number; open: () => Subscriber; sink: Subscriber | null; settle: (r: boolean | Error) => void }
  | { t: 'wait'; owner: string; settle: (r: unknown | null | Error) => void }
  | { t: 'stop'; owner: string; settle: (r: boolean | Error) => void };

/** The SSE `error` event a follower gets when the run's instance died under it. */
function ownerLostFrame(owner: string): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', message: `the instance running this stream (${owner}) stopped` })}\n\n`;
}

export class Cluster {
  readonly instanceId: string;
  readonly leaseTtlMs: number;
  private readonly redis: Redis;
  private readonly subscriber: Redis;
  private readonly keys: ClusterKeys;
  private readonly leases: Leases;
  private readonly bus: Bus;
  private readonly local: LocalRunPort;
  private readonly log: Logger;
  private readonly replyTimeoutMs: number;
  private readonly owned = new Map<string, LeaseRef>();
  private readonly pending = new Map<number, Pending>();
  private readonly remoteSinks = new Map<string, RemoteSink>();
  private nextSub = 1;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private redisDown = false;
  private closed = false;

  private constructor(opts: ClusterOptions, redis: Redis, subscriber: Redis) {
    this.instanceId = opts.instanceId;
    this.leaseTtlMs = opts.leaseTtlMs;
    this.redis = redis;
    this.subscriber = subscriber;
    this.keys = clusterKeys(opts.prefix);
    this.leases = new Leases(redis, this.keys, opts.instanceId, opts.leaseTtlMs);
    this.bus = new Bus(redis, subscriber, this.keys, opts.instanceId);
    this.local = opts.local;
    this.log = opts.log;
    this.replyTimeoutMs = opts.ownerReplyTimeoutMs ?? 5000;
  }

  /** Connects, claims the instance id and starts beating. Throws RedisUnavailableError naming REDIS_URL. */
  static async join(opts: ClusterOptions): Promise<Cluster> {
    const t = opts.timeouts ?? DEFAULT_REDIS_TIMEOUTS;
    const redis = await connectRedis(opts.url, `${opts.instanceId}:cmd`, t);
    let subscriber: Redis | undefined;
    try {
      subscriber = await connectRedis(opts.url, `${opts.instanceId}:sub`, t);
      const cluster = new Cluster(opts, redis, subscriber);
      if (!(await cluster.leases.claimInstance())) {
        throw new Error(`INSTANCE_ID ${opts.instanceId} is in use by another live instance: give each instance its own INSTANCE_ID`);
      }
      await cluster.bus.listen(
        (h, payload) => cluster.onMessage(h, payload),
        (err) => opts.log.warn({ err }, 'bad cluster message'),
      );
      cluster.bus.onConnection((up) => cluster.onSubscriberConnection(up));
      cluster.schedule();
      return cluster;
    } catch (err) {
      redis.disconnect();
      subscriber?.disconnect();
      throw err;
    }
  }

  // ---- leases ------------------------------------------------------------------------------------

  /** Takes the run key cluster-wide: null when this instance now owns it, else the owner's id. */
  async claim(kind: RunKind, key: string): Promise<string | null> {
    const owner = await this.leases.acquire(kind, key);
    if (owner === null) this.owned.set(runMember(kind, key), { kind, key });
    return owner;
  }

  /** Gives the run key back (the run ended or never started). A failure leaves it to expire. */
  release(kind: RunKind, key: string): void {
    if (!this.owned.delete(runMember(kind, key))) return;
    this.leases.release(kind, key).catch((err) => this.log.warn({ err, kind, key }, 'lease release failed; it will expire'));
  }

  owner(kind: RunKind, key: string): Promise<string | null> {
    return this.leases.owner(kind, key);
  }

  /** Every live instance's runs (`GET /v1/active-runs?scope=cluster`). */
  list(): Promise<{ chats: string[]; searches: string[] }> {
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
    return this.owned.size;
  }

  // ---- following a run owned by another instance -------------------------------------------------

  /**
   * Replays the run held by `owner`, then follows it live: `open` is called once the owner has
   * answered (so a run that just ended can still be a 404). False when the owner no longer runs it.
   */
  follow(kind: RunKind, key: string, owner: string, open: () => Subscriber): Promise<boolean> {
    return this.ask(owner, (sub) => ({ t: 'attach', from: this.instanceId, sub, kind, key }), (settle) => ({ t: 'follow', owner, next: 0, open, sink: null, settle }));
  }

  /** The outcome of the run held by `owner`, when it ends; null when it no longer runs there. */
  wait(kind: RunKind, key: string, owner: string): Promise<unknown | null> {
    return this.ask(owner, (sub) => ({ t: 'wait', from: this.instanceId, sub, kind, key }), (settle) => ({ t: 'wait', owner, settle }), false);
  }

  /** Stops the run held by `owner`; false when it no longer runs there. */
  stop(kind: RunKind, key: string, owner: string, reason: string): Promise<boolean> {
    return this.ask(owner, (sub) => ({ t: 'stop', from: this.instanceId, sub, kind, key, reason }), (settle) => ({ t: 'stop', owner, settle }));
  }

  /** Sends a request and settles with the owner's reply; the first reply has a deadline unless `timed` is false. */
  private ask<R>(owner: string, request: (sub: number) => Request, entry: (settle: (r: R | Error) => void) => Pending, timed = true): Promise<R> {
    if (this.closed) return Promise.reject(new RedisUnavailableError('this instance is shutting down'));
    const sub = this.nextSub++;
    return new Promise<R>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = (r: R | Error) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        if (r instanceof Error) {
          this.pending.delete(sub);
          reject(r);
        } else resolve(r);
      };
      this.pending.set(sub, entry(settle as (r: unknown) => void));
      if (timed) {
        timer = setTimeout(() => {
          this.bus.send(owner, { t: 'detach', from: this.instanceId, sub }).catch(() => {});
          settle(new OwnerUnreachableError(owner));
        }, this.replyTimeoutMs);
      }
      this.bus.send(owner, request(sub)).catch((err: unknown) => settle(err as Error));
    });
  }

  private onReply(m: Reply, payload: string): void {
    const p = this.pending.get(m.sub);
    // A reply for a follower that already left: its detach is on the way to the owner.
    if (!p) return;
    if (m.t === 'gone') {
      this.pending.delete(m.sub);
      if (p.t === 'wait') p.settle(null);
      else p.settle(false);
      return;
    }
    if (p.t === 'follow') return this.onFollowReply(m.sub, p, m, payload);
    this.pending.delete(m.sub);
    if (p.t === 'wait' && m.t === 'result') p.settle(JSON.parse(payload));
    else if (p.t === 'stop' && m.t === 'stopped') p.settle(m.ok);
  }

  private onFollowReply(sub: number, p: Extract<Pending, { t: 'follow' }>, m: Reply, payload: string): void {
    if (m.t !== 'frames' && m.t !== 'end') return;
    if (m.seq !== p.next) {
      // A frame was lost (Redis went away for a moment): end this client's stream without a terminal
      // event, as a dropped connection; it re-attaches and the replay has everything.
      this.pending.delete(sub);
      this.bus.send(p.owner, { t: 'detach', from: this.instanceId, sub }).catch(() => {});
      if (p.sink) p.sink.end();
      else p.settle(new OwnerUnreachableError(p.owner));
      return;
    }
    if (m.t === 'end') {
      this.pending.delete(sub);
      p.sink?.end();
      return;
    }
    p.next++;
    if (!p.sink) {
      const sink = p.open();
      p.sink = sink;
      sink.onClose(() => {
        if (this.pending.get(sub) !== p) return;
        this.pending.delete(sub);
        this.bus.send(p.owner, { t: 'detach', from: this.instanceId, sub }).catch(() => {});
      });
      p.settle(true);
    }
    p.sink.write(payload);
  }

  // ---- serving other instances (this instance owns the run) ---------------------------------------

  private onMessage(m: Message, payload: string): void {
    switch (m.t) {
      case 'attach': {
        const sink = new RemoteSink(this.bus, m.from, m.sub);
        const id = `${m.from}/${m.sub}`;
        this.remoteSinks.set(id, sink);
        sink.onClose(() => this.remoteSinks.delete(id));
        if (!this.local.attach(m.kind, m.key, sink)) {
          sink.close();
          this.reply(m.from, { t: 'gone', sub: m.sub });
        }
        return;
      }
      case 'detach':
        this.remoteSinks.get(`${m.from}/${m.sub}`)?.close();
        return;
      case 'wait': {
        const outcome = this.local.outcome(m.kind, m.key);
        if (!outcome) return this.reply(m.from, { t: 'gone', sub: m.sub });
        outcome.then((r) => this.reply(m.from, { t: 'result', sub: m.sub }, JSON.stringify(r)));
        return;
      }
      case 'stop':
        return this.reply(m.from, { t: 'stopped', sub: m.sub, ok: this.local.stop(m.kind, m.key, m.reason) });
      default:
        return this.onReply(m, payload);
    }
  }

  private reply(to: string, m: Reply, payload = ''): void {
    this.bus.send(to, m, payload).catch((err) => this.log.warn({ err, to }, 'cluster reply lost'));
  }

  // ---- the beat: liveness, lease renewal, dead peers -----------------------------------------------

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.beating = this.beat().finally(() => {
        this.beating = null;
        this.schedule();
      });
    }, Math.max(50, Math.floor(this.leaseTtlMs / 3)));
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      const lost = await this.leases.beat([...this.owned.values()]);
      for (const l of lost) {
        this.owned.delete(runMember(l.kind, l.key));
        this.log.warn({ kind: l.kind, key: l.key }, 'lease taken by another instance while this one was cut from Redis; the run goes on here');
      }
      if (this.redisDown) this.log.info('Redis is back');
      this.redisDown = false;
      await this.dropDeadPeers();
    } catch (err) {
      if (!this.redisDown) this.log.error({ err }, 'Redis unreachable: new runs are refused until it is back; running ones go on');
      this.redisDown = true;
    }
  }

  /** Followers of a dead owner get an error; subscribers on a dead instance stop being fed. */
  private async dropDeadPeers(): Promise<void> {
    const peers = new Set<string>();
    for (const p of this.pending.values()) peers.add(p.owner);
    for (const s of this.remoteSinks.values()) peers.add(s.to);
    peers.delete(this.instanceId);
    for (const peer of peers) {
      if (await this.leases.isAlive(peer)) continue;
      for (const [sub, p] of this.pending) {
        if (p.owner !== peer) continue;
        this.pending.delete(sub);
        if (p.t === 'follow' && p.sink) {
          p.sink.write(ownerLostFrame(peer));
          p.sink.end();
        } else p.settle(new OwnerUnreachableError(peer));
      }
      for (const s of this.remoteSinks.values()) if (s.to === peer) s.close();
    }
  }

  private onSubscriberConnection(up: boolean): void {
    if (up) return;
    // Messages published while the subscription is down are lost: every follower ends now (its
    // client re-attaches and gets a full replay); waiters and stops fail with a message naming Redis.
    for (const [sub, p] of this.pending) {
      this.pending.delete(sub);
      if (p.t === 'follow' && p.sink) p.sink.end();
      else p.settle(new RedisUnavailableError('the connection to Redis was lost'));
    }
  }

  /** SIGTERM: runs have ended (their leases went with them); leave the cluster now, not after a TTL. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.beating;
    for (const p of this.pending.values()) {
      if (p.t === 'follow' && p.sink) p.sink.end();
      else p.settle(new RedisUnavailableError('this instance is shutting down'));
    }
    this.pending.clear();
    for (const s of [...this.remoteSinks.values()]) s.close();
    await this.leases.leave([...this.owned.values()]).catch((err) => this.log.warn({ err }, 'leaving the cluster failed; leases will expire'));
    this.owned.clear();
    this.subscriber.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
