// Redis connections for cluster mode (ioredis). Every command has a deadline and nothing queues
// while the connection is down (`enableOfflineQueue: false`): a lost Redis makes cluster commands
// fail at once with RedisUnavailableError, never wait in an unbounded queue, while ioredis keeps
// reconnecting in the background.
import type { Redis } from 'ioredis';
import { redact } from '../db/pool.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

/** Redis cannot serve a cluster command now (down, unreachable, or too slow). */
export class RedisUnavailableError extends ServiceError {
  constructor(detail: string) {
    super(ErrorCodes.REDIS_UNAVAILABLE, `Redis is unavailable (cluster mode, REDIS_URL): ${detail}`);
    this.name = 'RedisUnavailableError';
  }
}

export interface RedisTimeouts {
  /** Deadline of one command. */
  commandTimeoutMs: number;
  /** Deadline of the first connection at start. */
  connectTimeoutMs: number;
}

export const DEFAULT_REDIS_TIMEOUTS: RedisTimeouts = { commandTimeoutMs: 2000, connectTimeoutMs: 5000 };

/**
 * Opens a connection and waits until it is ready; a Redis that cannot be reached in time is an
 * error naming REDIS_URL (the service refuses to start in cluster mode without its Redis).
 */
export async function connectRedis(url: string, name: string, t: RedisTimeouts = DEFAULT_REDIS_TIMEOUTS): Promise<Redis> {
  // Loaded here, in cluster mode only: a single instance never pays its ~100 ms of CPU at start.
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    connectionName: name,
    lazyConnect: true,
    enableOfflineQueue: false,
    commandTimeout: t.commandTimeoutMs,
    connectTimeout: t.connectTimeoutMs,
    // One try per command: a failed command is reported to the caller, who decides (503, retry at the next tick).
    maxRetriesPerRequest: 0,
    // Reconnect forever, at most every second: the service must recover when Redis is back.
    retryStrategy: (times) => Math.min(100 * times, 1000),
  });
  // Errors surface through the commands; an unhandled 'error' event would only add noise.
  client.on('error', () => {});
  const deadline = new Promise<never>((_, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${t.connectTimeoutMs} ms`)), t.connectTimeoutMs);
    timer.unref();
  });
  try {
    await Promise.race([client.connect(), deadline]);
    await client.ping();
  } catch (err) {
    client.disconnect();
    throw new RedisUnavailableError(`cannot reach ${redact(url)} at start: ${(err as Error).message || String(err)}`);
  }
  return client;
}

/** Maps any failure of a Redis command to RedisUnavailableError (keeps the cause's text). */
export function asRedisError(err: unknown): RedisUnavailableError {
  if (err instanceof RedisUnavailableError) return err;
  return new RedisUnavailableError((err as Error)?.message || String(err));
}
