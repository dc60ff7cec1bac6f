// What the resilience layer did, counted per thread as plain data: the main thread sums its own and
// its actor threads' (which post theirs) into /metrics (css_provider_calls_total, …).

export interface ResilienceStats {
  /** `provider|outcome` → calls (outcome: ok, rate_limited, unavailable, timeout, error, breaker_open). */
  calls: Record<string, number>;
  /** provider → retries. */
  retries: Record<string, number>;
  /** `from|to` → runs that went on on a fallback. */
  fallbacks: Record<string, number>;
  /** provider → 1 while a breaker of one of its models is open (as this instance last saw it), else 0; read when asked (statsOf). */
  breakerOpen: Record<string, number>;
}

export const emptyStats = (): ResilienceStats => ({ calls: {}, retries: {}, fallbacks: {}, breakerOpen: {} });

export function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** Sums several threads' stats; an open breaker anywhere is open. */
export function sumStats(list: Iterable<ResilienceStats>): ResilienceStats {
  const out = emptyStats();
  for (const s of list) {
    for (const field of ['calls', 'retries', 'fallbacks'] as const) {
      for (const [k, n] of Object.entries(s[field])) out[field][k] = (out[field][k] ?? 0) + n;
    }
    for (const [k, n] of Object.entries(s.breakerOpen)) out.breakerOpen[k] = Math.max(out.breakerOpen[k] ?? 0, n);
  }
  return out;
}

/** What an actor thread posts to the main thread when its stats changed. */
export interface ProviderStatsReport {
  t: 'provider_stats';
  stats: ResilienceStats;
}

/**
 * Posts `read()` every `everyMs` when it changed since the last post (an idle thread posts nothing).
 * The timer does not keep the thread alive.
 */
export function reportStats(read: () => ResilienceStats, post: (report: ProviderStatsReport) => void, everyMs = 1000): void {
  let last = '';
  setInterval(() => {
    const stats = read();
    const json = JSON.stringify(stats);
    if (json === last) return;
    last = json;
    post({ t: 'provider_stats', stats });
  }, everyMs).unref();
}
