// Starring = membership in the reserved project `starred`. starredAt is the membership's creation
// time, so starring again keeps it; neither starring nor unstarring touches the item's updatedAt.
import type { Queryable } from '../db/types.ts';
import type { ChatSummary, SearchSummary } from '../base/types.ts';
import { chatColumns, toChatSummary, type ChatRow } from './chat-rows.ts';
import { searchSummaryColumns, toSearchSummary, type SearchSummaryRow } from './search-rows.ts';
import { STARRED_PROJECT, type ItemType } from './stars-sql.ts';
import { isIssuedId } from './values.ts';

const ITEMS = {
  chat: { table: 'chats', columns: chatColumns('i') },
  search: { table: 'searches', columns: searchSummaryColumns('i') },
} as const;

/**
 * One statement: reads the item, adds or removes its membership, returns the item row with its
 * starred_at (undefined when the item does not exist).
 * Starring uses ON CONFLICT DO UPDATE (a no-op update) rather than DO NOTHING so RETURNING yields the
 * existing membership too, including one a concurrent request inserted after this statement's snapshot.
 */
async function star<R>(db: Queryable, type: ItemType, id: string, starred: boolean, owner: string): Promise<R | undefined> {
  if (!isIssuedId(id)) return undefined;
  const { table, columns } = ITEMS[type];
  const sql = starred
    ? `WITH i AS (SELECT * FROM ${table} WHERE id = $1 AND owner_id = $2),
            m AS (
              INSERT INTO project_members (project_id, item_type, item_id, owner_id)
              SELECT '${STARRED_PROJECT}', '${type}', id, owner_id FROM i
              ON CONFLICT (project_id, item_type, item_id) DO UPDATE SET created_at = project_members.created_at
              RETURNING created_at
            )
       SELECT ${columns}, (SELECT created_at FROM m) AS starred_at FROM i`
    : `WITH i AS (SELECT * FROM ${table} WHERE id = $1 AND owner_id = $2),
            m AS (
              DELETE FROM project_members
               WHERE project_id = '${STARRED_PROJECT}' AND item_type = '${type}' AND item_id IN (SELECT id FROM i)
            )
       SELECT ${columns}, NULL::timestamptz AS starred_at FROM i`;
  const { rows } = await db.query(sql, [id, owner]);
  return rows[0] as R | undefined;
}

/** Stars or unstars a chat; returns it as it now is, or null when unknown. */
export async function starChat(db: Queryable, id: string, starred: boolean, owner: string): Promise<ChatSummary | null> {
  const row = await star<ChatRow>(db, 'chat', id, starred, owner);
  return row ? toChatSummary(row) : null;
}

/** Stars or unstars a search; returns it as it now is, or null when unknown. */
export async function starSearch(db: Queryable, id: string, starred: boolean, owner: string): Promise<SearchSummary | null> {
  const row = await star<SearchSummaryRow>(db, 'search', id, starred, owner);
  return row ? toSearchSummary(row) : null;
}
