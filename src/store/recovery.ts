// Recovery of the LlmCalls a dead instance left running: at the start of an instance with its
// INSTANCE_ID (llm-calls.ts, markInterruptedLlmCalls), or by any live instance's sweeper once its
// heartbeat stopped (instances.ts, sweepDeadInstances). Each such call is failed with an error that
// starts with "instance lost", and a chat run's checkpointed text (sql/011_checkpoints.sql, its chunks joined: sql/018) becomes
// its chat's assistant message with `metadata.interrupted` and `metadata.reason: "instance lost"`,
// through the same statement that stores a drained or fenced run's partial answer (run-groups.ts).
//
// Exactly once, whoever races: the claim (status running → failed) and the message are one
// transaction, and the claim locks its rows first, skipping rows another recoverer holds. A row
// claimed and committed is no longer running for anyone; one claimed by a transaction that rolls
// back is running again for the next sweep.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Queryable } from '../db/types.ts';
import { checkpointedDeltasSql, checkpointedTextSql, joinDeltaLengths } from './checkpoints.ts';
import { finishCalls, type FinishRecord } from './run-groups.ts';
import { continueLostRun, type ContinuedRun } from './takeover.ts';

/** What a call cut by a crash or restart reads as its error (chat.lastRun shows it). */
export const INTERRUPTED_ERROR = 'instance lost: the service instance stopped or restarted during the call';

/** `metadata.reason` of an answer recovered from a lost instance's checkpoint. */
export const INSTANCE_LOST = 'instance lost';

/**
 * Runs recovered by one server since it started, by how (css_runs_recovered_total). Each server builds
 * its own (src/app/app.ts) and hands it to its start's recovery, its heartbeat's sweep and its metrics, so
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
  checkpoint_deltas: string | null;
  checkpoint_token: number | null;
  latency: number;
  provider: string;
  model: string;
  owner_id: string;
  continues_call_id: string | null;
  trace_parent: string | null;
}

// The latency of a lost call runs to its last checkpoint, the last moment it is known to have been alive.
// Its text is its chunks joined (sql/018_checkpoint_chunks.sql), read here under the statement's
// snapshot; the call's end (status failed) then drops them.
const claimSql = (where: string) => `UPDATE llm_calls l
       SET status = 'failed', finished_at = now(), error = $1,
           latency_ms = (extract(epoch FROM coalesce(l.checkpoint_at, now()) - l.started_at) * 1000)::int
     WHERE l.id = ANY (ARRAY(
             SELECT c.id FROM llm_calls c WHERE c.status = 'running' AND (${where})
              ORDER BY c.id FOR UPDATE SKIP LOCKED))
    RETURNING l.id, l.chat_id, l.instance_id, l.purpose, ${checkpointedTextSql('l')} AS checkpoint_text,
              ${checkpointedDeltasSql('l')} AS checkpoint_deltas, l.checkpoint_token, l.latency_ms AS latency,
              l.provider, l.model, l.owner_id, l.continues_call_id, l.trace_parent`;

// A search run of a lost instance (searches.run_instance_id, set while it runs) reads as failed with the
// same error; the results and answer of its search's earlier run, if any, stay. The search's columns
// are renamed so that a LostCalls condition on `c` reads them as it reads a call's. Re-checked against
// the row's latest version, so a run that a live instance started on it meanwhile is left alone.
const failSearchesSql = (where: string) => `UPDATE searches s
       SET error = $1, run_instance_id = NULL, run_started_at = NULL, last_run_at = now()
      FROM (SELECT id, run_instance_id AS instance_id, run_started_at AS started_at
              FROM searches WHERE run_instance_id IS NOT NULL) c
     WHERE s.id = c.id AND s.run_instance_id = c.instance_id AND s.run_started_at = c.started_at AND (${where})`;

// The lost runs' chats take their next fencing token, each only while it still holds the lost run's
// (the token its call kept from its start): an owner that was only paused, not dead, and wakes after
// its run was recovered finds every later write of its run refused (its tool messages, its answer, its
// cut text), so the recovered outcome stands and the chat never holds that run's text twice. Taken
// after the interrupted answers, which are written under the lost run's token.
const FENCE_LOST_RUNS = `UPDATE chats c SET run_token = c.run_token + 1
      FROM unnest($1::text[], $2::int[]) AS v(chat_id, token)
     WHERE c.id = ANY ($1::text[]) AND c.id = v.chat_id AND c.run_token = v.token`;

/** The interrupted answer of a lost chat run, as the drain's and the fencing cut's store writes it. */
function interruptedAnswer(a: { callId: string; chatId: string; text: string; latency: number; token: number | null }): FinishRecord {
  return {
    call_id: a.callId,
    chat_id: a.chatId,
    msg_id: randomUUID(),
    content: a.text,
    metadata: { interrupted: true, reason: INSTANCE_LOST },
    latency: a.latency,
    input_tokens: null,
    output_tokens: null,
    total_tokens: null,
    cache_read: null,
    cache_write: null,
    cost: null,
    status: 'failed',
    store: true,
    // A later run on the chat (a new stream after the lease expired) keeps the chat: the text is dropped.
    token: a.token,
    error: INTERRUPTED_ERROR,
  };
}

/**
 * A continuation that could not start (its chat's lease stayed taken, the cluster was out of reach):
 * its call ends as any lost run does, the checkpointed text kept as the interrupted answer.
 */
export async function endAsInterrupted(db: Queryable, run: ContinuedRun, tally?: RecoveredRuns): Promise<void> {
  const [row] = await finishCalls(db, [interruptedAnswer({ callId: run.newCallId, chatId: run.chatId, text: run.text, latency: 0, token: run.runToken })]);
  // A new run took the chat first (a user's start won its lease): the text is dropped, but the call
  // still ends, or it reads running for good on this live instance and keeps its start's Idempotency-Key
  // waiting (or attached to that other run).
  if (row && row.stale > 0) await db.query(FAIL_LEFT_CALL, [run.newCallId, INTERRUPTED_ERROR]);
  if (tally) tally.interrupted++;
}

const FAIL_LEFT_CALL = `UPDATE llm_calls SET status = 'failed', finished_at = now(), error = $2, latency_ms = 0 WHERE id = $1 AND status = 'running'`;

const hasText = (r: ClaimedRow): r is ClaimedRow & { chat_id: string; checkpoint_text: string } =>
  r.chat_id !== null && r.purpose === 'completion' && (r.checkpoint_text ?? '') !== '';

/** Which lost runs this instance continues instead (takeover), and as which instance. */
export interface TakeoverPolicy {
  instanceId: string;
  /** Providers whose API continues a trailing assistant turn. */
  providers: ReadonlySet<string>;
  /** Starts the continuation of a run handed to this instance, once that is committed. */
  start(run: ContinuedRun): void;
}

/** A run continues only once: a continuation that is itself lost ends as interrupted text. */
const continuable = (r: ClaimedRow & { chat_id: string; checkpoint_text: string }, policy: TakeoverPolicy) =>
  r.continues_call_id === null && r.checkpoint_token !== null && policy.providers.has(r.provider) && r.checkpoint_text.trimEnd() !== '';

// The prefill the Messages API continues may not end in whitespace; the continuation brings its own.
const lostRun = (r: ClaimedRow & { chat_id: string; checkpoint_text: string }) => ({
  callId: r.id,
  chatId: r.chat_id,
  provider: r.provider,
  model: r.model,
  owner: r.owner_id,
  text: r.checkpoint_text.trimEnd(),
  deltas: joinDeltaLengths(r.checkpoint_deltas),
  token: r.checkpoint_token!,
  trace: r.trace_parent,
});

export interface Recovered {
  calls: RecoveredCall[];
  /** Runs handed to this instance to continue (takeover): their new calls run here from now on. */
  continued: ContinuedRun[];
  /** Search runs of the lost instances, failed. */
  searches: number;
}

/**
 * Fails the lost calls and search runs and stores the calls' checkpointed answers, in one transaction;
 * with `takeover`, hands some runs to this instance to continue instead. The chat runs among them are
 * added to `tally` once committed.
 */
export async function recoverLostCalls(
  db: TransactionDb,
  lost: LostCalls,
  { tally, takeover = null }: { tally?: RecoveredRuns; takeover?: TakeoverPolicy | null } = {},
): Promise<Recovered> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<ClaimedRow>(claimSql(lost.where), [INTERRUPTED_ERROR, ...lost.params]);
    const continued: ContinuedRun[] = [];
    const answers: Array<ClaimedRow & { chat_id: string; checkpoint_text: string }> = [];
    for (const r of rows.filter(hasText)) {
      const run = takeover && continuable(r, takeover) ? await continueLostRun(client, lostRun(r), takeover.instanceId) : null;
      if (run) continued.push(run);
      else answers.push(r);
    }
    const stored = new Set<string>();
    if (answers.length > 0) {
      const finished = await finishCalls(
        client,
        answers.map((r) => interruptedAnswer({ callId: r.id, chatId: r.chat_id, text: r.checkpoint_text, latency: r.latency, token: r.checkpoint_token })),
      );
      finished.forEach((f, i) => {
        if (f.id) stored.add(answers[i]!.id);
      });
    }
    const fenced = rows.filter((r) => r.chat_id !== null && r.checkpoint_token !== null && !continued.some((c) => c.callId === r.id));
    if (fenced.length > 0) await client.query(FENCE_LOST_RUNS, [fenced.map((r) => r.chat_id), fenced.map((r) => r.checkpoint_token)]);
    const searches = await client.query(failSearchesSql(lost.where), [INTERRUPTED_ERROR, ...lost.params]);
    await client.query('COMMIT');
    for (const run of continued) takeover!.start(run);
    if (tally) tally.interrupted += rows.filter((r) => r.purpose === 'completion' && r.chat_id !== null).length - continued.length;
    return {
      continued,
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
