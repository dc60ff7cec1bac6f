// Which provider failures are worth another call, and how long to wait before it. The numbers are the
// configuration's (PROVIDER_RETRIES, PROVIDER_RETRY_BASE_MS, PROVIDER_RETRY_MAX_WAIT_MS, …); the loop
// that applies them is resilient.ts.
import type { Config, FallbackTarget } from '../../base/config.ts';
import { isAbortError } from '../errors.ts';
import { ProviderError, type ProviderName } from '../types.ts';

export interface ResilienceSettings {
  retries: number;
  baseMs: number;
  maxWaitMs: number;
  budgetPercent: number;
  /** 0: no breakers. */
  breakerFailures: number;
  breakerOpenMs: number;
  fallbacks: Partial<Record<ProviderName, FallbackTarget>>;
  /** Cluster mode: budgets and breakers are shared through this Redis. */
  redisUrl: string | undefined;
  keyPrefix: string;
}

export type ResilienceConfig = Partial<
  Pick<
    Config,
    | 'PROVIDER_RETRIES'
    | 'PROVIDER_RETRY_BASE_MS'
    | 'PROVIDER_RETRY_MAX_WAIT_MS'
    | 'PROVIDER_RETRY_BUDGET_PERCENT'
    | 'PROVIDER_BREAKER_FAILURES'
    | 'PROVIDER_BREAKER_OPEN_MS'
    | 'PROVIDER_FALLBACKS'
    | 'REDIS_URL'
    | 'REDIS_KEY_PREFIX'
  >
>;

/** The configuration's defaults for whatever a caller (a test) leaves out. */
export function settingsFrom(c: ResilienceConfig): ResilienceSettings {
  return {
    retries: c.PROVIDER_RETRIES ?? 2,
    baseMs: c.PROVIDER_RETRY_BASE_MS ?? 250,
    maxWaitMs: c.PROVIDER_RETRY_MAX_WAIT_MS ?? 10_000,
    budgetPercent: c.PROVIDER_RETRY_BUDGET_PERCENT ?? 20,
    breakerFailures: c.PROVIDER_BREAKER_FAILURES ?? 5,
    breakerOpenMs: c.PROVIDER_BREAKER_OPEN_MS ?? 15_000,
    fallbacks: c.PROVIDER_FALLBACKS ?? {},
    redisUrl: c.REDIS_URL,
    keyPrefix: c.REDIS_KEY_PREFIX ?? 'convsearch:',
  };
}

/** Statuses that say "not now" rather than "not this request". */
const RETRY_STATUSES = new Set([408, 409, 429, 500, 502, 503, 504, 529]);

/** A failure another call may not meet: a retried status, a reset, a cut stream, a timeout. Never an abort. */
export function isTransientFailure(err: unknown): err is ProviderError {
  if (!(err instanceof ProviderError) || isAbortError(err)) return false;
  return err.status !== undefined ? RETRY_STATUSES.has(err.status) : err.transient;
}

/**
 * The wait before retry number `retry` (1, 2, …): the provider's own `retry-after` when it named one,
 * else exponential from `baseMs` with half of it jittered. Null when the provider asks for more than
 * `maxWaitMs`: the caller gives up at once and passes the provider's wait on.
 */
export function retryWaitMs(retry: number, err: ProviderError, s: Pick<ResilienceSettings, 'baseMs' | 'maxWaitMs'>, random = Math.random): number | null {
  if (err.retryAfterMs !== undefined) return err.retryAfterMs <= s.maxWaitMs ? err.retryAfterMs : null;
  const full = Math.min(s.baseMs * 2 ** (retry - 1), s.maxWaitMs);
  return full / 2 + random() * (full / 2);
}

/** The metric's outcome of one call: `ok`, or what kind of failure it was. */
export function outcomeOf(err: unknown): string {
  if (!(err instanceof ProviderError)) return 'error';
  if (err.status === 429) return 'rate_limited';
  if (err.timedOut) return 'timeout';
  return isTransientFailure(err) ? 'unavailable' : 'error';
}
