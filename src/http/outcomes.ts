// The one table from a run's domain outcome to an HTTP answer (a catalogue entry of errors.ts). Runs
// and the runtime speak outcomes; only this layer knows statuses.
import type { RunFailure, RunOutcome } from '../../actors/runtime/protocol.ts';
import {
  AT_CAPACITY,
  BAD_REQUEST,
  CONFLICT,
  DRAINING,
  INTERNAL_RUN,
  NOT_FOUND,
  OVERLOADED,
  PROVIDER_FAILED,
  PROVIDER_RATE_LIMITED,
  PROVIDER_TIMEOUT,
  RUN_CANCELLED,
  RUN_DATABASE_UNAVAILABLE,
  RUN_UNAVAILABLE,
  SHUTTING_DOWN,
  UNAUTHORIZED,
  USER_RUNS_LIMIT,
  USER_TOKENS_EXHAUSTED,
  HttpError,
} from './errors.ts';

const ANSWER: Record<RunOutcome, (message: string) => HttpError> = {
  busy: CONFLICT,
  not_found: NOT_FOUND,
  invalid: BAD_REQUEST,
  unavailable: RUN_UNAVAILABLE,
  capacity: AT_CAPACITY,
  shutting_down: SHUTTING_DOWN,
  // Their messages are the contract's, whatever the refusal said.
  draining: DRAINING,
  overloaded: OVERLOADED,
  user_runs: USER_RUNS_LIMIT,
  user_tokens: USER_TOKENS_EXHAUSTED,
  // The contract's 401, as the same request would get a moment later.
  unauthorized: () => UNAUTHORIZED(),
  provider_timeout: PROVIDER_TIMEOUT,
  provider_rate_limited: PROVIDER_RATE_LIMITED,
  provider_error: PROVIDER_FAILED,
  provider_unavailable: RUN_UNAVAILABLE,
  database_unavailable: RUN_DATABASE_UNAVAILABLE,
  cancelled: RUN_CANCELLED,
  // A stopped run that still answers (a chat's partial text) is a success; one that cannot is a conflict.
  stopped: CONFLICT,
  internal: INTERNAL_RUN,
};

/** The HTTP error for a failed or refused run; `message` replaces the run's own (e.g. a spec message). */
export function outcomeError(failure: Pick<RunFailure, 'outcome' | 'message' | 'retryAfterMs'>, message = failure.message): HttpError {
  const err = ANSWER[failure.outcome](message);
  // The provider's own wait (a 429's Retry-After) or the breaker's, in whole seconds as the header says.
  if (failure.retryAfterMs !== undefined) return withRetryAfter(err, failure.retryAfterMs);
  return err;
}

function withRetryAfter(err: HttpError, ms: number): HttpError {
  return new HttpError(err.code, err.status, err.message, { ...err.headers, 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) });
}
