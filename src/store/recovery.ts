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

/**
 * Runs recovered by one server since it started, by how (css_runs_recovered_total). Each server builds
 * its own (src/app.ts) and hands it to its start's recovery, its heartbeat's sweep and its metrics, so
 * two servers in one process count apart.
 */
export interface RecoveredRuns {
  interrupted: number;
  continued: number;
}

export const newRecoveredRuns = (): RecoveredRuns => ({ interrupted: 0, continued: 0 });

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

// A search run of a lost instance (searches.run_instance_id, set while it runs) reads as failed with the
// same error; the results and answer of its search's earlier run, if any, stay. The search's columns
// are renamed so that a LostCalls condition on `c` reads them as it reads a call's. Re-checked against
// the row's latest version, so a run that a live instance started on it meanwhile is left alone.
const failSearchesSql = (where: string) => `UPDATE searches s
       SET error = $1, run_instance_id = NULL, run_started_at = NULL, last_run_at = now()
      FROM (SELECT id, run_instance_id AS instance_id, run_started_at AS started_at
              FROM searches WHERE run_instance_id IS NOT NULL) c
     WHERE s.id = c.id AND s.run_instance_id = c.instance_id AND s.run_started_at = c.started_at AND (${where})`;

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

export interface Recovered {
  calls: RecoveredCall[];
  /** Search runs of the lost instances, failed. */
  searches: number;
}

/**
 * Fails the lost calls and search runs and stores the calls' checkpointed answers, in one transaction.
 * The chat runs among them are added to `tally` once committed.
 */
export async function recoverLostCalls(db: TransactionDb, lost: LostCalls, tally?: RecoveredRuns): Promise<Recovered> {
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
    const searches = await client.query(failSearchesSql(lost.where), [INTERRUPTED_ERROR, ...lost.params]);
    await client.query('COMMIT');
    if (tally) tally.interrupted += rows.filter((r) => r.purpose === 'completion' && r.chat_id !== null).length;
    return {
      calls: rows.map((r) => ({ callId: r.id, chatId: r.chat_id, instanceId: r.instance_id, stored: stored.has(r.id) })),
      searches: searches.rowCount ?? 0,
    };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
