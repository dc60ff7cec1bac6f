// The owner's side of a subscriber on another instance: a Subscriber whose frames are published to
// that instance's inbox, numbered so the receiver can tell a gap (a publish lost while Redis was
// down) from a quiet stream. Exists only while the remote client listens: a run that nobody follows
// from elsewhere does no Redis work per frame. A frame or end that Redis could not take is turned into
// one `end` notice for `undelivered` to send once Redis is back: the receiver sees its number out of
// step and ends its client's stream, which re-attaches and replays (without it that stream would
// stay open on heartbeats, hearing nothing, for as long as this run lasts).
import type { Bus, Reply } from './bus.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';

export class RemoteSink implements Subscriber {
  private readonly bus: Bus;
  readonly to: string;
  readonly sub: number;
  private seq = 0;
  private closed = false;
  dropped = false;
  private hooks: Array<() => void> = [];
  private readonly undelivered: (to: string, notice: Reply) => void;

  constructor(bus: Bus, to: string, sub: number, undelivered: (to: string, notice: Reply) => void) {
    this.bus = bus;
    this.to = to;
    this.sub = sub;
    this.undelivered = undelivered;
  }

  write(chunk: string): void {
    if (this.closed) return;
    this.bus.send(this.to, { t: 'frames', sub: this.sub, seq: this.seq++ }, chunk).catch(this.lost);
  }

  end(): void {
    if (this.closed) return;
    this.bus.send(this.to, { t: 'end', sub: this.sub, seq: this.seq }).catch(this.lost);
    this.close();
  }

  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.hooks.push(fn);
  }

  /** The remote client left (detach), or its instance can no longer be reached. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const hooks = this.hooks;
    this.hooks = [];
    for (const h of hooks) h();
  }

  /** A frame or the end could not be published: stop sending, and leave the receiver one notice. */
  private lost = (): void => {
    if (this.dropped) return;
    this.dropped = true;
    this.close();
    this.undelivered(this.to, { t: 'end', sub: this.sub, seq: this.seq });
  };
}
