// Instance heartbeats (sql/004): each live instance beats its row; an instance whose beat is older
// than the dead-after span has stopped, whatever its id, and any live instance fails its running
// LlmCalls. Every time is the database's now(), so the instances' clocks never have to agree.
import type { QueryRunner } from '../db/types.ts';
import { recoverLostCalls, type RecoveredRuns, type TakeoverPolicy, type TransactionDb } from './recovery.ts';

/** Rows of instances silent for this long are removed at the next start of any instance. */
const FORGET_AFTER = '7 days';

/**
 * Records this instance as started and beating now; forgets instances long gone. `deadAfterMs`: how
 * long this instance may be silent before peers take it for dead (sql/015); null leaves that to them.
 */
export async function registerInstance(db: QueryRunner, id: string, deadAfterMs: number | null = null): Promise<void> {
  await db.query(
    `WITH forget AS (DELETE FROM instances WHERE last_beat < now() - interval '${FORGET_AFTER}' AND id <> $1)
     INSERT INTO instances (id, dead_after_ms) VALUES ($1, $2)
     ON CONFLICT (id) DO UPDATE SET started_at = now(), last_beat = now(), dead_after_ms = EXCLUDED.dead_after_ms`,
    [id, deadAfterMs],
  );
}

/** One beat. An upsert, so a row removed meanwhile (a peer's clean stop with the same id) comes back. */
export async function beatInstance(db: QueryRunner, id: string, deadAfterMs: number | null = null): Promise<void> {
  await db.query(
    `INSERT INTO instances (id, dead_after_ms) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET last_beat = now(), dead_after_ms = EXCLUDED.dead_after_ms`,
    [id, deadAfterMs],
  );
}

/** A clean stop: peers need not wait for this instance's beat to go stale. */
export async function removeInstance(db: QueryRunner, id: string): Promise<void> {
  await db.query('DELETE FROM instances WHERE id = $1', [id]);
}

export interface SweptInstance {
  instanceId: string | null;
  calls: number;
}

/**
 * Recovers the running LlmCalls (recovery.ts) of every instance but `selfId` that has not beaten for
 * its own dead-after span (`deadAfterMs` for a row that does not say), or has no row at all (it
 * stopped cleanly, or predates heartbeats). A call younger than `deadAfterMs` is spared, so an
 * instance's first calls never race its first beat. Idempotent and safe with many sweepers at once,
 * and with a restart of the dead instance racing them: each call is claimed by one of them. Returns the calls recovered, per instance (`takeover` continues some); the
 * chat runs among them are counted in `tally`.
 */
export async function sweepDeadInstances(
  db: TransactionDb,
  opts: { selfId: string; deadAfterMs: number; tally?: RecoveredRuns; takeover?: TakeoverPolicy | null },
): Promise<SweptInstance[]> {
  const recovered = await recoverLostCalls(db, {
    where: `c.instance_id IS DISTINCT FROM $2
            AND c.started_at < now() - make_interval(secs => $3::double precision / 1000)
            AND NOT EXISTS (
                  SELECT 1 FROM instances i
                   WHERE i.id = c.instance_id
                     AND i.last_beat >= now() - make_interval(secs => coalesce(i.dead_after_ms, $3::double precision) / 1000))`,
    params: [opts.selfId, opts.deadAfterMs],
  }, { tally: opts.tally, takeover: opts.takeover ?? null });
  const calls = new Map<string | null, number>();
  for (const r of recovered.calls) calls.set(r.instanceId, (calls.get(r.instanceId) ?? 0) + 1);
  return [...calls].map(([instanceId, n]) => ({ instanceId, calls: n }));
}
