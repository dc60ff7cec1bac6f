// One HTTP exchange on uWS: the request fields copied out synchronously (uWS request objects die
// at the first await), the body read with a hard cap, and corked JSON replies that are safe to
// call after the client has gone.
import type { BodyPool } from './body-pool.ts';
import type { Caller } from '../auth/caller.ts';
import type { HeaderList } from './cors.ts';
import { BODY_LONGER_THAN_DECLARED, BODY_TOO_LARGE, CLIENT_CLOSED, statusLine, type HttpError } from './errors.ts';
import type { HttpResponse } from './uws.ts';
import type { Span } from '@opentelemetry/api';
import { endRequestSpan } from '../telemetry/http-spans.ts';

export interface Req {
  method: string;
  /** Path without the `/api` proxy prefix and without the query string. */
  path: string;
  query: URLSearchParams;
  params: Record<string, string>;
  authorization: string;
  contentType: string;
  /** `content-length` as sent, or -1 when absent. */
  contentLength: number;
  /** The headers the route declared it reads (`Route.headers`), by lower-case name, when sent. */
  headers: Record<string, string>;
  /** The whole body (empty when there is none); rejects with HttpError 413 past the route's cap. */
  body(): Promise<Buffer>;
  /** Where this server parses a big body (its CPU pool, body-pool.ts). */
  offload: BodyPool;
  /** Who is calling, resolved from the bearer token before the handler runs (public routes: nobody). */
  caller: Caller;
}

const JSON_HEADER = 'application/json; charset=utf-8';

/** How a family of paths shapes its errors (the OpenAI-compatible API's envelope): the body and any extra headers. */
export type ErrorShape = (err: HttpError) => { body: unknown; headers?: Record<string, string> };

export class Reply {
  readonly res: HttpResponse;
  aborted = false;
  /** Set once a response has been started (headers written); later replies are ignored. */
  started = false;
  /** Headers every response of this exchange carries (CORS); set by the router, null when none. */
  shared: HeaderList | null = null;
  /** A HEAD request: headers as for GET, no body. */
  head = false;
  /** Set by the router for paths whose errors have another shape than the spec's `{message}`. */
  errorShape: ErrorShape | null = null;
  /**
   * The request's body is still coming: a response sent now (a 401, a 413, an early refusal) closes
   * the connection, so that nothing more of a body nobody will read is received and kept.
   */
  bodyUnread = false;
  private abortHooks: Array<() => void> | null = null;
  /** The request's span while tracing is on (src/telemetry/http-spans.ts): ended with the response. */
  span: Span | null = null;

  constructor(res: HttpResponse) {
    this.res = res;
    // Registered before any await, as uWS requires for every async handler.
    res.onAborted(() => {
      this.aborted = true;
      if (this.span !== null) this.finishSpan(0);
      const hooks = this.abortHooks;
      this.abortHooks = null;
      if (hooks) for (const h of hooks) h();
    });
  }

  /** Runs `fn` when the client goes away (immediately if it already has). */
  onAbort(fn: () => void): void {
    if (this.aborted) return fn();
    (this.abortHooks ??= []).push(fn);
  }

  json(status: number, body: unknown, headers?: Record<string, string>): void {
    this.send(status, JSON.stringify(body), JSON_HEADER, headers);
  }

  error(err: HttpError): void {
    if (this.errorShape === null) return this.json(err.status, { message: err.message }, err.headers);
    const shaped = this.errorShape(err);
    this.json(err.status, shaped.body, shaped.headers);
  }

  text(status: number, body: string | Buffer, contentType: string, headers?: Record<string, string>): void {
    this.send(status, body, contentType, headers);
  }

  /** Ends the request's span (a stream's when it closes): `status` 0 when the client went first. */
  finishSpan(status: number): void {
    const span = this.span;
    if (span === null) return;
    this.span = null;
    endRequestSpan(span, status);
  }

  /** A response without a body (a CORS preflight's 204). */
  empty(status: number, headers: HeaderList): void {
    if (this.aborted || this.started) return;
    this.started = true;
    if (this.span !== null) this.finishSpan(status);
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      writeHeaders(res, headers);
      res.endWithoutBody(0);
    });
  }

  /** Writes the shared headers; call inside the cork that writes the status line. */
  writeShared(res: HttpResponse): void {
    if (this.shared !== null) writeHeaders(res, this.shared);
  }

  private send(status: number, body: string | Buffer, contentType: string, headers?: Record<string, string>): void {
    if (this.aborted || this.started) return;
    this.started = true;
    if (this.span !== null) this.finishSpan(status);
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status)).writeHeader('content-type', contentType);
      // Every JSON answer is one caller's own data (or an error about it): no cache along the way keeps it.
      if (contentType === JSON_HEADER) res.writeHeader('cache-control', 'no-store');
      if (headers) for (const k in headers) res.writeHeader(k, headers[k]!);
      if (this.shared !== null) writeHeaders(res, this.shared);
      if (this.head) res.endWithoutBody(Buffer.byteLength(body), this.bodyUnread);
      else res.end(body, this.bodyUnread);
    });
  }
}

function writeHeaders(res: HttpResponse, list: HeaderList): void {
  for (let i = 0; i < list.length; i += 2) res.writeHeader(list[i]!, list[i + 1]!);
}

const PREALLOCATE_BODY_BYTES = 64 * 1024;

/**
 * Starts reading the body right away (uWS drops data that arrives before `onData` is set) and
 * returns a function giving it. Past `cap` bytes the read stops with 413.
 */
export function bodyReader(res: HttpResponse, reply: Reply, cap: number, contentLength: number): () => Promise<Buffer> {
  if (contentLength > cap) {
    // Nothing of it will be read: the 413 closes the connection.
    reply.bodyUnread = true;
    const err = BODY_TOO_LARGE(formatBytes(cap));
    return () => Promise.reject(err);
  }
  // A big body with a declared length is copied once, straight into its own buffer: no chunk copies
  // to collect and concatenate on the event loop, and it owns its memory, so it can be moved to a
  // worker. Small bodies keep Node's pooled allocations.
  const whole = contentLength >= PREALLOCATE_BODY_BYTES ? Buffer.allocUnsafeSlow(contentLength) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  let settled: { body?: Buffer; error?: HttpError } | null = null;
  let waiter: ((v: { body?: Buffer; error?: HttpError }) => void) | null = null;
  const settle = (v: { body?: Buffer; error?: HttpError }) => {
    if (settled) return;
    settled = v;
    reply.bodyUnread = false;
    if (waiter) waiter(v);
  };
  // (A request that says it has no body has nothing to wait for, whether or not uWS reports its end yet.)
  reply.bodyUnread = contentLength !== 0;
  res.onData((chunk, isLast) => {
    if (settled) return;
    // Answered already (a token that names nobody: 401): keep nothing more of it.
    if (reply.started) return settle({ error: CLIENT_CLOSED() });
    size += chunk.byteLength;
    if (size > cap) {
      settle({ error: BODY_TOO_LARGE(formatBytes(cap)) });
      return;
    }
    // uWS reuses the chunk's memory after this callback: copy it.
    if (whole) {
      if (size > whole.length) return settle({ error: BODY_LONGER_THAN_DECLARED() });
      whole.set(new Uint8Array(chunk), size - chunk.byteLength);
      if (isLast) settle({ body: size === whole.length ? whole : whole.subarray(0, size) });
      return;
    }
    chunks.push(Buffer.from(Buffer.from(chunk)));
    if (isLast) settle({ body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
  });
  reply.onAbort(() => settle({ error: CLIENT_CLOSED() }));
  return () =>
    new Promise<Buffer>((resolve, reject) => {
      const done = (v: { body?: Buffer; error?: HttpError }) => (v.error ? reject(v.error) : resolve(v.body!));
      if (settled) done(settled);
      else waiter = done;
    });
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KB`;
  return `${n} bytes`;
}
