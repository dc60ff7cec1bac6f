// LlmCall records: one per model call, `running` until it succeeds (with usage, latency and the
// assistant message) or fails (with the error). Calls left running by a dead process are failed at start.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/types.ts';
import type { ProviderName, Usage } from '../providers/types.ts';
import type { Message } from '../types.ts';
import { cleanText, MESSAGE_COLUMNS, toJson, toLlmCall, toMessage, type LlmCall, type LlmCallRow, type MessageRow } from './rows.ts';

export type { LlmCall, LlmCallStatus } from './rows.ts';

export const INTERRUPTED_ERROR = 'interrupted: the server stopped during the call';

export type TokenUsage = Usage;

export interface FinishLlmCall {
  callId: string;
  /** The chat the assistant message goes to; null for a call without a stored chat. */
  chatId: string | null;
  assistant: { content: string; metadata?: Record<string, unknown> | null };
  usage: TokenUsage | null;
  latencyMs: number;
  requestId?: string | null;
  toolRounds?: number | null;
}

/** Records a call as running and returns its id. */
export async function startLlmCall(
  db: Queryable,
  input: { id?: string; chatId: string | null; provider: ProviderName; model: string; instanceId?: string | null },
): Promise<string> {
  const id = input.id ?? randomUUID();
  await db.query('INSERT INTO llm_calls (id, chat_id, provider, model, instance_id) VALUES ($1, $2, $3, $4, $5)', [
    id,
    input.chatId,
    input.provider,
    input.model,
    input.instanceId ?? null,
  ]);
  return id;
}

/**
 * Stores the assistant message (bumping the chat's updatedAt) and marks the call succeeded with
 * usage and latency, atomically: one statement is one transaction, and it costs one round trip
 * where BEGIN/INSERT/UPDATE/COMMIT would cost four. If any part fails, nothing is written and the
 * call stays running.
 * Returns the stored message, or null when there is no chat to store it in (chatId null, or the chat
 * was deleted during the call); the call is marked succeeded either way.
 */
export async function finishLlmCallWithMessage(db: Queryable, input: FinishLlmCall): Promise<Message | null> {
  const { rows } = await db.query<MessageRow & { call_found: number }>(
    `WITH chat AS (
            UPDATE chats SET updated_at = now()
             WHERE id = $2 AND EXISTS (SELECT 1 FROM llm_calls WHERE id = $1)
             RETURNING id
          ),
          msg AS (
            INSERT INTO messages (id, chat_id, role, content, metadata)
            SELECT $3, chat.id, 'assistant', $4::text, $5::jsonb FROM chat
            RETURNING ${MESSAGE_COLUMNS}
          ),
          call AS (
            UPDATE llm_calls
               SET status = 'succeeded', finished_at = now(), error = NULL,
                   latency_ms = $6::int, input_tokens = $7::int, output_tokens = $8::int, total_tokens = $9::int,
                   request_id = $10::text, tool_rounds = $11::int, message_id = (SELECT id FROM msg)
             WHERE id = $1
             RETURNING id
          )
     SELECT msg.*, (SELECT count(*) FROM call)::int AS call_found
       FROM (SELECT 1) AS one LEFT JOIN msg ON true`,
    [
      input.callId,
      input.chatId,
      randomUUID(),
      cleanText(input.assistant.content),
      input.assistant.metadata == null ? null : toJson(input.assistant.metadata),
      Math.round(input.latencyMs),
      input.usage?.inputTokens ?? null,
      input.usage?.outputTokens ?? null,
      input.usage?.totalTokens ?? null,
      input.requestId ?? null,
      input.toolRounds ?? null,
    ],
  );
  const row = rows[0]!;
  // The EXISTS guard above kept an unknown call from writing anything.
  if (row.call_found === 0) throw new Error(`llm call ${input.callId} not found`);
  return row.id ? toMessage(row) : null;
}

/** Marks a call succeeded that stores no message (no chat is kept for it). False when the call is unknown. */
export async function finishLlmCall(
  db: Queryable,
  input: { callId: string; usage: TokenUsage | null; latencyMs: number; requestId?: string | null; toolRounds?: number | null },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE llm_calls
        SET status = 'succeeded', finished_at = now(), error = NULL, latency_ms = $2::int,
            input_tokens = $3::int, output_tokens = $4::int, total_tokens = $5::int,
            request_id = $6::text, tool_rounds = $7::int
      WHERE id = $1`,
    [
      input.callId,
      Math.round(input.latencyMs),
      input.usage?.inputTokens ?? null,
      input.usage?.outputTokens ?? null,
      input.usage?.totalTokens ?? null,
      input.requestId ?? null,
      input.toolRounds ?? null,
    ],
  );
  return rowCount === 1;
}

/** Marks the call failed with its error. False when the call is unknown. */
export async function failLlmCall(
  db: Queryable,
  input: { callId: string; error: string; latencyMs: number },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE llm_calls SET status = 'failed', finished_at = now(), error = $2, latency_ms = $3::int WHERE id = $1`,
    [input.callId, cleanText(input.error), Math.round(input.latencyMs)],
  );
  return rowCount === 1;
}

/**
 * Fails calls left running by a stopped process: called once at start, before any new call begins.
 * With `instanceId`, only this instance's calls (and calls with no instance, or older than
 * `staleAfterMs`, whose instance is presumed gone), so instances sharing a database do not fail
 * each other's live calls. Without it, every running call. Returns how many calls were marked.
 */
export async function markInterruptedLlmCalls(
  db: Queryable,
  opts: { instanceId?: string; staleAfterMs?: number } = {},
): Promise<number> {
  if (opts.instanceId === undefined) {
    const { rowCount } = await db.query(
      `UPDATE llm_calls SET status = 'failed', finished_at = now(), error = $1 WHERE status = 'running'`,
      [INTERRUPTED_ERROR],
    );
    return rowCount ?? 0;
  }
  const { rowCount } = await db.query(
    `UPDATE llm_calls SET status = 'failed', finished_at = now(), error = $1
      WHERE status = 'running'
        AND (instance_id IS NULL OR instance_id = $2 OR started_at < now() - make_interval(secs => $3::double precision / 1000))`,
    [INTERRUPTED_ERROR, opts.instanceId, opts.staleAfterMs ?? 24 * 3600 * 1000],
  );
  return rowCount ?? 0;
}

export async function getLlmCall(db: Queryable, id: string): Promise<LlmCall | null> {
  const { rows } = await db.query<LlmCallRow>('SELECT * FROM llm_calls WHERE id = $1', [id]);
  return rows[0] ? toLlmCall(rows[0]) : null;
}
