// Takeover (docs/operations.md, "Answers that outlive their instance"): inside the recovery's transaction
// (recovery.ts), a lost provider_b chat run with checkpointed text is handed to this instance instead
// of ending as interrupted text. One statement per run: the chat's next fencing token is taken (only
// while the chat still holds the lost run's, i.e. no later run started on it), the continuing LlmCall
// is inserted as running on this instance with the checkpointed text as its own first checkpoint (the
// chunk at 0: the continuation's run streams that text first, and checkpoints what follows it), the
// lost call's error says who continues it, and the run's Idempotency-Key points at the new call so that
// a retry with it attaches. Because the new call is running here from the same commit on, this
// instance dying before the continuation starts leaves it to the next recovery, as interrupted text
// (`continues_call_id` set: never taken over twice).
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/types.ts';

/** A lost run claimed for continuation, as the claim read it. */
export interface LostRun {
  callId: string;
  chatId: string;
  provider: string;
  model: string;
  owner: string;
  text: string;
  /**
   * The lengths of the deltas the lost run streamed its checkpointed text in (they may cover more than
   * `text`, which ends trimmed); null when its run did not keep them.
   */
  deltas: number[] | null;
  token: number;
  /** The lost run's traceparent, when it was traced (its first checkpoint stored it). */
  trace: string | null;
}

/** A lost run handed to this instance: the continuing call, running, under `runToken`. */
export interface ContinuedRun extends LostRun {
  /** The continuing LlmCall (the lost one is `callId`). */
  newCallId: string;
  runToken: number;
}

const CONTINUE_RUN = `WITH chat AS (
       UPDATE chats SET run_token = run_token + 1 WHERE id = $1 AND run_token = $2 RETURNING run_token
     ),
     call AS (
       INSERT INTO llm_calls (id, chat_id, provider, model, instance_id, owner_id, checkpoint_token, checkpoint_at, continues_call_id)
       SELECT $3, $1, $4, $5, $6, $7, chat.run_token, now(), $9 FROM chat
       RETURNING id
     ),
     first_chunk AS (
       INSERT INTO llm_call_checkpoint_chunks (call_id, pos, text) SELECT id, 0, $8 FROM call
     ),
     lost AS (
       UPDATE llm_calls SET error = $10 WHERE id = $9 AND EXISTS (SELECT 1 FROM call) RETURNING id
     ),
     keyed AS (
       UPDATE idempotency_keys SET call_id = $3 WHERE call_id = $9 AND status = 'running' AND EXISTS (SELECT 1 FROM call) RETURNING key
     )
     SELECT run_token FROM chat`;

/** The lost call's error once a peer continues it. */
export const continuedError = (newCallId: string) => `instance lost: the service instance stopped during the call; continued by call ${newCallId}`;

/** Hands `run` to `instanceId`; null when a later run holds its chat (it is then recovered as interrupted text). */
export async function continueLostRun(db: Queryable, run: LostRun, instanceId: string): Promise<ContinuedRun | null> {
  const newCallId = randomUUID();
  const { rows } = await db.query<{ run_token: number }>(CONTINUE_RUN, [
    run.chatId,
    run.token,
    newCallId,
    run.provider,
    run.model,
    instanceId,
    run.owner,
    run.text,
    run.callId,
    continuedError(newCallId),
  ]);
  const row = rows[0];
  return row ? { ...run, newCallId, runToken: row.run_token } : null;
}

/** The Idempotency-Key a continuation inherited (the lost run's start had one), while its outcome is not recorded. */
export async function keyOfContinuation(db: Queryable, newCallId: string): Promise<{ key: string; mode: 'whole' | 'stream'; owner: string } | null> {
  const { rows } = await db.query<{ key: string; mode: 'whole' | 'stream'; owner_id: string }>(
    `SELECT key, mode, owner_id FROM idempotency_keys WHERE call_id = $1 AND status = 'running'`,
    [newCallId],
  );
  const r = rows[0];
  return r ? { key: r.key, mode: r.mode, owner: r.owner_id } : null;
}
