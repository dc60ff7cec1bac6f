// Bearer-token auth. Tokens are compared as SHA-256 digests with timingSafeEqual, so neither the
// token's content nor its length leaks through timing.
import { createHash, timingSafeEqual } from 'node:crypto';
import { UNAUTHORIZED, type HttpError } from './errors.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function bearerGuard(adminToken: string | undefined): (authorization: string) => HttpError | null {
  if (!adminToken) return () => null;
  const expected = digest(adminToken);
  const unauthorized = UNAUTHORIZED();
  return (authorization) => {
    const m = /^Bearer[ ]+(.+)$/i.exec(authorization.trim());
    if (!m) return unauthorized;
    return timingSafeEqual(digest(m[1]!), expected) ? null : unauthorized;
  };
}
