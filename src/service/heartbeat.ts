// This instance's heartbeat and the sweeper of dead instances' LlmCalls, on one timer: every
// INSTANCE_HEARTBEAT_MS it beats its row, then recovers the running calls of any instance silent for
// DEAD_AFTER_BEATS intervals (store/instances.ts, store/recovery.ts). The sweeper only runs once this
// instance has itself beaten without a miss for that long: after a database outage every instance's
// beat is stale, and a sweep before the live ones had their chance to beat again would fail live calls.
import type { Logger } from 'pino';
import type { ControlDb } from '../db/control-pool.ts';
import { purgeExpiredIdempotencyKeys } from '../store/idempotency.ts';
import { beatInstance, registerInstance, removeInstance, sweepDeadInstances } from '../store/instances.ts';
import type { RecoveredRuns, TakeoverPolicy, TransactionDb } from '../store/recovery.ts';

/** An instance silent for this many intervals is dead (9 s with the default 3 s; the next sweep finds it, so a killed instance's calls fail within about 12 s, inside the cluster's 15 s promise). */
export const DEAD_AFTER_BEATS = 3;

/** About every 5 minutes at the default 3 s beat. */
const PURGE_EVERY_BEATS = 100;

export interface Heartbeat {
  /** Stops beating and removes this instance's row (its calls are already settled by then). */
  stop(): Promise<void>;
}

export interface HeartbeatOptions {
  db: ControlDb;
  /**
   * The service's pool, for the sweep: recovering a dead instance's calls is a transaction (a claim,
   * then the interrupted answers), which the control connection's single queries cannot hold.
   */
  pool: TransactionDb;
  instanceId: string;
  intervalMs: number;
  log: Logger;
  /** The server's tally of recovered runs (its metrics read it). */
  recovered: RecoveredRuns;
  /** Which lost runs this instance continues instead of ending them (takeover); null: none (yet). */
  takeover?: () => TakeoverPolicy | null;
}

/** Registers the instance (rejects when the database does not answer) and starts the timer. */
export async function startHeartbeat({ db, pool, instanceId, intervalMs, log, recovered, takeover }: HeartbeatOptions): Promise<Heartbeat> {
  const deadAfterMs = DEAD_AFTER_BEATS * intervalMs;
  await registerInstance(db, instanceId, deadAfterMs);
  let healthySince: number | null = performance.now();
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let current: Promise<void> = Promise.resolve();
  // The sweep goes on beside the beats: a recovery waiting for a busy pool must not make this instance look dead.
  let sweeping: Promise<void> | null = null;
  const sweep = () =>
    sweepDeadInstances(pool, { selfId: instanceId, deadAfterMs, tally: recovered, takeover: takeover?.() ?? null }).then(
      (swept) => {
        for (const s of swept) log.warn(s, 'marked the running LlmCalls of a stopped instance as failed');
      },
      (err: unknown) => log.warn({ err, instanceId }, 'the sweep of stopped instances failed; the next beat tries again'),
    );

  let beats = 0;
  const tick = async () => {
    try {
      await beatInstance(db, instanceId, deadAfterMs);
      // Expired Idempotency-Key rows are dead weight; a small batch now and then keeps the table small.
      if (++beats % PURGE_EVERY_BEATS === 0) await purgeExpiredIdempotencyKeys(db);
      if (healthySince === null) {
        healthySince = performance.now();
        log.info({ instanceId }, 'heartbeat restored');
      }
      if (performance.now() - healthySince < deadAfterMs) return;
      sweeping ??= sweep().finally(() => (sweeping = null));
    } catch (err) {
      if (healthySince !== null) log.warn({ err, instanceId }, 'heartbeat failed: the database does not answer');
      healthySince = null;
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = tick().finally(schedule);
    }, intervalMs);
    // The heartbeat never keeps a stopping process alive.
    timer.unref();
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
      await sweeping;
      await removeInstance(db, instanceId).catch((err: Error) =>
        log.warn({ err, instanceId }, 'could not remove this instance’s heartbeat row; peers will see it stop'),
      );
    },
  };
}
