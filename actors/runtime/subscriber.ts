// Who receives a run's frames: the HTTP layer's SSE sink implements this; a cluster relay may too.
// The runtime writes pre-encoded frames and never waits on a subscriber: a slow one drops itself.
export interface Subscriber {
  /** One or more whole frames, in order. Must not throw; a closed subscriber ignores it. */
  write(frames: string): void;
  /** No more frames: the run ended (after its terminal frame) or the subscriber is let go. */
  end(): void;
  /** Called once when the subscriber goes (client gone, dropped, or ended); at once if it already has. */
  onClose(fn: () => void): void;
  /** Set when it went for being too slow (counted in metrics). */
  readonly dropped: boolean;
}
