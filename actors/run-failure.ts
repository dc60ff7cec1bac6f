// How a model run's failure becomes a domain outcome, shared by the chat run and title generation.
import { isDatabaseUnavailable } from '../src/db/unavailable.ts';
import { ProviderError, ProviderUnavailableError } from '../src/providers/types.ts';
import { RunCancelled } from './runtime/actor.ts';
import type { RunFailure, RunOutcome } from './runtime/protocol.ts';
import { ErrorCodes, ServiceError } from '../src/base/errors.ts';

/** A failure the run detects itself, with its outcome. */
export class RunError extends ServiceError {
  constructor(
    message: string,
    readonly outcome: RunOutcome,
  ) {
    super(ErrorCodes.RUN_FAILED, message);
  }
}

/** The run's failure as a domain outcome; timeouts were marked where they were detected. */
export function failureOf(err: unknown, signal: AbortSignal): RunFailure {
  return cancelFailure(signal) ?? causeOf(err);
}

/** The failure of a run whose signal is aborted (a stop, a cancel); null while it is not. */
export function cancelFailure(signal: AbortSignal): RunFailure | null {
  if (!signal.aborted) return null;
  const reason: unknown = signal.reason;
  const why = reason instanceof RunCancelled ? reason.why : 'shutdown';
  // A shutdown's or a fence's message is the terminal error's, verbatim (it already says "run cancelled").
  const verbatim = reason instanceof RunCancelled && (why === 'shutdown' || why === 'fenced');
  const message = verbatim ? reason.message : `run cancelled: ${reason instanceof Error ? reason.message : 'aborted'}`;
  return { ok: false, outcome: why === 'stop' ? 'stopped' : 'cancelled', message };
}

/**
 * An error as the failure it causes, whatever the run's signal: plain data, so a run's state can keep
 * it (a failed input's cause) where it cannot keep the error itself.
 */
export function causeOf(err: unknown): RunFailure {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof RunError) return { ok: false, outcome: err.outcome, message };
  if (err instanceof ProviderUnavailableError) return { ok: false, outcome: 'provider_unavailable', message, retryAfterMs: err.retryAfterMs };
  if (err instanceof ProviderError) {
    const outcome = err.status === 429 ? 'provider_rate_limited' : err.timedOut ? 'provider_timeout' : 'provider_error';
    // A rate limit's wait reaches the client (Retry-After); other upstream failures stay a plain 502.
    if (outcome === 'provider_rate_limited' && err.retryAfterMs !== undefined) return { ok: false, outcome, message, retryAfterMs: err.retryAfterMs };
    return { ok: false, outcome, message };
  }
  // The same answer a request gets from its own query (503, retry soon), not a 500 quoting a socket error.
  if (isDatabaseUnavailable(err)) return { ok: false, outcome: 'database_unavailable', message: `database unavailable: ${message}` };
  return { ok: false, outcome: 'internal', message };
}

/**
 * A cancel for shutdown or fencing: the run keeps what it had and ends with the cancel's message
 * verbatim (contract item 2). Null for a stop, a disconnect, or no cancel.
 */
export function interruptionOf(signal: AbortSignal): RunFailure | null {
  const reason: unknown = signal.reason;
  if (!signal.aborted || !(reason instanceof RunCancelled)) return null;
  if (reason.why !== 'shutdown' && reason.why !== 'fenced') return null;
  return { ok: false, outcome: 'cancelled', message: reason.message };
}
