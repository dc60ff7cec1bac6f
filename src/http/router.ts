// A thin router over one uWS catch-all handler: exact segments and `:params`, the same table at the
// server root and under `/api`, 404 for unknown paths and 405 for known paths with another method.
import { HttpError } from './errors.ts';
import { bodyReader, Reply, type Req } from './reply.ts';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.ts';

export type Handler = (req: Req, reply: Reply) => unknown;

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  path: string;
  handler: Handler;
  /** Body cap in bytes; routes that take no body keep the small default. */
  bodyLimit?: number;
  /** Reachable without the bearer token. */
  public?: boolean;
}

interface Compiled {
  route: Route;
  segments: string[];
}

export interface RouterOptions {
  defaultBodyLimit: number;
  /** Returns an HttpError when the request may not pass (auth); runs synchronously. */
  guard(authorization: string): HttpError | null;
  onError(err: unknown, req: Req): HttpError;
}

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT']);
const EMPTY_BODY = () => Promise.resolve(Buffer.alloc(0));

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
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

export function mountRoutes(app: TemplatedApp, routes: Route[], opts: RouterOptions): void {
  const compiled: Compiled[] = routes.map((route) => ({ route, segments: split(route.path) }));

  app.any('/*', (res: HttpResponse, uReq: HttpRequest) => {
    const method = uReq.getMethod().toUpperCase();
    let path = uReq.getUrl();
    if (path === '/api' || path.startsWith('/api/')) path = path.slice(4) || '/';
    const query = new URLSearchParams(uReq.getQuery() ?? '');
    const authorization = uReq.getHeader('authorization');
    const contentType = uReq.getHeader('content-type');
    const lengthHeader = uReq.getHeader('content-length');
    const contentLength = lengthHeader ? Number(lengthHeader) : -1;
    const reply = new Reply(res);

    const segments = split(path);
    const params: Record<string, string> = {};
    let found: Compiled | undefined;
    let pathKnown = false;
    try {
      for (const c of compiled) {
        if (!match(c, segments, params)) continue;
        pathKnown = true;
        if (c.route.method === method) {
          found = c;
          break;
        }
      }
    } catch {
      return reply.error(new HttpError(400, 'malformed path: bad percent-encoding'));
    }
    const req: Req = { method, path, query, params, authorization, contentType, contentLength, body: EMPTY_BODY };
    // Auth before 404/405, so an unauthenticated client cannot map the API.
    if (!found?.route.public) {
      const denied = opts.guard(authorization);
      if (denied) return reply.error(denied);
    }
    if (!found) {
      const err = pathKnown
        ? new HttpError(405, `method ${method} is not allowed on ${path}`)
        : new HttpError(404, `no route for ${method} ${path}`);
      return reply.error(err);
    }
    if (BODY_METHODS.has(method)) {
      req.body = bodyReader(res, reply, found.route.bodyLimit ?? opts.defaultBodyLimit, contentLength);
    }
    let result: unknown;
    try {
      result = found.route.handler(req, reply);
    } catch (err) {
      return reply.error(opts.onError(err, req));
    }
    if (result instanceof Promise) result.catch((err) => reply.error(opts.onError(err, req)));
  });
}
