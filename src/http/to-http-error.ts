// Any error a handler throws, as the HTTP answer the router sends: catalogue errors as they are, domain
// errors by their code (the cluster or the database out of reach: 503 with Retry-After, the request may
// succeed soon), anything else as a logged 500.
import { randomBytes } from 'node:crypto';
import { describeError } from '../db/pool.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { ErrorCodes, serviceErrorCode, type ErrorCode } from '../base/errors.ts';
import {
  CLUSTER_UNAVAILABLE,
  DATABASE_UNAVAILABLE,
  HttpError,
  IDEMPOTENCY_KEY_EXPIRED,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENCY_KEY_UNCLAIMED,
  INTERNAL,
} from './errors.ts';

// By code, so this layer imports none of the modules that throw them (src/service/runs.ts, src/service/idempotent-start.ts).
const BY_CODE: Partial<Record<ErrorCode, (err: Error) => HttpError>> = {
  [ErrorCodes.CLUSTER_UNAVAILABLE]: (err) => CLUSTER_UNAVAILABLE(err.message),
  [ErrorCodes.IDEMPOTENCY_KEY_REUSED]: () => IDEMPOTENCY_KEY_REUSED(),
  [ErrorCodes.IDEMPOTENCY_KEY_UNCLAIMED]: () => IDEMPOTENCY_KEY_UNCLAIMED(),
  [ErrorCodes.IDEMPOTENCY_KEY_EXPIRED]: () => IDEMPOTENCY_KEY_EXPIRED(),
};

/**
 * `logUnexpected` is called only for a failure nobody answered on purpose (a 500), with the reference
 * its answer gives: the client reads that reference, never the error itself (a driver's or a library's
 * message may name a table, an index or a file), and an operator finds the error by it in the log.
 */
export function toHttpError(err: unknown, logUnexpected: (err: unknown, ref: string) => void): HttpError {
  if (err instanceof HttpError) return err;
  const code = serviceErrorCode(err);
  const answer = code && BY_CODE[code];
  if (answer) return answer(err as Error);
  if (isDatabaseUnavailable(err)) return DATABASE_UNAVAILABLE(describeError(err));
  const ref = randomBytes(6).toString('hex');
  logUnexpected(err, ref);
  return INTERNAL(ref);
}
