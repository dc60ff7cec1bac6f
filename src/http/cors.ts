// CORS for web pages on other origins (CORS_ORIGINS). The router asks the policy once per request
// and the reply writes what it got on every response, JSON or SSE, errors included. With CORS off
// there is no policy at all, so a request pays nothing for it.
import type { Config } from '../base/config.ts';

/** Headers as a flat [name, value, name, value, …] list, written in order by the reply. */
export type HeaderList = readonly string[];

export const CORS_ALLOW_METHODS = 'GET, HEAD, POST, PATCH, PUT, DELETE, OPTIONS';
export const CORS_ALLOW_HEADERS = 'authorization, content-type, idempotency-key, last-event-id';
/** Response headers a browser client reads besides the CORS-safelisted ones. */
export const CORS_EXPOSE_HEADERS = 'retry-after, idempotent-replayed, www-authenticate';
/** How long a browser may reuse a preflight (browsers cap it: Chromium at 2 h). */
export const CORS_MAX_AGE_SECONDS = 86_400;

export interface CorsPolicy {
  /** Headers for a response to a request with this `Origin` ('' when the request has none). */
  response(origin: string): HeaderList;
  /** Headers of a preflight answer, or null when the origin is not allowed (then it is routed as usual). */
  preflight(origin: string): HeaderList | null;
}

/** Responses differ by Origin whenever CORS is on, so a shared cache must key on it. */
const VARY_ONLY: HeaderList = ['vary', 'Origin'];

export function corsPolicy(origins: Config['CORS_ORIGINS']): CorsPolicy | null {
  if (origins === undefined) return null;
  const allowed = origins === '*' ? null : new Set(origins);
  const allows = (origin: string) => origin !== '' && (allowed === null || allowed.has(origin));
  return {
    response(origin) {
      if (!allows(origin)) return VARY_ONLY;
      // The origin is echoed, not `*`, so pages that send credentials are served too.
      return ['access-control-allow-origin', origin, 'vary', 'Origin', 'access-control-expose-headers', CORS_EXPOSE_HEADERS];
    },
    preflight(origin) {
      if (!allows(origin)) return null;
      return [
        'access-control-allow-origin',
        origin,
        'vary',
        'Origin',
        'access-control-allow-methods',
        CORS_ALLOW_METHODS,
        'access-control-allow-headers',
        CORS_ALLOW_HEADERS,
        'access-control-max-age',
        String(CORS_MAX_AGE_SECONDS),
      ];
    },
  };
}
