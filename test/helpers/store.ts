// Reads and writes that only tests need: the service itself never lists a transcript without its
// chat, reads one LlmCall, or stars without returning the item. Kept here so src/ holds no dead code.
import type { Queryable } from '../../src/db/types.ts';
import type { ProviderName } from '../../src/providers/types.ts';
import { checkpointedTextSql } from '../../src/store/checkpoints.ts';
import { type LlmCallRow } from '../../src/store/llm-call-rows.ts';
import { MESSAGE_COLUMNS, toMessage, type MessageRow } from '../../src/store/message-rows.ts';
import { type ItemType } from '../../src/store/stars-sql.ts';
import { isIssuedId, iso, isoOrNull } from '../../src/store/values.ts';
import { starChat, starSearch } from '../../src/store/stars.ts';
import type { Message, RunStatus } from '../../src/base/types.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

/** One LlmCall as stored (the spec leaves its fields open). */
export interface LlmCall {
  id: string;
  chatId: string | null;
  provider: ProviderName;
  model: string;
  status: RunStatus;
  startedAt: string;
  finishedAt: string | null;
  latencyMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  totalTokens: number | null;
  error: string | null;
  /** The assistant message stored with the call's success. */
  messageId: string | null;
}

export async function getLlmCall(db: Queryable, id: string): Promise<LlmCall | null> {
  if (!isIssuedId(id)) return null;
  const { rows } = await db.query<LlmCallRow>('SELECT * FROM llm_calls WHERE id = $1', [id]);
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    chatId: row.chat_id,
    provider: row.provider as ProviderName,
    model: row.model,
    status: row.status as RunStatus,
    startedAt: iso(row.started_at),
    finishedAt: isoOrNull(row.finished_at),
    latencyMs: row.latency_ms,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    totalTokens: row.total_tokens,
    error: row.error,
    messageId: row.message_id,
  };
}

/** The transcript in order; empty for an unknown chat. */
export async function listMessages(db: Queryable, chatId: string): Promise<Message[]> {
  if (!isIssuedId(chatId)) return [];
  const { rows } = await db.query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = $1 ORDER BY seq`, [chatId]);
  return rows.map(toMessage);
}

/** Idempotent. False when the item does not exist. */
export async function setStarred(db: Queryable, type: ItemType, id: string, starred: boolean): Promise<boolean> {
  const item = type === 'chat' ? await starChat(db, id, starred, ADMIN_USER_ID) : await starSearch(db, id, starred, ADMIN_USER_ID);
  return item !== null;
}

/**
 * The rows a refused request must not add, per table: chats, messages, searches and LlmCalls. Compare
 * two readings with deepEqual.
 */
export async function storedRows(db: Queryable): Promise<Record<string, number>> {
  const { rows } = await db.query<Record<string, number>>(
    'SELECT (SELECT count(*)::int FROM chats) AS chats, (SELECT count(*)::int FROM messages) AS messages, (SELECT count(*)::int FROM searches) AS searches, (SELECT count(*)::int FROM llm_calls) AS calls',
  );
  return rows[0]!;
}

/**
 * A call's checkpointed text, its chunks joined as recovery reads them (`checkpoint_text`, $1 the call):
 * '' when nothing was checkpointed, and once the call has ended (its chunks go with it).
 */
export const CHECKPOINTED_TEXT = `SELECT ${checkpointedTextSql('l')} AS checkpoint_text FROM llm_calls l WHERE l.id = $1`;
