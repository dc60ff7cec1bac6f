// The refusal of a start decided before anything else is touched: while the instance drains, is at
// MAX_ACTIVE_RUNS or sheds a flood (the caller's share of it: src/admission/), a request on a route that
// starts a run is answered from its headers alone, with an answer built once here. Its body is never read (a client may still be sending it), nothing is
// parsed, no actor hears of it and the database is not asked: a flood of starts costs its headers,
// not the running streams' latency. A request that might not start a new run (an Idempotency-Key
// retry of a running run, a run that joins one going here) is left to the ordinary path, which
// attaches it or refuses it with the same answer after the body is read.
import type { HeaderList } from './cors.ts';
import { AT_CAPACITY, DRAINING, OVERLOADED, statusLine, type HttpError } from './errors.ts';
import { IDEMPOTENCY_KEY_HEADER } from './idempotency.ts';
import type { Req } from './reply.ts';
import type { HttpRequest, HttpResponse } from './uws.ts';

/** A whole answer, serialised once. */
export interface PrebuiltAnswer {
  reason: 'draining' | 'capacity' | 'overload';
  status: number;
  body: string;
  contentType: string;
  headers: Readonly<Record<string, string>>;
  /** The same, as written by `answerAtOnce`: status line, header names and values in turn (content type first), body bytes. */
  readonly statusLine: string;
  readonly headerList: readonly string[];
  readonly bytes: Buffer;
}

/** What the router asks before reading a start's body (RouterOptions.shed). */
export interface StartShedding {
  /**
   * False while no start at all would be refused (no drain, below MAX_ACTIVE_RUNS, nothing waits):
   * the router asks nothing more of a request then, so the refusal's fast path costs the ordinary
   * load one call.
   */
  armed(): boolean;
  /** The answer for a new run of the user `owner` right now, or null: take the request the ordinary way. Not yet counted. */
  answer(owner: string): PrebuiltAnswer | null;
  /** `answer` was sent. */
  sent(answer: PrebuiltAnswer): void;
}

const JSON_TYPE = 'application/json; charset=utf-8';

function prebuilt(reason: PrebuiltAnswer['reason'], err: HttpError): PrebuiltAnswer {
  // The same body and headers reply.error writes for these errors.
  const body = JSON.stringify({ message: err.message });
  const headerList = ['content-type', JSON_TYPE, 'cache-control', 'no-store'];
  for (const k in err.headers) headerList.push(k, err.headers[k]!);
  return {
    reason, status: err.status, body, contentType: JSON_TYPE, headers: Object.freeze({ ...err.headers }),
    statusLine: statusLine(err.status), headerList: Object.freeze(headerList), bytes: Buffer.from(body),
  };
}

/**
 * Writes `answer` on `res` in the handler's own turn, with no Reply and nothing else made for it:
 * the refusal of a start at the door (the router's fast path). `shared`: the CORS headers, if any.
 * The rest of a body still coming is skipped by uWS, and the connection serves the next request.
 */
export function answerAtOnce(res: HttpResponse, answer: PrebuiltAnswer, shared: HeaderList | null): void {
  res.cork(() => {
    res.writeStatus(answer.statusLine);
    const list = answer.headerList;
    for (let i = 0; i < list.length; i += 2) res.writeHeader(list[i]!, list[i + 1]!);
    if (shared !== null) for (let i = 0; i < shared.length; i += 2) res.writeHeader(shared[i]!, shared[i + 1]!);
    res.end(answer.bytes);
  });
}

/**
 * The same question as withoutIdempotencyKey, asked of uWS's request before anything is copied out of
 * it. (An Idempotency-Key sent empty reads as none here: refused with the 503 instead of the 400 the
 * ordinary path would give it, a refusal either way.)
 */
export const noIdempotencyKeyHeader = (uReq: HttpRequest): boolean => uReq.getHeader(IDEMPOTENCY_KEY_HEADER) === '';

/** What the shedding asks of the admission (src/admission/admission.ts), which HTTP may not import. */
export interface SheddingSignal {
  /** False when no start at all would be refused now, whoever sends it (cheap: read on every request). */
  mayShed(): boolean;
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
    armed: () => admission.mayShed(),
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
