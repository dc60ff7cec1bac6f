// The identity provider's signing keys, fetched from its JWKS URL and refetched when a token names a
// key we do not have (the provider rotated). jose's createRemoteJWKSet does most of this, but it reads
// Date.now() (so neither the verifier's `now` nor a test can drive its cooldown) and it does not back
// off after a failed fetch: with the provider down, every token would cost a fetch. Here every fetch
// attempt, failed or not, opens a cooldown, so the provider sees at most one request per window from
// us whatever the traffic. jose still parses the set and picks and imports the key (createLocalJWKSet).
import { createLocalJWKSet, errors, type JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';

export interface JwksOptions {
  url: string;
  now: () => number;
  log: Pick<Logger, 'warn'>;
  /** Least time between two fetches (refetch on an unknown `kid`, or retry after a failure). */
  cooldownMs?: number;
  /** A set older than this is refetched before it is used again, and dropped if that fails. */
  maxAgeMs?: number;
  timeoutMs?: number;
}

export interface Jwks {
  getKey: JWTVerifyGetKey;
  /** Fetch attempts so far, failed ones included. */
  readonly fetches: number;
  close(): void;
}

type LocalSet = ReturnType<typeof createLocalJWKSet>;

export function createJwks(opts: JwksOptions): Jwks {
  const { url, now, log, cooldownMs = 30_000, maxAgeMs = 600_000, timeoutMs = 5_000 } = opts;
  let local: LocalSet | undefined;
  let loadedAt = -Infinity;
  let attemptedAt = -Infinity;
  let pending: Promise<void> | undefined;
  let fetches = 0;
  const closed = new AbortController();

  async function load(): Promise<void> {
    fetches++;
    attemptedAt = now();
    try {
      const signal = AbortSignal.any([closed.signal, AbortSignal.timeout(timeoutMs)]);
      const res = await fetch(url, { signal, redirect: 'manual', headers: { accept: 'application/json, application/jwk-set+json' } });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      local = createLocalJWKSet(await res.json());
      loadedAt = now();
    } catch (err) {
      // A set is trusted for maxAgeMs after it was fetched, not for ever: a key the provider withdrew
      // must stop working even if we cannot reach the provider to learn that.
      if (now() - loadedAt >= maxAgeMs) local = undefined;
      log.warn({ err: String(err), jwksUrl: url }, 'JWKS fetch failed: JWTs that need a key from it are refused until a fetch succeeds');
    }
  }

  /** Fetches unless one is under way (then joins it) or the cooldown is still running (then does nothing). */
  function refresh(): Promise<void> {
    if (!pending && now() - attemptedAt >= cooldownMs) pending = load().finally(() => (pending = undefined));
    return pending ?? Promise.resolve();
  }

  /**
   * The set, while it is younger than maxAgeMs. A stale one whose refetch is held back by the cooldown
   * (a failed fetch moments before it went stale) is no more trusted than one whose refetch failed.
   */
  function fresh(): LocalSet {
    if (!local || now() - loadedAt >= maxAgeMs) throw new errors.JWKSNoMatchingKey('JWKS not available');
    return local;
  }

  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (!local || now() - loadedAt >= maxAgeMs) await refresh();
    try {
      return await fresh()(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || !local) throw err;
      await refresh();
      return fresh()(header, token);
    }
  };

  return {
    getKey,
    get fetches() {
      return fetches;
    },
    close: () => closed.abort(),
  };
}
