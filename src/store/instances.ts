// Instance heartbeats (sql/004): each live instance beats its row; an instance whose beat is older
// than the dead-after span has stopped, whatever its id, and any live instance fails its running
// LlmCalls. Every time is the database's now(), so the instances' clocks never have to agree.
import type { QueryRunner } from '../db/types.ts';
import { INTERRUPTED_ERROR } from './llm-calls.ts';

/** Rows of instances silent for this long are removed at the next start of any instance. */
const FORGET_AFTER = '7 days';

/** Records this instance as started and beating now; forgets instances long gone. */
export async function registerInstance(db: QueryRunner, id: string): Promise<void> {
  await db.query(
    `WITH forget AS (DELETE FROM instances WHERE last_beat < now() - interval '${FORGET_AFTER}' AND id <> $1)
     INSERT INTO instances (id) VALUES ($1)
     ON CONFLICT (id) DO UPDATE SET started_at = now(), last_beat = now()`,
    [id],
  );
}

/** One beat. An upsert, so a row removed meanwhile (a peer's clean stop with the same id) comes back. */
export async function beatInstance(db: QueryRunner, id: string): Promise<void> {
  await db.query(
    `INSERT INTO instances (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET last_beat = now()`,
    [id],
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
 * Fails the running LlmCalls of every instance but `selfId` that has not beaten for `deadAfterMs`
 * (or has no row at all: it stopped cleanly, or predates heartbeats). A call younger than that span
 * is spared, so an instance's first calls never race its first beat. One statement: idempotent and
 * safe with many sweepers at once (a row another sweeper just failed is no longer `running` when
 * this one's UPDATE re-checks it). Returns the calls failed, per instance.
 */
export async function sweepDeadInstances(
  db: QueryRunner,
  opts: { selfId: string; deadAfterMs: number },
): Promise<SweptInstance[]> {
  const { rows } = await db.query<{ instance_id: string | null; calls: number }>(
    `WITH dead AS (
       UPDATE llm_calls c
          SET status = 'failed', finished_at = now(), error = $3
        WHERE c.status = 'running'
          AND c.instance_id IS DISTINCT FROM $1
          AND c.started_at < now() - make_interval(secs => $2::double precision / 1000)
          AND NOT EXISTS (
                SELECT 1 FROM instances i
                 WHERE i.id = c.instance_id
                   AND i.last_beat >= now() - make_interval(secs => $2::double precision / 1000))
       RETURNING c.instance_id
     )
     SELECT instance_id, count(*)::int AS calls FROM dead GROUP BY instance_id`,
    [opts.selfId, opts.deadAfterMs, INTERRUPTED_ERROR],
  );
  return rows.map((r) => ({ instanceId: r.instance_id, calls: r.calls }));
}
