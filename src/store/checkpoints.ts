// Checkpoints (sql/011_checkpoints.sql, sql/018_checkpoint_chunks.sql): the text running chat runs
// have streamed, written for all of a host's runs in one statement per interval (group commit), so a
// crash loses at most an interval. Each run's new text is a row of its own (a chunk), so a statement
// costs what it adds, whatever the answer's length; recovery joins a call's chunks (recovery.ts).
import { prepared } from '../db/prepared.ts';
import type { Queryable } from '../db/types.ts';

/** One run's new text since its last checkpoint. */
export interface CheckpointWrite {
  callId: string;
  chatId: string;
  /** The run's fencing token: the text is written only while the chat still holds it. */
  runToken: number;
  /** Where `text` starts in the run's streamed text, in UTF-16 code units: the chunk's place and key. */
  at: number;
  text: string;
  /** The run's traceparent, sent with its first checkpoint only (null otherwise, or tracing off). */
  trace?: string | null;
  /**
   * The lengths of the deltas `text` was streamed in, as a Postgres array literal (`{3,5,-2}`: a first
   * length negative continues the previous chunk's last delta); null when the run does not keep them.
   */
  deltas?: string | null;
}

// Each member's chunk is keyed by its call and place, so a statement applied twice (its reply lost,
// then sent again from the same place, perhaps with more text) leaves one chunk there, the later one.
// A member whose call has ended or whose chat a later run has taken (its token) writes nothing and is
// not returned. The call row is updated first (its `checkpoint_at`: a lost call's latency runs to it),
// which also takes its row lock: a concurrent end of the call either comes after this statement and
// drops its chunks (the trigger of sql/018_checkpoint_chunks.sql), or before it, and nothing is written.
// Calls are probed by `id = ANY(array)`, never by joining the unnest (see run-groups.ts on plans).
const WRITE_CHECKPOINTS = `WITH v AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[], $7::text[]) AS v(call_id, chat_id, token, pos, text, trace, deltas)
     ),
     live AS (
       UPDATE llm_calls l SET checkpoint_token = v.token, checkpoint_at = now(), trace_parent = coalesce(v.trace, l.trace_parent)
         FROM v, chats c
        WHERE l.id = ANY ($1::text[]) AND l.id = v.call_id AND l.status = 'running'
          AND c.id = v.chat_id AND c.run_token = v.token
       RETURNING l.id
     )
     INSERT INTO llm_call_checkpoint_chunks (call_id, pos, text, deltas)
     SELECT v.call_id, v.pos, v.text, v.deltas::int[] FROM v JOIN live ON live.id = v.call_id
     ON CONFLICT (call_id, pos) DO UPDATE SET text = EXCLUDED.text, deltas = EXCLUDED.deltas
     RETURNING call_id`;

/** Writes every member's new text in one statement; returns the ids of the calls written. */
export async function writeCheckpoints(db: Queryable, writes: readonly CheckpointWrite[]): Promise<Set<string>> {
  const { rows } = await db.query<{ call_id: string }>(prepared(db, WRITE_CHECKPOINTS), [
    writes.map((w) => w.callId),
    writes.map((w) => w.chatId),
    writes.map((w) => w.runToken),
    writes.map((w) => w.at),
    writes.map((w) => w.text),
    writes.map((w) => w.trace ?? null),
    writes.map((w) => w.deltas ?? null),
  ]);
  return new Set(rows.map((r) => r.call_id));
}

/**
 * A call's checkpointed text as an SQL expression on the llm_calls row `alias`: what an instance of
 * the version before sql/018 wrote in `checkpoint_text` (nothing since), then its chunks in order.
 */
export const checkpointedTextSql = (alias: string) =>
  `coalesce(${alias}.checkpoint_text, '') || coalesce((SELECT string_agg(k.text, '' ORDER BY k.pos) FROM llm_call_checkpoint_chunks k WHERE k.call_id = ${alias}.id), '')`;

/**
 * The lengths of the deltas a call's checkpointed text was streamed in, as an SQL expression on the
 * llm_calls row `alias`: its chunks' lengths in order, comma-separated (joinDeltaLengths reads them);
 * null when any chunk lacks them (its run did not keep them) or text of the version before sql/018 leads.
 */
export const checkpointedDeltasSql = (alias: string) =>
  `(SELECT CASE WHEN ${alias}.checkpoint_text IS NULL AND bool_and(k.deltas IS NOT NULL) THEN string_agg(array_to_string(k.deltas, ','), ',' ORDER BY k.pos) END
      FROM llm_call_checkpoint_chunks k WHERE k.call_id = ${alias}.id)`;

/** The deltas' lengths as checkpointedDeltasSql reads them, a delta cut between two chunks joined again. */
export function joinDeltaLengths(joined: string | null): number[] | null {
  if (joined === null) return null;
  const out: number[] = [];
  for (const field of joined.split(',')) {
    if (field === '') continue;
    const n = Number(field);
    if (n < 0 && out.length > 0) out[out.length - 1]! -= n;
    else out.push(Math.abs(n));
  }
  return out;
}
