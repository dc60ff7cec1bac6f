// The leases this instance holds, and the fence that keeps it from running a run it may no longer
// own: each lease remembers when its last acknowledged renewal was sent (timing.ts), and a lease
// unrenewed for longer than TTL - margin, or found taken by another instance, has its run ended
// here (`fence`) before anyone else can take the key. A fenced lease is not renewed again: its run
// is ending, and its key is left to expire or to the release at the run's end.
import type { Logger } from 'pino';
import { runMember, type RunKind } from './keys.ts';
import type { LeaseRef, Leases } from './leases.ts';
import type { ClusterTiming } from './timing.ts';

/** The `error` message of a run ended by fencing (the cross-team contract's exact text). */
export const FENCED_MESSAGE = 'run cancelled: this instance lost contact with the cluster';

interface Held extends LeaseRef {
  /** performance.now() when the last renewal (or the acquire) that Redis acknowledged was sent. */
  renewedAt: number;
  fenced: boolean;
}

export class HeldLeases {
  private readonly leases: Leases;
  private readonly timing: ClusterTiming;
  private readonly fence: (kind: RunKind, key: string) => void;
  private readonly log: Logger;
  private readonly held = new Map<string, Held>();
  private timer: NodeJS.Timeout | null = null;

  /** `fence` ends the local run of a key; it must not throw. */
  constructor(leases: Leases, timing: ClusterTiming, fence: (kind: RunKind, key: string) => void, log: Logger) {
    this.leases = leases;
    this.timing = timing;
    this.fence = fence;
    this.log = log;
  }

  /** Starts the fencing check, on its own timer: a renewal stuck in a Redis timeout cannot delay it. */
  start(): void {
    this.timer = setInterval(() => this.fenceStale(), this.timing.fenceCheckMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  get size(): number {
    return this.held.size;
  }

  /** Takes the run key cluster-wide (for `user`'s run, when it has one): null when this instance now owns it, else the owner's id. */
  async claim(kind: RunKind, key: string, user?: string): Promise<string | null> {
    const sentAt = performance.now();
    const owner = await this.leases.acquire(kind, key, user);
    if (owner === null) this.held.set(runMember(kind, key), { kind, key, ...(user === undefined ? {} : { user }), renewedAt: sentAt, fenced: false });
    return owner;
  }

  /** Gives the run key back (the run ended or never started). A failure leaves it to expire. */
  release(kind: RunKind, key: string): void {
    if (!this.held.delete(runMember(kind, key))) return;
    this.leases.release(kind, key).catch((err) => this.log.warn({ err, kind, key }, 'lease release failed; it will expire'));
  }

  /**
   * Renews every lease still safe to renew (liveness too). Stale ones are fenced first, so an
   * instance that wakes from a long pause ends its runs before this renewal could extend them.
   * Throws RedisUnavailableError when Redis does not acknowledge.
   */
  async renew(): Promise<void> {
    this.fenceStale();
    const refs = [...this.held.values()].filter((h) => !h.fenced);
    const sentAt = performance.now();
    const lost = new Set(await this.leases.beat(refs));
    for (const h of refs) {
      if (lost.has(h)) this.fenceOne(h, 'lease taken by another instance while this one was cut from Redis: its run ends here');
      else h.renewedAt = sentAt;
    }
  }

  /** Every lease held, for leaving the cluster at once. */
  refs(): LeaseRef[] {
    return [...this.held.values()];
  }

  clear(): void {
    this.held.clear();
  }

  private fenceStale(): void {
    const deadline = performance.now() - (this.timing.ttlMs - this.timing.marginMs);
    for (const h of this.held.values()) {
      if (!h.fenced && h.renewedAt < deadline) this.fenceOne(h, 'lease not renewed for longer than its TTL less the safety margin: its run ends here (fenced)');
    }
  }

  private fenceOne(h: Held, why: string): void {
    h.fenced = true;
    this.log.warn({ kind: h.kind, key: h.key, sinceRenewalMs: Math.round(performance.now() - h.renewedAt) }, why);
    this.fence(h.kind, h.key);
  }
}
