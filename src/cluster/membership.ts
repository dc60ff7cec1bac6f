// This instance's membership: one beat timer that renews its liveness key and its leases (through
// HeldLeases, which fences what it could not renew in time), reports Redis going and coming back,
// tells the other roles which peers have died, and then lets them send what Redis could not take before.
import type { Logger } from 'pino';
import type { HeldLeases } from './held-leases.ts';
import type { Leases } from './leases.ts';

export class Membership {
  private readonly leases: Leases;
  private readonly held: HeldLeases;
  private readonly beatMs: number;
  /** The peers this instance depends on; `lost` is told of each that has died. */
  private readonly peers: () => Set<string>;
  private readonly lost: (peer: string) => void;
  /** Runs at the end of each beat that reached Redis. */
  private readonly reached: () => Promise<void>;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private redisDown = false;
  private closed = false;

  constructor(o: {
    leases: Leases;
    held: HeldLeases;
    beatMs: number;
    peers: () => Set<string>;
    lost: (peer: string) => void;
    reached: () => Promise<void>;
    log: Logger;
  }) {
    this.leases = o.leases;
    this.held = o.held;
    this.beatMs = o.beatMs;
    this.peers = o.peers;
    this.lost = o.lost;
    this.reached = o.reached;
    this.log = o.log;
  }

  /** Claims the instance id, then beats until close. False when another live instance holds the id. */
  async join(): Promise<boolean> {
    if (!(await this.leases.claimInstance())) return false;
    this.held.start();
    this.schedule(0);
    return true;
  }

  /** The next beat starts `beatMs` after this one started (timing.ts counts on it), at once if late. */
  private schedule(elapsed: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      const started = performance.now();
      this.beating = this.beat().finally(() => {
        this.beating = null;
        this.schedule(performance.now() - started);
      });
    }, Math.max(0, this.beatMs - elapsed));
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      await this.held.renew();
      if (this.redisDown) this.log.info('Redis is back');
      this.redisDown = false;
      await this.dropDeadPeers();
      await this.reached();
    } catch (err) {
      if (!this.redisDown) this.log.error({ err }, 'Redis unreachable: new runs are refused until it is back; running ones are fenced if it stays away');
      this.redisDown = true;
    }
  }

  private async dropDeadPeers(): Promise<void> {
    for (const peer of this.peers()) if (!(await this.leases.isAlive(peer))) this.lost(peer);
  }

  /** Stops beating; resolves once a beat in progress has ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.held.stop();
    if (this.timer) clearTimeout(this.timer);
    await this.beating;
  }
}
