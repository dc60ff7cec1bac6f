// Any error a handler throws, as the HTTP answer the router sends: catalogue errors as they are, the
// lower layers' domain errors by their meaning (the cluster or the database out of reach: 503 with
// Retry-After, the request may succeed soon), anything else as a logged 500.
import { describeError } from '../db/pool.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { IdempotencyKeyError } from '../idempotent-start.ts';
import { ClusterUnavailableError } from '../runs.ts';
import {
  CLUSTER_UNAVAILABLE,
  DATABASE_UNAVAILABLE,
  HttpError,
  IDEMPOTENCY_KEY_EXPIRED,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENCY_KEY_UNCLAIMED,
  INTERNAL,
} from './errors.ts';

const KEY_ERRORS = { reused: IDEMPOTENCY_KEY_REUSED, unclaimed: IDEMPOTENCY_KEY_UNCLAIMED, expired: IDEMPOTENCY_KEY_EXPIRED } as const;

/** `logUnexpected` is called only for a failure nobody answered on purpose (a 500). */
export function toHttpError(err: unknown, logUnexpected: (err: unknown) => void): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof ClusterUnavailableError) return CLUSTER_UNAVAILABLE(err.message);
  if (err instanceof IdempotencyKeyError) return KEY_ERRORS[err.reason]();
  if (isDatabaseUnavailable(err)) return DATABASE_UNAVAILABLE(describeError(err));
  logUnexpected(err);
  return INTERNAL((err as Error)?.message ?? String(err));
}
