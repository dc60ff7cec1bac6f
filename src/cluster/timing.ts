// The timing of cluster mode, derived from one setting (CLUSTER_LEASE_TTL_MS) so that its parts
// always fit together: an owner cut from Redis fences its runs before another instance can take
// their keys, and a single slow or failed renewal does not fence anyone.
//
// The owner measures on its own monotonic clock (performance.now()) from the moment it SENT the
// last renewal that Redis acknowledged. Redis ran that renewal after it was sent, so the lease
// expires no earlier than sentAt + TTL: fencing at sentAt + TTL - margin is always first, however
// long the reply took. (Measured from the reply instead, the command timeout would have to be
// shorter than the margin; it is kept so anyway, as a second guard.)
//
// With TTL T: margin M = T/3, renewals every T/6 (from the start of the previous one), command
// timeout C ≤ 3M/4 < M, a fencing check every M/4.
// - One renewal that times out delays the next acknowledged one by at most T/6 + max(T/6, C) ≤ 5T/12,
//   well inside the T - M = 2T/3 an owner may go unrenewed: a slow Redis does not fence anyone.
// - The check notices a stale lease at most M/4 after its deadline; the remaining 3M/4 (about 750 ms
//   at T = 3 s, 2.5 s at the default 10 s) covers event-loop lag and the cancel reaching the run.
import { DEFAULT_REDIS_TIMEOUTS, type RedisTimeouts } from './redis.ts';

export interface ClusterTiming {
  ttlMs: number;
  /** How long before its lease's expiry an owner ends its runs. */
  marginMs: number;
  /** From the start of one renewal beat to the start of the next. */
  beatMs: number;
  /** How often the fencing deadline is checked. */
  fenceCheckMs: number;
  redis: RedisTimeouts;
}

export function clusterTiming(ttlMs: number, timeouts: RedisTimeouts = DEFAULT_REDIS_TIMEOUTS): ClusterTiming {
  const marginMs = Math.floor(ttlMs / 3);
  return {
    ttlMs,
    marginMs,
    beatMs: Math.max(50, Math.floor(ttlMs / 6)),
    fenceCheckMs: Math.max(25, Math.floor(marginMs / 4)),
    redis: { ...timeouts, commandTimeoutMs: Math.min(timeouts.commandTimeoutMs, Math.floor((marginMs * 3) / 4)) },
  };
}
