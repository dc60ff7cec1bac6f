// The catalogue of the service's HTTP errors, as fastify's lib/errors.js: each has a code, a status
// and a message builder, defined once here, so a grep for a code finds every place that answers it and
// a status cannot drift from its message. Handlers throw `CATALOGUE_ENTRY(args)`; the router answers.
// The other layers throw their own errors with a code (src/base/errors.ts); `toHttpError` maps them by code.
export { ACTIVE_CHAT_STREAM_NOT_FOUND, ACTIVE_SEARCH_STREAM_NOT_FOUND, CHAT_NOT_FOUND, SEARCH_NOT_FOUND } from '../base/messages.ts';

export class HttpError extends Error {
  readonly code: string;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;
  constructor(code: string, status: number, message: string, headers?: Record<string, string>) {
    super(message);
    this.name = 'HttpError';
    this.code = code;
    this.status = status;
    this.headers = headers;
  }
}

/** One catalogue entry: call it with the message's arguments to get the error to throw. */
export interface ErrorDef<A extends unknown[]> {
  (...args: A): HttpError;
  readonly code: string;
  readonly status: number;
}

/** Defines a coded error; `headers` go on every answer of it (e.g. Retry-After). */
export function createError<A extends unknown[]>(code: string, status: number, message: (...args: A) => string, headers?: Record<string, string>): ErrorDef<A> {
  // Each error gets its own headers object: a layer that adds one must not change the catalogue.
  const make = (...args: A) => new HttpError(code, status, message(...args), headers && { ...headers });
  return Object.assign(make, { code, status });
}

const RETRY_SOON = { 'retry-after': '2' };
const verbatim = (message: string) => message;

// ---- the request itself ----------------------------------------------------------------------
export const BAD_REQUEST = createError('CSS_BAD_REQUEST', 400, verbatim);
export const INVALID_BODY = createError('CSS_INVALID_BODY', 400, (what: string, issues: string) => `invalid ${what}: ${issues}`);
export const BODY_TOO_LARGE = createError('CSS_BODY_TOO_LARGE', 413, (limit: string) => `request body is larger than the ${limit} limit`);
export const BODY_LONGER_THAN_DECLARED = createError('CSS_BODY_LONGER_THAN_DECLARED', 400, () => 'request body is longer than its content-length');
export const CLIENT_CLOSED = createError('CSS_CLIENT_CLOSED', 400, () => 'client closed the connection');
export const UNSUPPORTED_MEDIA_TYPE = createError('CSS_UNSUPPORTED_MEDIA_TYPE', 415, (type: string) => `content-type must be application/json (got ${type || 'none'})`);
export const MALFORMED_PATH = createError('CSS_MALFORMED_PATH', 400, () => 'malformed path: bad percent-encoding');
export const NO_ROUTE = createError('CSS_NO_ROUTE', 404, (method: string, path: string) => `no route for ${method} ${path}`);
export const METHOD_NOT_ALLOWED = createError('CSS_METHOD_NOT_ALLOWED', 405, (method: string, path: string) => `method ${method} is not allowed on ${path}`);
export const UNAUTHORIZED = createError('CSS_UNAUTHORIZED', 401, () => 'unauthorized', { 'www-authenticate': 'Bearer' });
export const NOT_FOUND = createError('CSS_NOT_FOUND', 404, verbatim);
export const CONFLICT = createError('CSS_CONFLICT', 409, verbatim);

// ---- Idempotency-Key ---------------------------------------------------------------------------
export const BAD_IDEMPOTENCY_KEY = createError('CSS_BAD_IDEMPOTENCY_KEY', 400, () => 'invalid Idempotency-Key header: must be 1–255 printable ASCII characters');
export const IDEMPOTENCY_KEY_REUSED = createError('CSS_IDEMPOTENCY_KEY_REUSED', 422, () => 'Idempotency-Key was used with a different request');
export const IDEMPOTENCY_KEY_UNCLAIMED = createError('CSS_IDEMPOTENCY_KEY_UNCLAIMED', 503, () => 'Idempotency-Key could not be claimed: try again');
export const IDEMPOTENCY_KEY_EXPIRED = createError('CSS_IDEMPOTENCY_KEY_EXPIRED', 409, () => 'the Idempotency-Key expired while its run was going: send a new key');

// ---- users --------------------------------------------------------------------------------------
export const ADMIN_REQUIRED = createError('CSS_ADMIN_REQUIRED', 403, () => 'admin token required');
export const USER_NOT_FOUND = createError('CSS_USER_NOT_FOUND', 404, () => 'user not found');
export const USERS_NEED_ADMIN_TOKEN = createError('CSS_USERS_NEED_ADMIN_TOKEN', 400, () => 'users need ADMIN_TOKEN to be set');
export const USER_RUNS_LIMIT = createError('CSS_USER_RUNS_LIMIT', 429, verbatim, { 'retry-after': '5' });
/** The budget is per UTC day: retry when the next one starts. */
export const USER_TOKENS_EXHAUSTED = Object.assign(
  (message: string) => new HttpError('CSS_USER_TOKENS_EXHAUSTED', 429, message, { 'retry-after': String(secondsToUtcMidnight(Date.now())) }),
  { code: 'CSS_USER_TOKENS_EXHAUSTED', status: 429 },
);

/** Whole seconds from `nowMs` to the next UTC midnight (at least 1). */
export function secondsToUtcMidnight(nowMs: number): number {
  const next = new Date(nowMs);
  next.setUTCHours(24, 0, 0, 0);
  return Math.max(1, Math.ceil((next.getTime() - nowMs) / 1000));
}

// ---- what this instance is configured with -----------------------------------------------------
export const PROVIDER_NOT_CONFIGURED = createError('CSS_PROVIDER_NOT_CONFIGURED', 400, (provider: string, variable: string) => `${provider} is not configured: set ${variable}`);
export const SEARCH_ENGINE_MISSING = createError('CSS_SEARCH_ENGINE_MISSING', 503, (variables: string) => `search runs need engine_a: set ${variables}`);
export const TITLE_PROVIDER_MISSING = createError('CSS_TITLE_PROVIDER_MISSING', 503, (variable: string) => `title suggestion needs provider_a: set ${variable}`);

// ---- runs (src/http/outcomes.ts maps each run outcome to one of these) -------------------------
export const RUN_UNAVAILABLE = createError('CSS_RUN_UNAVAILABLE', 503, verbatim);
export const AT_CAPACITY = createError('CSS_AT_CAPACITY', 503, verbatim, { 'retry-after': '1' });
export const SHUTTING_DOWN = createError('CSS_SHUTTING_DOWN', 503, verbatim, { 'retry-after': '5' });
export const DRAINING = createError('CSS_DRAINING', 503, () => 'server is draining', { 'retry-after': '5' });
export const OVERLOADED = createError('CSS_OVERLOADED', 503, () => 'server is overloaded, retry later', { 'retry-after': '1' });
export const PROVIDER_TIMEOUT = createError('CSS_PROVIDER_TIMEOUT', 504, verbatim);
export const PROVIDER_RATE_LIMITED = createError('CSS_PROVIDER_RATE_LIMITED', 429, verbatim);
export const PROVIDER_FAILED = createError('CSS_PROVIDER_FAILED', 502, verbatim);
export const RUN_CANCELLED = createError('CSS_RUN_CANCELLED', 503, verbatim);
/** A run cut by its database: its message already says "database unavailable: …". */
export const RUN_DATABASE_UNAVAILABLE = createError('CSS_RUN_DATABASE_UNAVAILABLE', 503, verbatim, RETRY_SOON);
/** A run that failed inside: its message is the run's own. */
export const INTERNAL_RUN = createError('CSS_RUN_FAILED', 500, verbatim);

// ---- what the service depends on ---------------------------------------------------------------
export const CLUSTER_UNAVAILABLE = createError('CSS_CLUSTER_UNAVAILABLE', 503, verbatim, RETRY_SOON);
export const DATABASE_UNAVAILABLE = createError('CSS_DATABASE_UNAVAILABLE', 503, (reason: string) => `database unavailable: ${reason}`, RETRY_SOON);
export const INTERNAL = createError('CSS_INTERNAL', 500, (ref: string) => `internal error (ref ${ref}); the server's log has it under this ref`);

/** Shorthands the routes use most. */
export const badRequest = BAD_REQUEST;
export const notFound = NOT_FOUND;
export const conflict = CONFLICT;

export const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  502: '502 Bad Gateway',
  503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
};

export const statusLine = (status: number) => STATUS_TEXT[status] ?? `${status} Status`;
