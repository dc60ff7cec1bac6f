// LlmCall records: one per model call, `running` until it succeeds (with usage, latency and the
// assistant message), is stopped by the user (with the partial message), or fails (with the error).
// Calls left running by a dead process are failed at its restart (markInterruptedLlmCalls) or by any
// live instance's heartbeat sweeper (instances.ts).
import { randomUUID } from 'node:crypto';
import { GroupRefused, groupCommit } from '../db/group-commit.ts';
import { prepared } from '../db/prepared.ts';
import type { Queryable } from '../db/types.ts';
import type { WriteRetryQueue } from '../db/write-retry.ts';
import type { ProviderName, Usage } from '../providers/types.ts';
import type { Message } from '../base/types.ts';
import { FencedWriteError } from './fencing.ts';
import { MESSAGE_COLUMNS, toMessage, type MessageRow } from './message-rows.ts';
import { finishCalls, type FinishRecord, type FinishRow } from './run-groups.ts';
import { cleanText, toJson } from './values.ts';
import { noteRunWrites } from './first-analyze.ts';
import { recoverLostCalls, type RecoveredRuns, type TransactionDb } from './recovery.ts';
import { spentSql } from './day-tokens.ts';
import { CHAT_NOT_FOUND } from '../base/messages.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';


export { INTERRUPTED_ERROR } from './recovery.ts';

export type TokenUsage = Usage;

export interface FinishLlmCall {
  callId: string;
  /** The chat the assistant message goes to; null for a call without a stored chat. */
  chatId: string | null;
  assistant: { content: string; metadata?: Record<string, unknown> | null };
  usage: TokenUsage | null;
  /** USD under MODEL_PRICES (src/cost/prices.ts); null or absent: no price, or no usage. */
  cost?: number | null;
  latencyMs: number;
  /**
   * The user stopped the run: the call ends `stopped`, the partial answer is stored with
   * `metadata.stopped` true, and an empty one is not stored at all.
   */
  stopped?: boolean;
  /**
   * The run was cut (drain, fencing): the call ends `failed` with this error, and the partial answer
   * is stored with `metadata.interrupted` true (an empty one is not stored).
   */
  interrupted?: string;
  /** The run's fencing token (sql/007_fencing.sql): nothing is written unless the chat still holds it. */
  runToken?: number | null;
}

/**
 * INSERT of a running call for the chat that the CTE `chat` yields (none when it yields no row), for
 * statements that write a run's start in one round trip (createChat). Arguments are SQL
 * expressions (parameters).
 */
export function insertCallSql(chat: string, provider: string, model: string, id: string, instanceId: string): string {
  // The call belongs to whoever owns its chat, and keeps the run's fencing token in `checkpoint_token`: recovery.ts.
  return `INSERT INTO llm_calls (id, chat_id, provider, model, instance_id, owner_id, checkpoint_token)
          SELECT ${id}::text, ${chat}.id, ${provider}, ${model}, ${instanceId}::text, ${chat}.owner_id, ${chat}.run_token FROM ${chat}`;
}

/** A call's chat was deleted before the call was recorded: to its caller, the spec's `chat not found`. */
export class ChatGoneError extends ServiceError {
  constructor(readonly chatId: string) {
    super(ErrorCodes.CHAT_GONE, CHAT_NOT_FOUND);
    this.name = 'ChatGoneError';
  }
}

/** Postgres's foreign_key_violation: the row a new row points at is not there. */
const FOREIGN_KEY_VIOLATION = '23503';

/** Records a call as running and returns its id; a ChatGoneError when its chat is gone. */
export async function startLlmCall(
  db: Queryable,
  input: {
    id?: string;
    chatId: string | null;
    provider: ProviderName;
    model: string;
    instanceId?: string | null;
    /** `title`: a title suggestion, which chat.lastRun does not count as the chat's run. */
    purpose?: 'completion' | 'title';
    /** The user whose usage the call is (the built-in admin when not given). */
    owner: string;
  },
): Promise<string> {
  const id = input.id ?? randomUUID();
  try {
    await db.query(prepared(db, 'INSERT INTO llm_calls (id, chat_id, provider, model, instance_id, purpose, owner_id) VALUES ($1, $2, $3, $4, $5, $6, $7)'), [
      id,
      input.chatId,
      input.provider,
      input.model,
      input.instanceId ?? null,
      input.purpose ?? 'completion',
      input.owner,
    ]);
  } catch (err) {
    if (input.chatId !== null && (err as { code?: unknown }).code === FOREIGN_KEY_VIOLATION) throw new ChatGoneError(input.chatId);
    throw err;
  }
  return id;
}

// `held` locks the chat row and reads its latest version (FOR UPDATE re-reads a row that a concurrent
// run start changed), so the token comparison cannot miss a run that started meanwhile.
const FINISH_WITH_MESSAGE = `WITH held AS (SELECT run_token FROM chats WHERE id = $2 FOR UPDATE),
          stale AS (SELECT 1 FROM held WHERE $12::int IS NOT NULL AND run_token <> $12::int),
          chat AS (
            UPDATE chats SET updated_at = now()
             WHERE id = $2 AND $11::boolean AND EXISTS (SELECT 1 FROM llm_calls WHERE id = $1)
               AND NOT EXISTS (SELECT 1 FROM stale)
             RETURNING id
          ),
          msg AS (
            INSERT INTO messages (id, chat_id, role, content, metadata)
            SELECT $3, chat.id, 'assistant', $4::text, $5::jsonb FROM chat
            RETURNING ${MESSAGE_COLUMNS}
          ),
          call AS (
            UPDATE llm_calls
               SET status = $10::text, finished_at = now(), error = $13::text,
                   latency_ms = $6::int, input_tokens = $7::int, output_tokens = $8::int, total_tokens = $9::int,
                   cache_read_tokens = $14::int, cache_write_tokens = $15::int, cost = $16::double precision,
                   message_id = (SELECT id FROM msg)
             WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM stale)
             RETURNING id, owner_id, started_at, total_tokens, cost
          ),
          spent AS (${spentSql('call')})
     SELECT msg.*, (SELECT count(*) FROM call)::int AS call_found, (SELECT count(*) FROM stale)::int AS stale
       FROM (SELECT 1) AS one LEFT JOIN msg ON true`;

/**
 * Stores the assistant message (bumping the chat's updatedAt) and marks the call succeeded (or
 * stopped) with usage and latency, atomically: one statement is one transaction, and it costs one round trip
 * where BEGIN/INSERT/UPDATE/COMMIT would cost four. If any part fails, nothing is written and the
 * call stays running. The answers of runs that end in the same turn go in one statement (group
 * commit, run-groups.ts), each with its own outcome.
 * Returns the stored message, or null when there is no chat to store it in (chatId null, or the chat
 * was deleted during the call); the call is marked succeeded either way.
 */
export function finishLlmCallWithMessage(db: Queryable, input: FinishLlmCall): Promise<Message | null> {
  noteRunWrites(db, 1);
  return finishGrouped(db, input);
}

/** The statement's values for `input`: the message id made here, text cleaned, the outcome chosen. */
function toFinishRecord(input: FinishLlmCall): FinishRecord {
  const stopped = input.stopped === true;
  const cut = input.interrupted !== undefined;
  const metadata = cut ? { ...input.assistant.metadata, interrupted: true } : stopped ? { ...input.assistant.metadata, stopped: true } : input.assistant.metadata;
  return {
    call_id: input.callId,
    chat_id: input.chatId,
    msg_id: randomUUID(),
    content: cleanText(input.assistant.content),
    metadata: metadata ?? null,
    latency: Math.round(input.latencyMs),
    input_tokens: input.usage?.inputTokens ?? null,
    output_tokens: input.usage?.outputTokens ?? null,
    total_tokens: input.usage?.totalTokens ?? null,
    ...cachedColumns(input.usage, input.cost),
    status: cut ? 'failed' : stopped ? 'stopped' : 'succeeded',
    store: !(stopped || cut) || input.assistant.content !== '',
    token: input.runToken ?? null,
    error: cut ? cleanText(input.interrupted!) : null,
  };
}

/** The columns of the cache's share of the input and of the cost (null without usage). */
function cachedColumns(usage: TokenUsage | null, cost: number | null | undefined): Pick<FinishRecord, 'cache_read' | 'cache_write' | 'cost'> {
  if (!usage) return { cache_read: null, cache_write: null, cost: null };
  return { cache_read: usage.cacheReadTokens ?? 0, cache_write: usage.cacheWriteTokens ?? 0, cost: cost ?? null };
}

/** A member's outcome from its row: the message, null, or the error its call gets. */
function finishOutcome(input: FinishLlmCall, row: FinishRow): Message | null | Error {
  if (row.stale > 0) return new FencedWriteError(input.chatId ?? '', input.runToken ?? 0, input.interrupted !== undefined ? 'the interrupted answer' : 'the answer');
  // The EXISTS guard kept an unknown call from writing anything.
  if (row.call_found === 0) return new Error(`llm call ${input.callId} not found`);
  return row.id ? toMessage(row) : null;
}

async function finishAlone(db: Queryable, input: FinishLlmCall): Promise<Message | null> {
  const r = toFinishRecord(input);
  const { rows } = await db.query<FinishRow>(prepared(db, FINISH_WITH_MESSAGE), [
    r.call_id, r.chat_id, r.msg_id, r.content, r.metadata == null ? null : toJson(r.metadata), r.latency,
    r.input_tokens, r.output_tokens, r.total_tokens, r.status, r.store, r.token, r.error,
    r.cache_read, r.cache_write, r.cost,
  ]);
  const outcome = finishOutcome(input, rows[0]!);
  if (outcome instanceof Error) throw outcome;
  return outcome;
}

const finishGrouped = groupCommit<FinishLlmCall, Message | null>(finishAlone, async (db, inputs) => {
  // Two answers for one chat (or one call) in a group would each need the other's lock order and
  // outcome: such a group is written member by member instead.
  const chats = new Set(inputs.map((i) => i.chatId ?? `call:${i.callId}`));
  if (chats.size < inputs.length) throw new GroupRefused('a group with two answers for one chat');
  const rows = await finishCalls(db, inputs.map(toFinishRecord));
  return inputs.map((input, i) => finishOutcome(input, rows[i]!));
});

/**
 * Marks a call succeeded that stores no message (no chat is kept for it). False when the call is
 * unknown or no longer running: a call a sweeper recovered while its owner was paused keeps that outcome.
 */
export async function finishLlmCall(
  db: Queryable,
  input: { callId: string; usage: TokenUsage | null; cost?: number | null; latencyMs: number },
): Promise<boolean> {
  const c = cachedColumns(input.usage, input.cost);
  const { rows } = await db.query<{ n: number }>(
    prepared(db, `WITH call AS (
       UPDATE llm_calls
          SET status = 'succeeded', finished_at = now(), error = NULL, latency_ms = $2::int,
              input_tokens = $3::int, output_tokens = $4::int, total_tokens = $5::int,
              cache_read_tokens = $6::int, cache_write_tokens = $7::int, cost = $8::double precision
        WHERE id = $1 AND status = 'running'
        RETURNING owner_id, started_at, total_tokens, cost
     ),
     spent AS (${spentSql('call')})
     SELECT count(*)::int AS n FROM call`),
    [
      input.callId,
      Math.round(input.latencyMs),
      input.usage?.inputTokens ?? null,
      input.usage?.outputTokens ?? null,
      input.usage?.totalTokens ?? null,
      c.cache_read,
      c.cache_write,
      c.cost,
    ],
  );
  return rows[0]!.n === 1;
}

/**
 * Marks a running call failed with its error. False when the call is unknown or already ended (a
 * call that succeeded, or was failed by a sweeper, keeps that outcome). `sinceFailureMs` dates
 * `finished_at` back to the failure when the write lands late (a retry after an outage).
 */
export async function failLlmCall(
  db: Queryable,
  input: { callId: string; error: string; latencyMs: number; sinceFailureMs?: number; usage?: TokenUsage | null; cost?: number | null },
): Promise<boolean> {
  const c = cachedColumns(input.usage ?? null, input.cost);
  // The usage of the rounds that completed before the failure (a tool round, say) is the call's and
  // its owner's: the provider was paid for them. Only a running call is failed, so a repeat of this
  // write (a retry after a lost reply) adds nothing twice.
  const { rows } = await db.query<{ n: number }>(
    prepared(db, `WITH call AS (
       UPDATE llm_calls
          SET status = 'failed', finished_at = now() - make_interval(secs => $4::double precision / 1000),
              error = $2, latency_ms = $3::int, input_tokens = $5::int, output_tokens = $6::int, total_tokens = $7::int,
              cache_read_tokens = $8::int, cache_write_tokens = $9::int, cost = $10::double precision
        WHERE id = $1 AND status = 'running'
        RETURNING owner_id, started_at, total_tokens, cost
     ),
     spent AS (${spentSql('call')})
     SELECT count(*)::int AS n FROM call`),
    [
      input.callId,
      cleanText(input.error),
      Math.round(input.latencyMs),
      input.sinceFailureMs ?? 0,
      input.usage?.inputTokens ?? null,
      input.usage?.outputTokens ?? null,
      input.usage?.totalTokens ?? null,
      c.cache_read,
      c.cache_write,
      c.cost,
    ],
  );
  return rows[0]!.n === 1;
}

/**
 * failLlmCall that outlives a database outage: when the database cannot be reached the write is
 * retried in the background until it is back (write-retry.ts), so the caller can end its run now.
 * Never rejects: a permanent error is returned as 'failed' (the call stays for the sweepers).
 */
export function recordLlmCallFailure(
  db: Queryable,
  input: { callId: string; error: string; latencyMs: number; usage?: TokenUsage | null; cost?: number | null },
  queue: WriteRetryQueue,
): Promise<'written' | 'queued' | 'failed'> {
  return queue
    .write(`the failure of LlmCall ${input.callId}`, (sinceFailureMs) => failLlmCall(db, { ...input, sinceFailureMs }))
    .catch(() => 'failed' as const);
}

/**
 * Recovers the runs whose actor thread died, by their LlmCall or search ids, as a restart would
 * (below): failed as `instance lost`, a chat run's checkpointed text stored as its interrupted answer.
 */
export async function recoverRunsById(db: TransactionDb, ids: readonly string[], tally?: RecoveredRuns): Promise<number> {
  return (await recoverLostCalls(db, { where: 'c.id = ANY ($2::text[])', params: [ids] }, { tally })).calls.length;
}

/**
 * Recovers calls left running by a stopped process (recovery.ts: failed as `instance lost`, a chat
 * run's checkpointed text stored as its interrupted answer): called once at start, before any new
 * call begins. With `instanceId`, only this instance's calls (and calls with no instance, or older
 * than `staleAfterMs`, whose instance is presumed gone), so instances sharing a database do not fail
 * each other's live calls (the same for search runs). Without it, every running call. Returns how many
 * calls were recovered; the chat runs among them are counted in `tally`.
 */
export async function markInterruptedLlmCalls(
  db: TransactionDb,
  opts: { instanceId?: string; staleAfterMs?: number; tally?: RecoveredRuns } = {},
): Promise<number> {
  const lost =
    opts.instanceId === undefined
      ? { where: 'true', params: [] }
      : {
          where: 'c.instance_id IS NULL OR c.instance_id = $2 OR c.started_at < now() - make_interval(secs => $3::double precision / 1000)',
          params: [opts.instanceId, opts.staleAfterMs ?? 24 * 3600 * 1000],
        };
  return (await recoverLostCalls(db, lost, { tally: opts.tally })).calls.length;
}
