// Single sign-on: a JWT bearer token checked against the identity provider's JWKS (see
// docs/operations.md, "Users and single sign-on"). Every failure is `null`, never a throw: the caller
// answers 401 exactly as for a wrong token, and nothing tells a client which check failed.
import { jwtVerify, type JWTPayload } from 'jose';
import type { Logger } from 'pino';
import { createLogger } from '../base/log.ts';
import { createJwks } from './jwks.ts';
import { TokenCache } from './token-cache.ts';

export interface JwtIdentity {
  sub: string;
  name: string;
  /** The token's `exp`, seconds since the epoch. */
  expiresAt: number;
}

export interface JwtVerifierOptions {
  jwksUrl: string;
  issuer?: string;
  audience?: string;
  /** Clock skew allowed on `exp` and `nbf`. */
  leewaySec?: number;
  /** Milliseconds since the epoch. */
  now?: () => number;
  log?: Pick<Logger, 'warn'>;
  /** Least time between two JWKS fetches. */
  jwksCooldownMs?: number;
  /** Verified tokens kept. */
  maxCached?: number;
}

export interface JwtVerifierStats {
  /** Verifications answered from the cache, with no signature check. */
  cacheHits: number;
  /** Signature checks that passed (each fills the cache). */
  verified: number;
  /** JWKS fetch attempts, failed ones included. */
  jwksFetches: number;
}

export interface JwtVerifier {
  verify(token: string): Promise<JwtIdentity | null>;
  stats(): JwtVerifierStats;
  close(): void;
}

/** Asymmetric only: `none` has no signature, and an HS* key would be a secret shared with every client. */
const ALGORITHMS = ['RS256', 'ES256'];

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

function identity(payload: JWTPayload): JwtIdentity | null {
  const sub = text(payload.sub);
  if (sub === undefined || payload.exp === undefined) return null;
  return { sub, name: text(payload.name) ?? text(payload.preferred_username) ?? sub, expiresAt: payload.exp };
}

export function createJwtVerifier(opts: JwtVerifierOptions): JwtVerifier {
  const { jwksUrl, issuer, audience, leewaySec = 60, now = Date.now, maxCached = 10_000 } = opts;
  const log = opts.log ?? createLogger('info');
  const jwks = createJwks({ url: jwksUrl, now, log, cooldownMs: opts.jwksCooldownMs });
  const cache = new TokenCache<JwtIdentity>(maxCached, now);
  let cacheHits = 0;
  let verified = 0;

  async function verify(token: string): Promise<JwtIdentity | null> {
    const key = cache.key(token);
    const hit = cache.get(key);
    if (hit) {
      cacheHits++;
      return hit;
    }
    try {
      const { payload } = await jwtVerify(token, jwks.getKey, {
        algorithms: ALGORITHMS,
        issuer,
        audience,
        clockTolerance: leewaySec,
        currentDate: new Date(now()),
        requiredClaims: ['exp', 'sub'],
      });
      const who = identity(payload);
      if (!who) return null;
      verified++;
      cache.set(key, who);
      return who;
    } catch {
      // Bad signature, wrong claims, unknown key, malformed token: all the same 401 to the caller.
      return null;
    }
  }

  return {
    verify,
    stats: () => ({ cacheHits, verified, jwksFetches: jwks.fetches }),
    close() {
      jwks.close();
      cache.clear();
    },
  };
}
