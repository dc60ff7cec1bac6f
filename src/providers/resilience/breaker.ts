// Circuit breakers per provider and model. Closed: calls go through. After FAILURES consecutive failed
// calls, or half of at least MIN_CALLS calls failing within WINDOW seconds, it opens for OPEN_MS: calls
// are refused at once (the run goes to its fallback or fails with 503 and Retry-After). Then one trial
// call goes through (half-open): its success closes the breaker, its failure opens it again. With Redis
// (cluster mode) every instance reads and writes the same breaker, so a provider found down by one
// instance is spared by all.
import type { Redis } from 'ioredis';
import { SecondCounts } from './window.ts';

export const BREAKER_WINDOW_S = 10;
export const BREAKER_MIN_CALLS = 20;

export type Admit = { allow: true; trial: boolean } | { allow: false; retryAfterMs: number };

export interface Breakers {
  /** May a call to `key` (`provider/model`) go now? A half-open breaker admits one trial. */
  admit(key: string): Promise<Admit>;
  /**
   * How the admitted call ended: `failed` only for failures that say the provider is down. Settles
   * once every instance would see it (a caller need not wait for a success).
   */
  record(key: string, failed: boolean): Promise<void>;
  /** Whether the breaker of `key` was open when last seen by this instance (for /metrics). */
  openNow(key: string): boolean;
}

export interface BreakerRule {
  failures: number;
  openMs: number;
  now?: () => number;
}

interface State {
  consecutive: number;
  /** 0: closed. Past it: half-open. */
  openUntil: number;
  /** A trial call is out until then (half-open); a trial that never reports frees the next one then. */
  trialUntil: number;
  /** [calls, failures] per second. */
  window: SecondCounts;
}

export class LocalBreakers implements Breakers {
  private readonly states = new Map<string, State>();
  private readonly now: () => number;

  constructor(private readonly rule: BreakerRule) {
    this.now = rule.now ?? Date.now;
  }

  private state(key: string): State {
    let s = this.states.get(key);
    if (!s) this.states.set(key, (s = { consecutive: 0, openUntil: 0, trialUntil: 0, window: new SecondCounts(BREAKER_WINDOW_S) }));
    return s;
  }

  admit(key: string): Promise<Admit> {
    return Promise.resolve(this.admitNow(key));
  }

  admitNow(key: string): Admit {
    const s = this.state(key);
    const now = this.now();
    if (s.openUntil === 0) return { allow: true, trial: false };
    if (now < s.openUntil) return { allow: false, retryAfterMs: s.openUntil - now };
    if (now < s.trialUntil) return { allow: false, retryAfterMs: s.trialUntil - now };
    s.trialUntil = now + this.rule.openMs;
    return { allow: true, trial: true };
  }

  record(key: string, failed: boolean): Promise<void> {
    this.recordNow(key, failed);
    return Promise.resolve();
  }

  recordNow(key: string, failed: boolean): void {
    const s = this.state(key);
    const now = this.now();
    const b = s.window.at(now);
    b[0]++;
    if (!failed) {
      s.consecutive = 0;
      // A success while half-open (the trial, or a call admitted before it opened) closes it.
      if (s.openUntil !== 0 && now >= s.openUntil) Object.assign(s, { openUntil: 0, trialUntil: 0, window: new SecondCounts(BREAKER_WINDOW_S) });
      return;
    }
    b[1]++;
    s.consecutive++;
    const halfOpen = s.openUntil !== 0 && now >= s.openUntil;
    const [calls, failures] = s.window.sum();
    if (halfOpen || s.consecutive >= this.rule.failures || (calls >= BREAKER_MIN_CALLS && failures * 2 >= calls)) {
      Object.assign(s, { openUntil: now + this.rule.openMs, trialUntil: 0, consecutive: 0, window: new SecondCounts(BREAKER_WINDOW_S) });
    }
  }

  openNow(key: string): boolean {
    const s = this.states.get(key);
    return s !== undefined && s.openUntil !== 0 && this.now() < s.openUntil;
  }

  /** What the Redis breakers learnt of `key`, kept here for openNow. */
  seen(key: string, openUntil: number): void {
    this.state(key).openUntil = openUntil;
  }
}

// One hash per breaker: cons, open (until, ms), trial (until, ms), and `c:<sec>` / `f:<sec>` window fields.
const ADMIT = `
local now, openMs = tonumber(ARGV[1]), tonumber(ARGV[2])
local open = tonumber(redis.call('HGET', KEYS[1], 'open') or '0')
if open == 0 then return {1, 0, 0} end
if now < open then return {0, open - now, open} end
local trial = tonumber(redis.call('HGET', KEYS[1], 'trial') or '0')
if now < trial then return {0, trial - now, open} end
redis.call('HSET', KEYS[1], 'trial', now + openMs)
return {1, 1, open}`;
const RECORD = `
local now, openMs, failures, failed, window, minCalls = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5]), tonumber(ARGV[6])
local sec = math.floor(now / 1000)
local open = tonumber(redis.call('HGET', KEYS[1], 'open') or '0')
local halfOpen = open ~= 0 and now >= open
redis.call('PEXPIRE', KEYS[1], openMs + window * 2000)
if not failed then
  if halfOpen then redis.call('DEL', KEYS[1]) return 0 end
  redis.call('HSET', KEYS[1], 'cons', 0)
  redis.call('HINCRBY', KEYS[1], 'c:' .. sec, 1)
  return open
end
local cons = redis.call('HINCRBY', KEYS[1], 'cons', 1)
redis.call('HINCRBY', KEYS[1], 'c:' .. sec, 1)
redis.call('HINCRBY', KEYS[1], 'f:' .. sec, 1)
local calls, fails = 0, 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local field, n = all[i], tonumber(all[i + 1])
  local kind = string.sub(field, 1, 2)
  if kind == 'c:' or kind == 'f:' then
    if tonumber(string.sub(field, 3)) <= sec - window then redis.call('HDEL', KEYS[1], field)
    elseif kind == 'c:' then calls = calls + n else fails = fails + n end
  end
end
if halfOpen or cons >= failures or (calls >= minCalls and fails * 2 >= calls) then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'open', now + openMs)
  redis.call('PEXPIRE', KEYS[1], openMs + window * 2000)
  return now + openMs
end
return open`;

/**
 * The cluster's breakers in Redis. While Redis cannot answer, the local breakers decide (a call is
 * never refused for Redis's sake), and they keep what Redis last said for /metrics.
 */
export class RedisBreakers implements Breakers {
  private readonly local: LocalBreakers;
  private readonly now: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly rule: BreakerRule,
  ) {
    this.local = new LocalBreakers(rule);
    this.now = rule.now ?? Date.now;
  }

  private key(key: string): string {
    return `${this.prefix}breaker:${key}`;
  }

  async admit(key: string): Promise<Admit> {
    try {
      const [allow, n, open] = (await this.redis.eval(ADMIT, 1, this.key(key), this.now(), this.rule.openMs)) as [number, number, number];
      this.local.seen(key, open);
      return allow === 1 ? { allow: true, trial: n === 1 } : { allow: false, retryAfterMs: n };
    } catch {
      return this.local.admitNow(key);
    }
  }

  record(key: string, failed: boolean): Promise<void> {
    const { failures, openMs } = this.rule;
    return this.redis
      .eval(RECORD, 1, this.key(key), this.now(), openMs, failures, failed ? '1' : '0', BREAKER_WINDOW_S, BREAKER_MIN_CALLS)
      .then(
        (open) => this.local.seen(key, Number(open)),
        () => this.local.recordNow(key, failed),
      );
  }

  openNow(key: string): boolean {
    return this.local.openNow(key);
  }
}
