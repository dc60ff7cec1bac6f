// A thin router over one uWS catch-all handler: exact segments and `:params`, the same table at the
// server root and under `/api`, 404 for unknown paths and 405 for known paths with another method.
// HEAD runs the GET route without sending its body; a CORS preflight from an allowed origin is
// answered here, before auth, and every other response carries the CORS policy's headers.
import type { BodyPool } from './body-pool.ts';
import { PUBLIC_CALLER, type Caller } from '../auth/caller.ts';
import type { CorsPolicy } from './cors.ts';
import { answerAtOnce, noIdempotencyKeyHeader, withoutIdempotencyKey, type StartShedding } from './early-refusal.ts';
import { HttpError, METHOD_NOT_ALLOWED, MALFORMED_PATH, NO_ROUTE, UNAUTHORIZED } from './errors.ts';
import { bodyReader, Reply, type ErrorShape, type Req } from './reply.ts';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.ts';
import { startRequestSpan, TRACE_ID_HEADER, traceIdOf } from '../telemetry/http-spans.ts';
import { tracingOn, withSpan } from '../telemetry/tracing.ts';

export type Handler = (req: Req, reply: Reply) => unknown;

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  path: string;
  handler: Handler;
  /** Body cap in bytes; routes that take no body keep the small default. */
  bodyLimit?: number;
  /** Reachable without the bearer token. */
  public?: boolean;
  /** Request headers the handler reads (lower case), copied into `req.headers` when present. */
  headers?: readonly string[];
  /**
   * The route starts a run: true when this request can only start a new one (not join or retry one
   * that is going), so that it may be refused before its body is read (RouterOptions.shed).
   */
  startsRun?: (req: Req) => boolean;
}

interface Compiled {
  route: Route;
  segments: string[];
}

export interface RouterOptions {
  defaultBodyLimit: number;
  /**
   * Who is calling (the Authorization header), null when nobody: 401. Synchronous for a token it
   * knows (the admin token, a cached key), so a request pays for auth with no await.
   */
  authenticate(authorization: string): Caller | null | Promise<Caller | null>;
  onError(err: unknown, req: Req): HttpError;
  /** null: CORS off, no CORS headers and no preflight answers. */
  cors?: CorsPolicy | null;
  /** The server's pool for big bodies (readJson). */
  bodies: BodyPool;
  /** Refuses starts (Route.startsRun) while draining or overloaded, before their body is read. */
  shed?: StartShedding;
  /** Paths (after `/api`) whose errors, 401/404/405 included, take another shape than `{message}`. */
  errorShapes?: ReadonlyArray<{ prefix: string; shape: ErrorShape }>;
}

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT']);
const EMPTY_BODY = () => Promise.resolve(Buffer.alloc(0));

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

/** 405, with the `Allow` header HTTP requires: the methods the path has (HEAD with GET). */
function notAllowed(compiled: readonly Compiled[], segments: string[], method: string, path: string): HttpError {
  const methods = new Set<string>();
  for (const c of compiled) if (match(c, segments, {})) methods.add(c.route.method);
  if (methods.has('GET')) methods.add('HEAD');
  const err = METHOD_NOT_ALLOWED(method, path);
  return new HttpError(err.code, err.status, err.message, { ...err.headers, allow: [...methods].join(', ') });
}

function match(compiled: Compiled, segments: string[], params: Record<string, string>): boolean {
  const pattern = compiled.segments;
  if (pattern.length !== segments.length) return false;
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p.charCodeAt(0) === 58 /* : */) params[p.slice(1)] = decodeURIComponent(segments[i]!);
    else if (p !== segments[i]) return false;
  }
  return true;
}

/**
 * The start routes a refusal can answer at the door: POST at a path without parameters (at the root
 * and under `/api`), a start whenever no Idempotency-Key is sent, errors in the spec's shape.
 */
function doorStarts(routes: readonly Route[], errorShapes: RouterOptions['errorShapes']): Set<string> {
  const paths = new Set<string>();
  for (const r of routes) {
    if (r.method !== 'POST' || r.startsRun !== withoutIdempotencyKey || r.path.includes(':')) continue;
    if (errorShapes?.some((s) => r.path.startsWith(s.prefix))) continue;
    paths.add(r.path).add(`/api${r.path}`);
  }
  return paths;
}

export function mountRoutes(app: TemplatedApp, routes: Route[], opts: RouterOptions): void {
  const compiled: Compiled[] = routes.map((route) => ({ route, segments: split(route.path) }));
  const cors = opts.cors ?? null;
  const shed = opts.shed;
  const atTheDoor = doorStarts(routes, opts.errorShapes);

  app.any('/*', (res: HttpResponse, uReq: HttpRequest) => {
    // A start refused while the instance sheds (a flood that lasts, a drain, MAX_ACTIVE_RUNS) is answered
    // before anything is made for it: its path, method and two headers read, its caller known at once,
    // an answer serialised once. Otherwise (a token to look up, a traced request) the ordinary path below
    // refuses it, still before its body is read.
    if (shed !== undefined && shed.armed() && atTheDoor.has(uReq.getUrl()) && uReq.getMethod() === 'post' && noIdempotencyKeyHeader(uReq) && !tracingOn()) {
      const who = opts.authenticate(uReq.getHeader('authorization'));
      if (who !== null && !(who instanceof Promise)) {
        const answer = shed.answer(who.userId);
        if (answer !== null) {
          shed.sent(answer);
          return answerAtOnce(res, answer, cors === null ? null : cors.response(uReq.getHeader('origin')));
        }
      }
    }
    const method = uReq.getMethod().toUpperCase();
    const reply = new Reply(res);
    if (cors !== null) {
      const origin = uReq.getHeader('origin');
      if (method === 'OPTIONS') {
        const preflight = cors.preflight(origin);
        if (preflight) return reply.empty(204, preflight);
      }
      reply.shared = cors.response(origin);
    }
    const head = method === 'HEAD';
    reply.head = head;
    const routeMethod = head ? 'GET' : method;
    let path = uReq.getUrl();
    if (path === '/api' || path.startsWith('/api/')) path = path.slice(4) || '/';
    if (opts.errorShapes) for (const s of opts.errorShapes) if (path.startsWith(s.prefix)) reply.errorShape = s.shape;
    const query = new URLSearchParams(uReq.getQuery() ?? '');
    const authorization = uReq.getHeader('authorization');
    const contentType = uReq.getHeader('content-type');
    const lengthHeader = uReq.getHeader('content-length');
    const contentLength = lengthHeader ? Number(lengthHeader) : -1;

    const segments = split(path);
    const params: Record<string, string> = {};
    let found: Compiled | undefined;
    let pathKnown = false;
    try {
      for (const c of compiled) {
        if (!match(c, segments, params)) continue;
        pathKnown = true;
        if (c.route.method === routeMethod) {
          found = c;
          break;
        }
      }
    } catch {
      return reply.error(MALFORMED_PATH());
    }
    const req: Req = { method, path, query, params, authorization, contentType, contentLength, headers: {}, body: EMPTY_BODY, offload: opts.bodies, caller: PUBLIC_CALLER };
    if (found && tracingOn()) traceRequest(reply, method, found.route.path, path, uReq.getHeader('traceparent'));
    // Auth before 404/405, so an unauthenticated client cannot map the API.
    const who = found?.route.public ? PUBLIC_CALLER : opts.authenticate(authorization);
    if (who === null) return reply.error(UNAUTHORIZED());
    if (!found) {
      const unrouted = () => (pathKnown ? notAllowed(compiled, segments, method, path) : NO_ROUTE(method, path));
      if (!(who instanceof Promise)) return reply.error(unrouted());
      return void who.then(
        (caller) => reply.error(caller ? unrouted() : UNAUTHORIZED()),
        (err: unknown) => reply.error(opts.onError(err, req)),
      );
    }
    const route = found.route;
    const wanted = route.headers;
    if (wanted) {
      // forEach, not getHeader: a header sent empty must be told from one not sent at all.
      uReq.forEach((name, value) => {
        if (wanted.includes(name)) req.headers[name] = value;
      });
    }
    // A caller known at once (no token lookup pending) whose start is refused is answered before its
    // body is read.
    if (!(who instanceof Promise) && refusedStart(route, req, reply, who.userId, shed)) return;
    // The body is read from now on even while a token is looked up: uWS would drop it otherwise.
    if (BODY_METHODS.has(method)) {
      req.body = bodyReader(res, reply, route.bodyLimit ?? opts.defaultBodyLimit, contentLength);
    }
    if (!(who instanceof Promise)) {
      req.caller = who;
      return handle(route, req, reply, opts);
    }
    who.then(
      (caller) => {
        if (!caller) return reply.error(UNAUTHORIZED());
        // Its caller known: refused before the body is parsed (what arrived of it is dropped, and a
        // body still coming closes the connection).
        if (refusedStart(route, req, reply, caller.userId, shed)) return;
        req.caller = caller;
        handle(route, req, reply, opts);
      },
      (err: unknown) => reply.error(opts.onError(err, req)),
    );
  });
}

/** A start of `owner` the shedding refuses now: answered (true), else left to the handler. */
function refusedStart(route: Route, req: Req, reply: Reply, owner: string, shed: StartShedding | undefined): boolean {
  if (route.startsRun === undefined || shed === undefined || !shed.armed()) return false;
  const answer = shed.answer(owner);
  if (answer === null || !route.startsRun(req)) return false;
  shed.sent(answer);
  reply.text(answer.status, answer.bytes, answer.contentType, answer.headers);
  return true;
}

/** Tracing: the request's span, its trace id answered in `x-trace-id` on every response of the exchange. */
function traceRequest(reply: Reply, method: string, route: string, path: string, traceparent: string): void {
  const span = startRequestSpan(method, route, path, traceparent);
  if (span === null) return;
  reply.span = span;
  reply.shared = [...(reply.shared ?? []), TRACE_ID_HEADER, traceIdOf(span)];
}

function handle(route: Route, req: Req, reply: Reply, opts: RouterOptions): void {
  // The handler runs with the request's span active: the spans it starts (a run's) are its children.
  if (reply.span !== null) return withSpan(reply.span, () => handleNow(route, req, reply, opts));
  handleNow(route, req, reply, opts);
}

function handleNow(route: Route, req: Req, reply: Reply, opts: RouterOptions): void {
  let result: unknown;
  try {
    result = route.handler(req, reply);
  } catch (err) {
    return reply.error(opts.onError(err, req));
  }
  if (result instanceof Promise) result.catch((err) => reply.error(opts.onError(err, req)));
}
