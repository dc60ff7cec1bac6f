// Chat transcript messages. Order is the identity column `seq`, never created_at: messages written in
// one transaction share a timestamp.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/types.ts';
import type { Message, Role } from '../base/types.ts';
import { FencedWriteError } from './fencing.ts';
import { MESSAGE_COLUMNS, toMessage, type MessageRow } from './message-rows.ts';
import { cleanText, isIssuedId, toJson } from './values.ts';

export interface NewMessage {
  role: Role;
  content: string;
  name?: string | null;
  metadata?: Record<string, unknown> | null;
}

/** The JSON parameter consumed by insertMessagesSql: ids made here, `ord` fixes the order. */
export function messagesParam(msgs: readonly NewMessage[]): string {
  return toJson(messagesRows(msgs));
}

/** messagesParam's records, for a statement that takes several runs' messages in one parameter. */
export function messagesRows(msgs: readonly NewMessage[]): Array<Record<string, unknown>> {
  return msgs.map((m, ord) => ({
    id: randomUUID(),
    ord,
    role: m.role,
    content: cleanText(m.content),
    name: cleanText(m.name),
    metadata: m.metadata ?? null,
  }));
}

/**
 * INSERT of every message in the JSON parameter `param` into the chat that the CTE `chat` yields
 * (none when it yields no row), in one statement whatever the count. Rows are inserted in `ord` order,
 * so `seq` follows the caller's order.
 */
export function insertMessagesSql(chat: string, param: string): string {
  return `INSERT INTO messages (id, chat_id, role, content, name, metadata)
          SELECT x.id, ${chat}.id, x.role, x.content, x.name, x.metadata
            FROM ${chat},
                 json_to_recordset(${param}::json)
                   AS x(id text, ord integer, role text, content text, name text, metadata jsonb)
           ORDER BY x.ord
          RETURNING seq, ${MESSAGE_COLUMNS}`;
}

/**
 * Appends messages to a chat in order and bumps the chat's updatedAt, in one statement.
 * Returns null when the chat does not exist (nothing is written then). With `runToken` (a run's
 * write), only while the chat still holds that fencing token: else FencedWriteError, nothing written.
 * Without it, only when the chat belongs to `owner`. A run's token was taken by a start that checked
 * the owner, so it stands for the owner.
 */
export async function appendMessages(
  db: Queryable,
  chatId: string,
  msgs: readonly NewMessage[],
  owner: string,
  runToken: number | null = null,
): Promise<Message[] | null> {
  if (!isIssuedId(chatId)) return null;
  if (msgs.length === 0) {
    const found = await db.query('SELECT 1 FROM chats WHERE id = $1 AND owner_id = $2', [chatId, owner]);
    return found.rowCount ? [] : null;
  }
  // The token is compared by the UPDATE itself, on the row's latest version under its lock, so a run
  // start that commits meanwhile is seen.
  const { rows } = await db.query<MessageRow>(
    `WITH chat AS (
       UPDATE chats SET updated_at = now()
        WHERE id = $1 AND CASE WHEN $3::int IS NULL THEN owner_id = $4 ELSE run_token = $3::int END
        RETURNING id
     ),
          ins AS (${insertMessagesSql('chat', '$2')})
     SELECT ${MESSAGE_COLUMNS} FROM ins ORDER BY seq`,
    [chatId, messagesParam(msgs), runToken, owner],
  );
  if (rows.length) return rows.map(toMessage);
  if (runToken !== null && (await db.query('SELECT 1 FROM chats WHERE id = $1', [chatId])).rowCount) {
    throw new FencedWriteError(chatId, runToken, `${msgs.length} message(s)`);
  }
  return null;
}
