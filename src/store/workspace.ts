// GET /v1/workspace-items: the newest 100 chats and newest 100 searches, merged by updatedAt, in one
// statement (each branch walks its updated_at index and stops at the cap).
import type { Queryable } from '../db/types.ts';
import type { WorkspaceItem } from '../base/types.ts';
import { chatColumns, toChatSummary, type ChatRow } from './chat-rows.ts';
import { toSearchSummary } from './search-rows.ts';
import { starJoin } from './stars-sql.ts';

/** The spec's cap, per kind. */
export const WORKSPACE_LIMIT = 100;

type WorkspaceRow = ChatRow & { type: 'chat' | 'search'; query: string | null };

export async function listWorkspaceItems(db: Queryable, owner: string, limitPerType = WORKSPACE_LIMIT): Promise<WorkspaceItem[]> {
  const { rows } = await db.query<WorkspaceRow>(
    `(SELECT 'chat' AS type, ${chatColumns('c')}, NULL::text AS query, star.created_at AS starred_at
        FROM chats c ${starJoin('chat', 'c')}
       WHERE c.owner_id = $2
       ORDER BY c.updated_at DESC, c.id DESC
       LIMIT $1)
     UNION ALL
     (SELECT 'search', s.id, s.title, s.created_at, s.updated_at, NULL, NULL, NULL, NULL, NULL, NULL,
             s.query, star.created_at
        FROM searches s ${starJoin('search', 's')}
       WHERE s.owner_id = $2
       ORDER BY s.updated_at DESC, s.id DESC
       LIMIT $1)
     ORDER BY updated_at DESC, id DESC`,
    [limitPerType, owner],
  );
  return rows.map((row): WorkspaceItem =>
    row.type === 'chat'
      ? { type: 'chat', ...toChatSummary(row) }
      : { type: 'search', ...toSearchSummary(row) },
  );
}
