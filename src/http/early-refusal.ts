// The refusal of a start decided before anything else is touched: while the instance drains, is at
// MAX_ACTIVE_RUNS or sheds a flood (the caller's share of it: src/admission/), a request on a route that
// starts a run is answered from its headers alone, with an answer built once here. Its body is never read (a client may still be sending it), nothing is
// parsed, no actor hears of it and the database is not asked: a flood of starts costs its headers,
// not the running streams' latency. A request that might not start a new run (an Idempotency-Key
// retry of a running run, a run that joins one going here) is left to the ordinary path, which
// attaches it or refuses it with the same answer after the body is read.
import { AT_CAPACITY, DRAINING, OVERLOADED, type HttpError } from './errors.ts';
import { IDEMPOTENCY_KEY_HEADER } from './idempotency.ts';
import type { Req } from './reply.ts';

/** A whole answer, serialised once. */
export interface PrebuiltAnswer {
  reason: 'draining' | 'capacity' | 'overload';
  status: number;
  body: string;
  contentType: string;
  headers: Readonly<Record<string, string>>;
}

/** What the router asks before reading a start's body (RouterOptions.shed). */
export interface StartShedding {
  /** The answer for a new run of the user `owner` right now, or null: take the request the ordinary way. Not yet counted. */
  answer(owner: string): PrebuiltAnswer | null;
  /** `answer` was sent. */
  sent(answer: PrebuiltAnswer): void;
}

function prebuilt(reason: PrebuiltAnswer['reason'], err: HttpError): PrebuiltAnswer {
  // The same body reply.error writes for these errors.
  return { reason, status: err.status, body: JSON.stringify({ message: err.message }), contentType: 'application/json; charset=utf-8', headers: Object.freeze({ ...err.headers }) };
}

/** What the shedding asks of the admission (src/admission/admission.ts), which HTTP may not import. */
export interface SheddingSignal {
  /** Why a new run of `owner` would be refused now, or null. */
  shedding(owner: string): PrebuiltAnswer['reason'] | null;
  /** Counts a refusal (css_runs_refused_total). */
  count(reason: PrebuiltAnswer['reason']): void;
  /** The capacity refusal's message (it names the limit). */
  readonly capacityMessage: string;
}

export function startShedding(admission: SheddingSignal): StartShedding {
  const answers = { draining: prebuilt('draining', DRAINING()), capacity: prebuilt('capacity', AT_CAPACITY(admission.capacityMessage)), overload: prebuilt('overload', OVERLOADED()) };
  return {
    answer(owner) {
      const reason = admission.shedding(owner);
      return reason === null ? null : answers[reason];
    },
    sent(answer) {
      admission.count(answer.reason);
    },
  };
}

/** Route.startsRun for the completion routes: without an Idempotency-Key a request cannot be a retry of a running run. */
export const withoutIdempotencyKey = (req: Req): boolean => req.headers[IDEMPOTENCY_KEY_HEADER] === undefined;
