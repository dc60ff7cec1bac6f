// Telling "the database is not there" from every other failure of a query, so the HTTP layer can
// answer 503 with Retry-After (try again soon) instead of 500 (this request is broken). Narrower than
// write-retry.ts's isTransientDbError, which retries anything without an SQLSTATE: here only failures
// that name the connection count, so a bug elsewhere still answers 500.

// SQLSTATE: connection exceptions (08), a statement cancelled (57014: past DATABASE_STATEMENT_TIMEOUT_MS,
// src/db/postgres-pool.ts), the server shutting down or still starting (57P01–57P03), too many connections (53300).
const UNAVAILABLE_SQLSTATE = /^(08...|57014|57P0[1-3]|53300)$/;

// Socket errors of a connect or of a connection that dropped (TCP, and the embedded database's unix socket).
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

// What `pg` and `pg-pool` say, without a code, when a connection ends or cannot be made in time.
const PG_CONNECTION_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Query read timeout/,
  /^Client has encountered a connection error/,
  // A connect past its deadline (postgres-pool.ts).
  /^timeout expired$/,
];

export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; syscall?: unknown; message?: unknown; errors?: unknown; name?: unknown };
  // Connecting to a name with several addresses fails with an AggregateError of one error per address.
  if (Array.isArray(e.errors) && e.errors.length > 0) return e.errors.every(isDatabaseUnavailable);
  if (typeof e.code === 'string') {
    if (/^[0-9A-Z]{5}$/.test(e.code)) return UNAVAILABLE_SQLSTATE.test(e.code);
    if (SOCKET_CODES.has(e.code)) return true;
    // A unix socket whose file is gone (the embedded server stopped).
    if (e.code === 'ENOENT' && e.syscall === 'connect') return true;
  }
  // The control connection's own deadline (src/db/control-pool.ts) on a database that does not answer.
  if (e.name === 'DeadlineError') return true;
  return typeof e.message === 'string' && PG_CONNECTION_MESSAGES.some((re) => re.test(e.message as string));
}
