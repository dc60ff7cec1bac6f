// What the cluster needs from this process's runs, so it depends on no particular runtime:
// the in-process registry (the supervisor today) implements this port.
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { RunKind } from './keys.ts';

export interface LocalRunPort {
  /** Replays the local run of `key` into `sub`, then follows it live; false when none runs here. */
  attach(kind: RunKind, key: string, sub: Subscriber): boolean;
  /** The outcome of the local run of `key` (JSON-serialisable), or null when none runs here. */
  outcome(kind: RunKind, key: string): Promise<RunResult> | null;
  /**
   * Stops the local run of `key` (`cancel`: ends it with `reason` as its error, the supervisor's
   * cancelNow(kind, key, 'fenced', reason)); false when none runs here.
   */
  stop(kind: RunKind, key: string, reason: string, cancel?: boolean): boolean;
  /**
   * Ends the local run of `key` at once because this instance may no longer hold its lease (the
   * supervisor's cancelNow(kind, key, 'fenced', message)); false when none runs here. Must not throw.
   */
  fence(kind: RunKind, key: string, message: string): boolean;
}
