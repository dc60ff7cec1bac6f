// Whose is a chat or a search, for what the run registry cannot answer alone: a run on another
// instance is known by its key only, so its owner is the owner of the row it works on.
import type { Queryable } from '../db/types.ts';
import type { ItemType } from './stars-sql.ts';
import { isIssuedId } from './values.ts';

const TABLES = { chat: 'chats', search: 'searches' } as const;

/**
 * True unless another user owns the item. An item with no row yet counts as the caller's: a chat
 * stream announces its new chat's id before storing it, and only its starter has heard that id.
 */
export async function notOthers(db: Queryable, type: ItemType, id: string, owner: string): Promise<boolean> {
  if (!isIssuedId(id)) return false;
  const { rows } = await db.query<{ ok: boolean }>(`SELECT NOT EXISTS (SELECT 1 FROM ${TABLES[type]} WHERE id = $1 AND owner_id <> $2) AS ok`, [id, owner]);
  return rows[0]!.ok;
}

/** Of the given chat and search ids, those `owner` owns. */
export async function ownedIds(db: Queryable, owner: string, chats: string[], searches: string[]): Promise<{ chats: Set<string>; searches: Set<string> }> {
  const { rows } = await db.query<{ type: ItemType; id: string }>(
    `SELECT 'chat' AS type, id FROM chats WHERE owner_id = $1 AND id = ANY ($2::text[])
     UNION ALL
     SELECT 'search', id FROM searches WHERE owner_id = $1 AND id = ANY ($3::text[])`,
    [owner, chats, searches],
  );
  const out = { chats: new Set<string>(), searches: new Set<string>() };
  for (const r of rows) (r.type === 'chat' ? out.chats : out.searches).add(r.id);
  return out;
}
