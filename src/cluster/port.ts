// What the cluster needs from this process's runs, so it depends on no particular runtime:
// the in-process registry (the supervisor today) implements this port.
import type { RunKind } from './keys.ts';

/** Where a run's pre-encoded SSE frames go: an SSE response, or a subscriber on another instance. */
export interface Subscriber {
  write(chunk: string): void;
  /** The run's stream is over (after its terminal event). */
  end(): void;
  /** `fn` runs once when the subscriber goes (client gone, or ended). */
  onClose(fn: () => void): void;
  readonly dropped: boolean;
}

export interface LocalRunPort {
  /** Replays the local run of `key` into `sub`, then follows it live; false when none runs here. */
  attach(kind: RunKind, key: string, sub: Subscriber): boolean;
  /** The outcome of the local run of `key` (JSON-serialisable), or null when none runs here. */
  outcome(kind: RunKind, key: string): Promise<unknown> | null;
  /** Stops the local run of `key`; false when none runs here. */
  stop(kind: RunKind, key: string, reason: string): boolean;
}
