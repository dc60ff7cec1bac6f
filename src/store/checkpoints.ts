// Checkpoints (sql/011_checkpoints.sql): the text running chat runs have streamed, written for all of
// a host's runs in one statement per interval (group commit), so a crash loses at most an interval.
import { prepared } from '../db/prepared.ts';
import type { Queryable } from '../db/types.ts';

/** One run's new text since its last checkpoint. */
export interface CheckpointWrite {
  callId: string;
  chatId: string;
  /** The run's fencing token: the text is written only while the chat still holds it. */
  runToken: number;
  /** Characters (code points, as Postgres counts them) already checkpointed: `text` follows them. */
  from: number;
  text: string;
  /** The run's traceparent, sent with its first checkpoint only (null otherwise, or tracing off). */
  trace?: string | null;
}

// Each member appends its new text to the first `from` characters already stored, so a statement
// applied twice (its reply lost, then sent again) leaves the same text, and one never applied is
// simply sent again from the same point. A member whose call has ended, whose chat a later run has
// taken (its token), or whose stored text is shorter than `from` writes nothing and is not returned.
// Calls are probed by `id = ANY(array)`, never by joining the unnest (see run-groups.ts on plans).
const WRITE_CHECKPOINTS = `UPDATE llm_calls l
       SET checkpoint_text = left(coalesce(l.checkpoint_text, ''), v.from_chars) || v.text,
           checkpoint_token = v.token, checkpoint_at = now(), trace_parent = coalesce(v.trace, l.trace_parent)
      FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[]) AS v(call_id, chat_id, token, from_chars, text, trace),
           chats c
     WHERE l.id = ANY ($1::text[]) AND l.id = v.call_id AND l.status = 'running'
       AND c.id = v.chat_id AND c.run_token = v.token
       AND length(coalesce(l.checkpoint_text, '')) >= v.from_chars
    RETURNING l.id`;

/** Writes every member's checkpoint in one statement; returns the ids of the calls written. */
export async function writeCheckpoints(db: Queryable, writes: readonly CheckpointWrite[]): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(prepared(db, WRITE_CHECKPOINTS), [
    writes.map((w) => w.callId),
    writes.map((w) => w.chatId),
    writes.map((w) => w.runToken),
    writes.map((w) => w.from),
    writes.map((w) => w.text),
    writes.map((w) => w.trace ?? null),
  ]);
  return new Set(rows.map((r) => r.id));
}
