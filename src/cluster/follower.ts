// The follower's side of cluster mode: following, waiting for or stopping a run that another
// instance owns. Each request carries a subscription number; the owner's replies come back on this
// instance's inbox and settle the matching pending entry.
import { z } from 'zod';
import { runResult as runResultOf } from '../../actors/results.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import { errorFrames } from '../../actors/runners.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { Bus, Reply, Request } from './bus.ts';
import type { RunKind } from './keys.ts';
import { RedisUnavailableError } from './redis.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';
import { activeTraceparent } from '../telemetry/tracing.ts';

/** The owner of a run did not answer (it may be dying: its lease has not expired yet). */
export class OwnerUnreachableError extends ServiceError {
  constructor(owner: string) {
    super(ErrorCodes.OWNER_UNREACHABLE, `the instance running this run (${owner}) did not answer; retry shortly`);
    this.name = 'OwnerUnreachableError';
  }
}

/** An owner's reply that is not what this version of the service sends. */
export class BadOwnerReplyError extends ServiceError {
  constructor(owner: string, detail: string) {
    super(ErrorCodes.BAD_OWNER_REPLY, `the instance running this run (${owner}) sent an unreadable result: ${detail}`);
    this.name = 'BadOwnerReplyError';
  }
}

// The envelope is checked here, where the kind is not known; src/service/runs.ts decodes the value by its kind
// (actors/results.ts decodeRunResult).
const runResult = runResultOf(z.unknown());

function decodeResult(owner: string, payload: string): RunResult | Error {
  try {
    const parsed = runResult.safeParse(JSON.parse(payload));
    return parsed.success ? parsed.data : new BadOwnerReplyError(owner, parsed.error.message);
  } catch (err) {
    return new BadOwnerReplyError(owner, (err as Error).message);
  }
}

type Pending =
  | { t: 'follow'; kind: RunKind; owner: string; next: number; open: () => Subscriber; sink: Subscriber | null; settle: (r: boolean | Error) => void }
  | { t: 'wait'; owner: string; settle: (r: RunResult | null | Error) => void }
  | { t: 'stop'; owner: string; settle: (r: boolean | Error) => void };

export class Follower {
  private readonly bus: Bus;
  private readonly instanceId: string;
  private readonly replyTimeoutMs: number;
  private readonly pending = new Map<number, Pending>();
  private nextSub = 1;
  private closed = false;

  constructor(bus: Bus, instanceId: string, replyTimeoutMs: number) {
    this.bus = bus;
    this.instanceId = instanceId;
    this.replyTimeoutMs = replyTimeoutMs;
  }

  /**
   * Replays the run held by `owner`, then follows it live: `open` is called once the owner has
   * answered (so a run that just ended can still be a 404). False when the owner no longer runs it.
   */
  follow(kind: RunKind, key: string, owner: string, open: () => Subscriber): Promise<boolean> {
    const tp = activeTraceparent();
    return this.ask(owner, (sub) => ({ t: 'attach', from: this.instanceId, sub, kind, key, ...(tp !== undefined && { tp }) }), (settle) => ({ t: 'follow', kind, owner, next: 0, open, sink: null, settle }));
  }

  /** The outcome of the run held by `owner`, when it ends; null when it no longer runs there. */
  wait(kind: RunKind, key: string, owner: string): Promise<RunResult | null> {
    return this.ask(owner, (sub) => ({ t: 'wait', from: this.instanceId, sub, kind, key }), (settle) => ({ t: 'wait', owner, settle }), false);
  }

  /** Stops the run held by `owner` (`cancel`: ends it with `reason` as its error); false when it no longer runs there. */
  stop(kind: RunKind, key: string, owner: string, reason: string, cancel = false): Promise<boolean> {
    return this.ask(owner, (sub) => ({ t: 'stop', from: this.instanceId, sub, kind, key, reason, ...(cancel ? { cancel } : {}) }), (settle) => ({ t: 'stop', owner, settle }));
  }

  /** The instances this one waits on or follows (checked for liveness at each beat). */
  owners(): Set<string> {
    const out = new Set<string>();
    for (const p of this.pending.values()) out.add(p.owner);
    return out;
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
          this.detach(owner, sub);
          settle(new OwnerUnreachableError(owner));
        }, this.replyTimeoutMs);
      }
      // Nobody heard it: the owner's subscription is down (it may be dying), and a waiter has no deadline.
      this.bus.send(owner, request(sub)).then(
        (heard) => heard === 0 && settle(new OwnerUnreachableError(owner)),
        (err: unknown) => settle(err as Error),
      );
    });
  }

  private detach(owner: string, sub: number): void {
    this.bus.send(owner, { t: 'detach', from: this.instanceId, sub }).catch(() => {});
  }

  onReply(m: Reply, payload: string): void {
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
    if (p.t === 'wait' && m.t === 'result') p.settle(decodeResult(p.owner, payload));
    else if (p.t === 'stop' && m.t === 'stopped') p.settle(m.ok);
  }

  private onFollowReply(sub: number, p: Extract<Pending, { t: 'follow' }>, m: Reply, payload: string): void {
    if (m.t !== 'frames' && m.t !== 'end') return;
    if (m.seq !== p.next) {
      // A frame was lost (Redis went away for a moment): end this client's stream without a terminal
      // event, as a dropped connection; it re-attaches and the replay has everything.
      this.pending.delete(sub);
      this.detach(p.owner, sub);
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
        this.detach(p.owner, sub);
      });
      p.settle(true);
    }
    p.sink.write(payload);
  }

  /** `peer` is dead: its followers get their run kind's `error` event, its waiters and stops an error. */
  ownerLost(peer: string): void {
    for (const [sub, p] of this.pending) {
      if (p.owner !== peer) continue;
      this.pending.delete(sub);
      if (p.t === 'follow' && p.sink) {
        p.sink.write(errorFrames[p.kind](`the instance running this stream (${peer}) stopped`));
        p.sink.end();
      } else p.settle(new OwnerUnreachableError(peer));
    }
  }

  /**
   * Every pending request ends: followers' streams end (their clients re-attach and get a full
   * replay), waiters and stops fail with `err`.
   */
  endAll(err: Error): void {
    for (const [sub, p] of this.pending) {
      this.pending.delete(sub);
      if (p.t === 'follow' && p.sink) p.sink.end();
      else p.settle(err);
    }
  }

  close(): void {
    this.closed = true;
    this.endAll(new RedisUnavailableError('this instance is shutting down'));
  }
}
