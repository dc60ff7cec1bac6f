// A message's row and its spec shape, with the columns that produce the row.
import type { Message, Role } from '../base/types.ts';
import { iso } from './values.ts';

/** Message columns; json_agg of this object is what MessageJson describes. */
export const MESSAGE_COLUMNS = 'id, created_at, role, content, name, metadata';

export interface MessageRow {
  id: string;
  created_at: Date | string;
  role: string;
  content: string;
  name: string | null;
  metadata: Record<string, unknown> | null;
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    createdAt: iso(row.created_at),
    role: row.role as Role,
    content: row.content,
    name: row.name,
    metadata: row.metadata,
  };
}
