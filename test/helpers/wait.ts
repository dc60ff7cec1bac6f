// Poll-with-deadline: tests wait for what they can observe (a row, a request count, a state), never
// for a stretch of time. A light module, so unit tests need not load the whole server.
import { randomUUID } from 'node:crypto';

/** Resolves once `check` holds; rejects naming `what` when it has not within `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  // The pause is the poll's interval, never a verdict: only `check` decides, and only the deadline fails.
  // From 20 ms up to 200: a condition that holds soon is seen soon, and a long wait does not spend the
  // suite's CPU (it is CPU-bound) on checks that each open a connection or send a request.
  for (let pause = 20; Date.now() < end; pause = Math.min(pause * 1.5, 200)) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, pause));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Resolves once this machine's clock reads later than `iso` at millisecond resolution: the next row
 * written then gets a later timestamp than the one `iso` came from (the database shares the clock).
 */
export function clockPast(iso: string): Promise<void> {
  const at = Date.parse(iso);
  return waitFor(() => Date.now() > at, 5_000, `the clock to pass ${iso}`);
}

/**
 * A fresh simulator gate name (`gate`, `searchGate`, `answerGate` in a SIM directive): a gate once
 * opened stays open, so each held call gets its own.
 */
export const gateName = (label = 'gate'): string => `${label}-${randomUUID().slice(0, 8)}`;

/** A stream observer (a `stopAfter`) that calls `act` at each `event` frame and never stops the stream. */
export const onFrame =
  (event: string, act: () => void) =>
  (ev: { event: string }): boolean => {
    if (ev.event === event) act();
    return false;
  };
