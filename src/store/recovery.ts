// Recovery of the LlmCalls a dead instance left running: at the start of an instance with its
// INSTANCE_ID (llm-calls.ts, markInterruptedLlmCalls), or by any live instance's sweeper once its
// heartbeat stopped (instances.ts, sweepDeadInstances). Each such call is failed with an error that
// starts with "instance lost", and a chat run's checkpointed text (sql/011_checkpoints.sql) becomes
// its chat's assistant message with `metadata.interrupted` and `metadata.reason: "instance lost"`,
// through the same statement that stores a drained or fenced run's partial answer (run-groups.ts).
//
// Exactly once, whoever races: the claim (status running → failed) and the message are one
// transaction, and the claim locks its rows first, skipping rows another recoverer holds. A row
// claimed and committed is no longer running for anyone; one claimed by a transaction that rolls
// back is running again for the next sweep.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { finishCalls, type FinishRecord } from './run-groups.ts';

/** What a call cut by a crash or restart reads as its error (chat.lastRun shows it). */
export const INTERRUPTED_ERROR = 'instance lost: the service instance stopped or restarted during the call';

/** `metadata.reason` of an answer recovered from a lost instance's checkpoint. */
export const INSTANCE_LOST = 'instance lost';

/** Runs recovered by this process since it started, by how (css_runs_recovered_total). */
export const recoveredRuns = { interrupted: 0, continued: 0 };

/** A database a transaction can be taken on: a pool (the store's functions get `db.pool`). */
export type TransactionDb = Pick<pg.Pool, 'connect'>;

/** Which running calls are lost: an SQL condition on `c` (llm_calls), with its parameters from $2. */
export interface LostCalls {
  where: string;
  params: unknown[];
}

export interface RecoveredCall {
  callId: string;
  chatId: string | null;
  instanceId: string | null;
  /** The checkpointed text was stored as the chat's interrupted answer. */
  stored: boolean;
}

interface ClaimedRow {
  id: string;
  chat_id: string | null;
  instance_id: string | null;
  purpose: string;
  checkpoint_text: string | null;
  checkpoint_token: number | null;
  latency: number;
}

// The latency of a lost call runs to its last checkpoint, the last moment it is known to have been alive.
const claimSql = (where: string) => `UPDATE llm_calls l
       SET status = 'failed', finished_at = now(), error = $1,
           latency_ms = (extract(epoch FROM coalesce(l.checkpoint_at, now()) - l.started_at) * 1000)::int
     WHERE l.id = ANY (ARRAY(
             SELECT c.id FROM llm_calls c WHERE c.status = 'running' AND (${where})
              ORDER BY c.id FOR UPDATE SKIP LOCKED))
    RETURNING l.id, l.chat_id, l.instance_id, l.purpose, l.checkpoint_text, l.checkpoint_token, l.latency_ms AS latency`;

/** The interrupted answer of a claimed chat run, as the drain's and the fencing cut's store writes it. */
function interruptedAnswer(row: ClaimedRow & { chat_id: string; checkpoint_text: string }): FinishRecord {
  return {
    call_id: row.id,
    chat_id: row.chat_id,
    msg_id: randomUUID(),
    content: row.checkpoint_text,
    metadata: { interrupted: true, reason: INSTANCE_LOST },
    latency: row.latency,
    input_tokens: null,
    output_tokens: null,
    total_tokens: null,
    status: 'failed',
    store: true,
    // A later run on the chat (a new stream after the lease expired) keeps the chat: the text is dropped.
    token: row.checkpoint_token,
    error: INTERRUPTED_ERROR,
  };
}

const hasText = (r: ClaimedRow): r is ClaimedRow & { chat_id: string; checkpoint_text: string } =>
  r.chat_id !== null && r.purpose === 'completion' && (r.checkpoint_text ?? '') !== '';

/** Fails the lost calls and stores their checkpointed answers, in one transaction. */
export async function recoverLostCalls(db: TransactionDb, lost: LostCalls): Promise<RecoveredCall[]> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<ClaimedRow>(claimSql(lost.where), [INTERRUPTED_ERROR, ...lost.params]);
    const answers = rows.filter(hasText);
    const stored = new Set<string>();
    if (answers.length > 0) {
      const finished = await finishCalls(client, answers.map(interruptedAnswer));
      finished.forEach((f, i) => {
        if (f.id) stored.add(answers[i]!.id);
      });
    }
    await client.query('COMMIT');
    recoveredRuns.interrupted += rows.filter((r) => r.purpose === 'completion' && r.chat_id !== null).length;
    return rows.map((r) => ({ callId: r.id, chatId: r.chat_id, instanceId: r.instance_id, stored: stored.has(r.id) }));
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
