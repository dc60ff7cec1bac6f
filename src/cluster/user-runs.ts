// Each user's active runs, counted across the cluster where leases are: every instance keeps a hash
// of user → runs going there, which expires with the instance (renewed on the lease beat's rhythm), so
// a killed instance's runs stop counting when its leases go. Claiming sums the live instances' counts
// and adds one in one script: two instances cannot both take a user's last slot.
import type { Redis } from 'ioredis';
import { asRedisError } from './redis.ts';

// KEYS: instances set, own hash. ARGV: user, limit, ttl, prefix. → 1 claimed, 0 at the limit.
const CLAIM = `
local total = 0
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[4] .. 'alive:' .. id) == 1 then
    total = total + tonumber(redis.call('HGET', ARGV[4] .. 'userruns:' .. id, ARGV[1]) or '0')
  end
end
if total >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

// KEYS: own hash. ARGV: user.
const RELEASE = `
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 1`;

export class UserRuns {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly own: string;
  private readonly ttlMs: number;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(redis: Redis, prefix: string, instanceId: string, ttlMs: number, beatMs: number) {
    this.redis = redis;
    this.prefix = prefix;
    this.own = `${prefix}userruns:${instanceId}`;
    this.ttlMs = ttlMs;
    // A renewal that fails leaves the counts to expire with the instance's leases: never over-counts.
    this.timer = setInterval(() => void this.redis.pexpire(this.own, ttlMs).catch(() => {}), beatMs);
    this.timer.unref();
  }

  /**
   * Forgets the counts under this instance's id, once it has claimed it: an instance starts with no
   * runs, and a predecessor killed under the same id may have left counts that outlive its liveness key
   * (renewed up to a beat after it). Counted as this instance's again, and renewed by it, they would
   * hold its users to runs that died with it, for as long as it lives.
   */
  async reset(): Promise<void> {
    try {
      await this.redis.del(this.own);
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /** Takes one of the user's `limit` slots: false when every one is taken across the cluster. */
  async claim(user: string, limit: number): Promise<boolean> {
    try {
      return (await this.redis.eval(CLAIM, 2, `${this.prefix}instances`, this.own, user, limit, this.ttlMs, this.prefix)) === 1;
    } catch (err) {
      // The script may have run with only its reply lost (a command timeout): the slot is given back,
      // or it would stay taken, and renewed, for the life of this process. If it never ran, the release
      // counts one run less for the user only until one of their runs here ends.
      this.release(user);
      throw asRedisError(err);
    }
  }

  /** Gives a slot back (the run ended, or never started). A failure leaves it to expire with the instance. */
  release(user: string): void {
    this.redis.eval(RELEASE, 1, this.own, user).catch(() => {});
  }

  close(): void {
    clearInterval(this.timer);
  }
}
