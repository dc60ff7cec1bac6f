// The service's errors carry a stable `code`, as undici's UND_ERR_*: a caller tells failures apart by
// code, not by importing the class of the module that threw (so src/http maps domain failures to answers
// without importing any service module), and a log line or a test names the failure the same way.
// Codes live here, in one list, so a grep for one finds every thrower and every mapping. Each starts
// with CSS_ERR_, which no SQLSTATE or socket code does (src/db/unavailable.ts and write-retry.ts read
// `code` too). The HTTP catalogue's codes (CSS_*, src/http/errors.ts) are the answers, these the causes.

export const ErrorCodes = {
  /** The cluster (Redis, or the instance that owns a run) is out of reach: retry soon. */
  CLUSTER_UNAVAILABLE: 'CSS_ERR_CLUSTER_UNAVAILABLE',
  REDIS_UNAVAILABLE: 'CSS_ERR_REDIS_UNAVAILABLE',
  OWNER_UNREACHABLE: 'CSS_ERR_OWNER_UNREACHABLE',
  BAD_OWNER_REPLY: 'CSS_ERR_BAD_OWNER_REPLY',
  /** An Idempotency-Key sent with another request, not claimable now, or expired while its run went on. */
  IDEMPOTENCY_KEY_REUSED: 'CSS_ERR_IDEMPOTENCY_KEY_REUSED',
  IDEMPOTENCY_KEY_UNCLAIMED: 'CSS_ERR_IDEMPOTENCY_KEY_UNCLAIMED',
  IDEMPOTENCY_KEY_EXPIRED: 'CSS_ERR_IDEMPOTENCY_KEY_EXPIRED',
  /** A write of a run whose chat a later run has taken over. */
  FENCED_WRITE: 'CSS_ERR_FENCED_WRITE',
  /** The control connection's deadline passed on a database that does not answer. */
  DB_DEADLINE: 'CSS_ERR_DB_DEADLINE',
  CONFIG: 'CSS_ERR_CONFIG',
  PROVIDER: 'CSS_ERR_PROVIDER',
  ENGINE: 'CSS_ERR_ENGINE',
  TOOL: 'CSS_ERR_TOOL',
  /** A run failed inside; its outcome says how. */
  RUN_FAILED: 'CSS_ERR_RUN_FAILED',
  RUN_RESULT_DECODE: 'CSS_ERR_RUN_RESULT_DECODE',
  NATIVE_SERVER: 'CSS_ERR_NATIVE_SERVER',
  LISTEN: 'CSS_ERR_LISTEN',
  /** A provider's whole (non-streamed) body went past MAX_WHOLE_BODY_BYTES. */
  PROVIDER_BODY_TOO_LARGE: 'CSS_ERR_PROVIDER_BODY_TOO_LARGE',
  /** A CPU task's worker thread went past its heap cap and was ended. */
  WORKER_HEAP_LIMIT: 'CSS_ERR_WORKER_HEAP_LIMIT',
  /** A call's chat was deleted before the call was recorded. */
  CHAT_GONE: 'CSS_ERR_CHAT_GONE',
  /** A multi-row write that will not go as one group: each member is written alone. */
  GROUP_REFUSED: 'CSS_ERR_GROUP_REFUSED',
  /** Another live instance of the cluster beats under this INSTANCE_ID. */
  INSTANCE_ID_IN_USE: 'CSS_ERR_INSTANCE_ID_IN_USE',
  /** The web client's files are missing from the checkout or from node_modules. */
  WEB_CLIENT: 'CSS_ERR_WEB_CLIENT',
  /**
   * A run asked to end early (a user's stop or the runtime's cancel): actors/runtime/actor.ts's
   * RunCancelled carries this string itself, as the runtime imports nothing of the service.
   */
  RUN_CANCELLED: 'CSS_ERR_RUN_CANCELLED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export class ServiceError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** The code of a service error, or undefined for anything else (a driver's error, a bug). */
export const serviceErrorCode = (err: unknown): ErrorCode | undefined => (err instanceof ServiceError ? err.code : undefined);
