// The retry budget, after Finagle's and gRPC's: retries to a provider may be at most PERCENT % of its first
// calls (not its retries) over the last WINDOW seconds, or, when that is fewer, FLOOR retries a second over
// the window (as much of it as this budget has seen), so that during an outage the service does not
// multiply the load on a provider that is down, while a quiet service can still retry. The floor is a
// minimum, not an allowance on top of the share: added to it (Finagle's reserve of 10/s × 10 s), a busy
// service could retry 100 times a window past its share (at 500 first calls a window, 40 % of them rather
// than 20 %). Counted in one-second buckets; with Redis (cluster mode) across every instance, so
// a fleet's retries stay bounded too.
import type { Redis } from 'ioredis';
import { SecondCounts } from './window.ts';

export const BUDGET_WINDOW_S = 10;
export const BUDGET_FLOOR_PER_S = 10;

export interface RetryBudget {
  /** A first call to `provider` (retries are not deposits). */
  deposit(provider: string): void;
  /** May `provider` be retried once more now? A yes counts the retry. */
  withdraw(provider: string): Promise<boolean>;
}

export interface BudgetRule {
  percent: number;
  floorPerSecond?: number;
  windowS?: number;
  /** Clock in ms (tests pass their own). */
  now?: () => number;
}

/** One process's budget (one per actor thread when there is no Redis). */
export class LocalRetryBudget implements RetryBudget {
  /** Provider → [calls, retries] per second. */
  private readonly providers = new Map<string, SecondCounts>();
  private readonly percent: number;
  private readonly floor: number;
  private readonly window: number;
  private readonly now: () => number;
  private readonly born: number;

  constructor(rule: BudgetRule) {
    this.percent = rule.percent;
    this.floor = rule.floorPerSecond ?? BUDGET_FLOOR_PER_S;
    this.window = rule.windowS ?? BUDGET_WINDOW_S;
    this.now = rule.now ?? Date.now;
    this.born = this.now();
  }

  deposit(provider: string): void {
    this.bucket(provider)[0]++;
  }

  withdraw(provider: string): Promise<boolean> {
    return Promise.resolve(this.take(provider));
  }

  /** The synchronous withdraw (also the Redis budget's answer while Redis is out of reach). */
  take(provider: string): boolean {
    const b = this.bucket(provider);
    const [calls, retries] = this.counts(provider).sum();
    const floor = floorOf(this.floor, this.window, this.now() - this.born);
    if (retries + 1 > Math.max((calls * this.percent) / 100, floor)) return false;
    b[1]++;
    return true;
  }

  private counts(provider: string): SecondCounts {
    let c = this.providers.get(provider);
    if (!c) this.providers.set(provider, (c = new SecondCounts(this.window)));
    return c;
  }

  /** This second's [calls, retries], after dropping the seconds that left the window. */
  private bucket(provider: string): [number, number] {
    return this.counts(provider).at(this.now());
  }
}

/**
 * The floor's retries in a window: FLOOR a second over the window's seconds that a budget `aliveMs` old
 * has seen (10 in its first second, the whole window's 100 from its tenth on), so that an instance just
 * started does not retry 100 times in its first second.
 */
export function floorOf(floorPerS: number, windowS: number, aliveMs: number): number {
  return floorPerS * Math.min(windowS, Math.floor(aliveMs / 1000) + 1);
}

// One hash per provider: fields `c:<second>` (first calls) and `r:<second>` (retries). The withdraw sums
// the window, drops older fields and counts the retry in one step (ARGV[4]: the floor's retries, floorOf).
const DEPOSIT = `
redis.call('HINCRBY', KEYS[1], 'c:' .. ARGV[1], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;
const WITHDRAW = `
local sec, window, percent, floor = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local calls, retries = 0, 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local field, n = all[i], tonumber(all[i + 1])
  local at = tonumber(string.sub(field, 3))
  if at <= sec - window then redis.call('HDEL', KEYS[1], field)
  elseif string.sub(field, 1, 1) == 'c' then calls = calls + n
  else retries = retries + n end
end
if retries + 1 > math.max(calls * percent / 100, floor) then return 0 end
redis.call('HINCRBY', KEYS[1], 'r:' .. sec, 1)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/**
 * The cluster's budget in Redis. Every count also goes to a local budget, which answers while Redis
 * cannot (a retry is then judged by this instance's share alone, never refused for Redis's sake).
 */
export class RedisRetryBudget implements RetryBudget {
  private readonly local: LocalRetryBudget;
  private readonly now: () => number;
  private readonly born: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly rule: BudgetRule,
  ) {
    this.local = new LocalRetryBudget(rule);
    this.now = rule.now ?? Date.now;
    this.born = this.now();
  }

  private key(provider: string): string {
    return `${this.prefix}retrybudget:${provider}`;
  }

  private get windowS(): number {
    return this.rule.windowS ?? BUDGET_WINDOW_S;
  }

  deposit(provider: string): void {
    this.local.deposit(provider);
    const sec = Math.floor(this.now() / 1000);
    this.redis.eval(DEPOSIT, 1, this.key(provider), sec, this.windowS * 2000).catch(() => {});
  }

  async withdraw(provider: string): Promise<boolean> {
    const now = this.now();
    const sec = Math.floor(now / 1000);
    const { percent, floorPerSecond = BUDGET_FLOOR_PER_S } = this.rule;
    // The floor as this instance has seen the window (the cluster's own age is nowhere to be read).
    const floor = floorOf(floorPerSecond, this.windowS, now - this.born);
    try {
      const ok = (await this.redis.eval(WITHDRAW, 1, this.key(provider), sec, this.windowS, percent, floor, this.windowS * 2000)) === 1;
      if (ok) this.local.take(provider);
      return ok;
    } catch {
      return this.local.take(provider);
    }
  }
}
