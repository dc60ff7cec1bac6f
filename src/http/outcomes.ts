// The one table from a run's domain outcome to an HTTP status. Runs and the runtime speak outcomes;
// only this layer knows statuses.
import type { RunFailure, RunOutcome } from '../../actors/runtime/protocol.ts';
import { HttpError } from './errors.ts';

const STATUS: Record<RunOutcome, { status: number; retryAfter?: string }> = {
  busy: { status: 409 },
  not_found: { status: 404 },
  invalid: { status: 400 },
  unavailable: { status: 503 },
  capacity: { status: 503, retryAfter: '1' },
  shutting_down: { status: 503, retryAfter: '5' },
  // Both are safe to retry at once on another instance (a balancer's proxy_next_upstream does).
  draining: { status: 503, retryAfter: '5' },
  overloaded: { status: 503, retryAfter: '1' },
  provider_timeout: { status: 504 },
  provider_rate_limited: { status: 429 },
  provider_error: { status: 502 },
  cancelled: { status: 503 },
  // A stopped run that still answers (a chat's partial text) is a success; one that cannot is a conflict.
  stopped: { status: 409 },
  internal: { status: 500 },
};

/** The HTTP error for a failed or refused run; `message` replaces the run's own (e.g. a spec message). */
export function outcomeError(failure: Pick<RunFailure, 'outcome' | 'message'>, message = failure.message): HttpError {
  const { status, retryAfter } = STATUS[failure.outcome];
  return new HttpError(status, message, retryAfter ? { 'retry-after': retryAfter } : undefined);
}
