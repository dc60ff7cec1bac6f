// Who is calling, resolved once per request from `Authorization: Bearer …`: the ADMIN_TOKEN is the
// built-in admin; a user's API key or (with a verifier) a JWT is that user; anything else is nobody
// (401). A key seen once is cached by its hash, so later requests resolve synchronously with no
// database round trip. Revocation (rotation, disabling, deletion) drops a user's entries here at
// once and, through `onRevoke`, on the other instances; entries also age out, so a lost revocation
// message cannot keep a revoked key alive for longer than KEY_CACHE_TTL_MS.
import { timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import { userByKeyHash, userForJwtSub, type User } from '../store/users.ts';
import { ADMIN_CALLER, type Caller } from './caller.ts';
import { keyHash, looksLikeJwt, looksLikeKey } from './keys.ts';

/** The JWT verifier's interface (src/auth/jwt.ts): null when the token fails a check. */
export interface JwtVerifier {
  verify(token: string): Promise<{ sub: string; name: string; expiresAt: number } | null>;
  close(): unknown;
}

export const KEY_CACHE_TTL_MS = 60_000;
/** Tokens cached at most; past it the oldest goes (a burst of new tokens faster than they age out). */
export const MAX_CACHED_TOKENS = 100_000;
/**
 * Token look-ups that may ask the database at once; the rest wait their turn. Each is one indexed read,
 * but a flood of key-shaped guesses (no caller needed to send them) would otherwise take every
 * connection of the pool from the requests of callers already known.
 */
export const MAX_LOOKUPS = 8;

interface Cached {
  caller: Caller;
  /** Epoch ms after which the entry is looked up again. */
  until: number;
}

export interface CallersOptions {
  adminToken: string | undefined;
  pool: pg.Pool;
  jwt?: JwtVerifier | null;
  now?: () => number;
  maxCached?: number;
}

const BEARER = /^Bearer[ ]+(.+)$/i;

export class Callers {
  private readonly adminDigest: Buffer | null;
  private readonly pool: pg.Pool;
  private readonly jwt: JwtVerifier | null;
  private readonly now: () => number;
  private readonly maxCached: number;
  /** By the token's sha-256 (hex), in the order they were cached. */
  private readonly cache = new Map<string, Cached>();
  private readonly byUser = new Map<string, Set<string>>();
  /**
   * Bumped by every revocation: a lookup that began before one does not cache what it found, which
   * may be the key just revoked.
   */
  private epoch = 0;
  private lookups = 0;
  /** Look-ups waiting for one in flight to end; each is handed its slot. */
  private readonly waiting: Array<() => void> = [];

  constructor(opts: CallersOptions) {
    this.adminDigest = opts.adminToken ? keyHash(opts.adminToken) : null;
    this.pool = opts.pool;
    this.jwt = opts.jwt ?? null;
    this.now = opts.now ?? Date.now;
    this.maxCached = opts.maxCached ?? MAX_CACHED_TOKENS;
  }

  /** Tokens cached, and users they belong to. */
  get size(): { tokens: number; users: number } {
    return { tokens: this.cache.size, users: this.byUser.size };
  }

  /** The router's authenticate: synchronous for the admin token and a cached key. */
  readonly authenticate = (authorization: string): Caller | null | Promise<Caller | null> => {
    if (this.adminDigest === null) return ADMIN_CALLER;
    const m = BEARER.exec(authorization.trim());
    if (!m) return null;
    const token = m[1]!;
    const digest = keyHash(token);
    // Digests compared, so neither the token's content nor its length leaks through timing.
    if (timingSafeEqual(digest, this.adminDigest)) return ADMIN_CALLER;
    const id = digest.toString('hex');
    const hit = this.cache.get(id);
    if (hit) {
      if (hit.until > this.now()) return hit.caller;
      this.drop(id, hit.caller.userId);
    }
    if (looksLikeKey(token)) {
      const until = this.now() + KEY_CACHE_TTL_MS;
      return this.lookUp(id, async () => {
        const user = await userByKeyHash(this.pool, digest);
        return user && { user, until };
      });
    }
    if (this.jwt && looksLikeJwt(token)) return this.verifyJwt(id, token, this.jwt);
    return null;
  };

  /** Every cached token of the user stops resolving (on this instance). */
  revoke(userId: string): void {
    this.epoch++;
    const ids = this.byUser.get(userId);
    if (!ids) return;
    for (const id of ids) this.cache.delete(id);
    this.byUser.delete(userId);
  }

  /** Forgets every cached token (the revocation messages of a while may have been lost). */
  revokeAll(): void {
    this.epoch++;
    this.cache.clear();
    this.byUser.clear();
  }

  close(): void {
    this.jwt?.close();
  }

  private verifyJwt(id: string, token: string, jwt: JwtVerifier): Promise<Caller | null> {
    return this.lookUp(id, async () => {
      const claims = await jwt.verify(token);
      if (!claims) return null;
      const user = await userForJwtSub(this.pool, claims.sub, claims.name);
      // Cached until the token expires, not beyond: no signature check per request until then.
      return user && { user, until: Math.min(claims.expiresAt * 1000, this.now() + KEY_CACHE_TTL_MS) };
    });
  }

  private async lookUp(id: string, find: () => Promise<{ user: User; until: number } | null>): Promise<Caller | null> {
    const epoch = this.epoch;
    if (this.lookups < MAX_LOOKUPS) this.lookups++;
    else await new Promise<void>((r) => this.waiting.push(r));
    let found: { user: User; until: number } | null;
    try {
      found = await find();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.lookups--;
    }
    if (found === null) return null;
    const { user, until } = found;
    const caller: Caller = { userId: user.id, admin: false, maxActiveRuns: user.maxActiveRuns, tokensPerDay: user.tokensPerDay, costPerDay: user.costPerDay };
    if (epoch === this.epoch) this.keep(id, caller, until);
    return caller;
  }

  private keep(id: string, caller: Caller, until: number): void {
    this.prune();
    this.cache.set(id, { caller, until });
    let ids = this.byUser.get(caller.userId);
    if (!ids) this.byUser.set(caller.userId, (ids = new Set()));
    ids.add(id);
  }

  /**
   * Drops expired entries from the oldest on, stopping at the first live one, and the oldest beyond
   * the bound: tokens used once (JWTs renewed every hour) would otherwise pile up. Entries are cached
   * for at most the TTL, so the oldest is nearly always the first to expire, and each entry is looked
   * at here about once: a sweep of the whole cache per insert would cost O(n) at every new token.
   */
  private prune(): void {
    const now = this.now();
    for (const [id, e] of this.cache) {
      if (e.until > now && this.cache.size < this.maxCached) break;
      this.drop(id, e.caller.userId);
    }
  }

  private drop(id: string, userId: string): void {
    this.cache.delete(id);
    const ids = this.byUser.get(userId);
    ids?.delete(id);
    if (ids?.size === 0) this.byUser.delete(userId);
  }
}
