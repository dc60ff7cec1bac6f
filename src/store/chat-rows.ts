// A chat's row and its spec shape (ChatSummary), with the columns that produce the row.
import type { ProviderName } from '../providers/types.ts';
import type { ChatSummary } from '../base/types.ts';
import { iso, isoOrNull } from './values.ts';

export function chatColumns(c: string): string {
  return `${c}.id, ${c}.title, ${c}.created_at, ${c}.updated_at, ${c}.initiated_provider, ${c}.initiated_model,
          ${c}.last_used_provider, ${c}.last_used_model, ${c}.additional_system_prompt, ${c}.enabled_tools`;
}

export interface ChatRow {
  id: string;
  title: string | null;
  created_at: Date;
  updated_at: Date;
  initiated_provider: string | null;
  initiated_model: string | null;
  last_used_provider: string | null;
  last_used_model: string | null;
  additional_system_prompt: string | null;
  enabled_tools: string[] | null;
  starred_at: Date | null;
}

export function toChatSummary(row: ChatRow): ChatSummary {
  return {
    id: row.id,
    title: row.title,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    starred: row.starred_at !== null,
    starredAt: isoOrNull(row.starred_at),
    initiatedProvider: row.initiated_provider as ProviderName | null,
    initiatedModel: row.initiated_model,
    lastUsedProvider: row.last_used_provider as ProviderName | null,
    lastUsedModel: row.last_used_model,
    additionalSystemPrompt: row.additional_system_prompt,
    enabledTools: row.enabled_tools ?? [],
  };
}
