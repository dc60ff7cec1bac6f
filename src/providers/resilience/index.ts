// A thread's resilience: its retry budget and breakers, local, or shared by the cluster through Redis
// when REDIS_URL is set. The Redis connection is this module's own (the providers layer sits below the
// cluster's); until it is up, and whenever a command fails, the local budget and breakers decide.
import type { Redis } from 'ioredis';
import { LocalBreakers, RedisBreakers } from './breaker.ts';
import { LocalRetryBudget, RedisRetryBudget } from './budget.ts';
import type { ResilienceSettings } from './policy.ts';
import { SHARE_WAIT_MS, statsOf, type Resilience } from './resilient.ts';
import { emptyStats, sumStats, type ResilienceStats } from './stats.ts';

export { resilientProviders, retryLoop, type Resilience } from './resilient.ts';
export { settingsFrom, type ResilienceConfig, type ResilienceSettings } from './policy.ts';
export { emptyStats, reportStats, sumStats, type ProviderStatsReport, type ResilienceStats } from './stats.ts';

/** Every resilience this thread made: /metrics sums them (a worker posts the sum to the main thread). */
const made: Resilience[] = [];
/** The Redis connections this thread opened for them, reached or not (closeResilience ends them). */
const clients: Redis[] = [];

export function threadStats(): ResilienceStats {
  return sumStats(made.map(statsOf));
}

/**
 * `redis`: a connection to share state through (tests: one per simulated instance); else one is opened
 * when `settings.redisUrl` is set. `now`: the clock of budgets and breakers (tests).
 */
export function createResilience(settings: ResilienceSettings, { redis, now }: { redis?: Redis; now?: () => number } = {}): Resilience {
  const budgetRule = { percent: settings.budgetPercent, now };
  const breakerRule = { failures: settings.breakerFailures, openMs: settings.breakerOpenMs, now };
  const local = { budget: new LocalRetryBudget(budgetRule), breakers: new LocalBreakers(breakerRule) };
  const r: Resilience = { settings, ...local, stats: emptyStats(), keys: new Set(), shared: Promise.resolve(false), sharing: null };
  made.push(r);
  const share = (client: Redis | null): boolean => {
    if (!client) return false;
    r.budget = new RedisRetryBudget(client, settings.keyPrefix, budgetRule);
    r.breakers = new RedisBreakers(client, settings.keyPrefix, breakerRule);
    return true;
  };
  if (redis) r.shared = Promise.resolve(share(redis));
  else if (settings.redisUrl) {
    r.shared = connect(settings.redisUrl).then(share);
    const waited = new Promise<void>((resolve) => setTimeout(resolve, SHARE_WAIT_MS).unref());
    r.sharing = Promise.race([r.shared, waited]).then(() => (r.sharing = null));
  }
  return r;
}

/**
 * A connection that never queues a command while down (it fails at once: the local state decides),
 * in use once it first answered. Null when the client cannot be loaded.
 */
async function connect(url: string): Promise<Redis | null> {
  try {
    const { Redis } = await import('ioredis');
    const client = new Redis(url, { connectionName: 'provider-resilience', enableOfflineQueue: false, commandTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(100 * n, 1000) });
    clients.push(client);
    client.on('error', () => {});
    // Shared state is a help, not a reason to keep a process (or a test) alive.
    client.on('connect', () => (client as unknown as { stream?: { unref?(): void } }).stream?.unref?.());
    await new Promise<void>((resolve) => client.once('ready', resolve));
    return client;
  } catch {
    return null;
  }
}

/**
 * Ends this thread's Redis connections (the service's stop). An unreachable Redis is retried on a timer
 * that an unref'd socket does not cover: left alone, it kept a process that failed to start alive.
 */
export function closeResilience(): void {
  for (const c of clients.splice(0)) c.disconnect();
}
