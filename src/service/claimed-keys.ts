// The events a retry of an Idempotency-Key waits for when the key's run is on this server
// (src/service/idempotent-start.ts): the run registered, its outcome recorded. A run on another instance sends
// none here, so a retry of it polls the key's row instead.
import { setTimeout as sleep } from 'node:timers/promises';

/** How often a retry re-reads a key whose run is on another instance (no event reaches it from there). */
const POLL_MS = 100;

/** A promise and the function that settles it. */
function signal(): { settled: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const settled = new Promise<void>((r) => (fire = r));
  return { settled, fire };
}

/** A keyed run claimed here: when it started (or was given up), and when its outcome was recorded. */
class KeyEvents {
  started = false;
  readonly start = signal();
  readonly record = signal();
}

/**
 * One server's keys claimed here whose run has not recorded its outcome yet. Built in the composition
 * root (src/app/app.ts), so two servers in one process, even on one database, never wake each other's
 * retries.
 */
export class ClaimedKeys {
  private readonly keys = new Map<string, KeyEvents>();

  watch(key: string): void {
    this.keys.set(key, new KeyEvents());
  }

  unwatch(key: string): void {
    const e = this.keys.get(key);
    this.keys.delete(key);
    e?.start.fire();
    e?.record.fire();
  }

  /** The key's run has registered: retries now wait for its outcome. */
  started(key: string): void {
    const e = this.keys.get(key);
    if (!e) return;
    e.started = true;
    e.start.fire();
  }

  /**
   * Settles at the next thing that can change what a retry of `key` sees: the run registered or its
   * outcome recorded, when this server runs it; else after a poll interval (the run is elsewhere).
   * Rejects when `gone` aborts (the retry's client left). Leaves no listener on `gone` once settled:
   * a retry may poll here for as long as the run goes.
   */
  nextChange(key: string, gone: AbortSignal): Promise<void> {
    const e = this.keys.get(key);
    if (!e) return sleep(POLL_MS, undefined, { signal: gone });
    return unlessAborted(e.started ? e.record.settled : e.start.settled, gone);
  }
}

/**
 * `settled`, or a rejection once `signal` aborts. An aborted wait's reaction stays on `settled` until
 * it fires, but that is one per retry and event (two at most), not one per poll.
 */
function unlessAborted(settled: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    void settled.then(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    });
  });
}
