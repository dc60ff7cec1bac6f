// The one place where database rows become the spec's shapes (src/types.ts), plus the SQL fragments
// that produce those rows, so every query selects exactly what its mapper reads.
import type { ProviderName } from '../providers/types.ts';
import '../text.ts'; // String#isWellFormed/toWellFormed types
import type {
  AnswerCitation,
  ChatSummary,
  LastRun,
  Message,
  Role,
  RunStatus,
  SearchDetail,
  SearchResultItem,
  SearchSummary,
} from '../types.ts';

export type ItemType = 'chat' | 'search';

/** The reserved project whose members are the starred items. */
export const STARRED_PROJECT = 'starred';

/** Timestamps leave as ISO 8601 UTC with milliseconds. Strings come from json_agg (PG's own format). */
export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function isoOrNull(value: Date | string | null): string | null {
  return value === null ? null : iso(value);
}

// Postgres text and jsonb cannot hold U+0000, and jsonb refuses a lone surrogate; fetched pages, tool
// output and model text sometimes carry them (client input never does: src/http/json-check.ts refuses
// it). Dropping NUL and replacing a lone surrogate with U+FFFD beats losing the whole write.
export function cleanText(value: string): string;
export function cleanText(value: string | null | undefined): string | null;
export function cleanText(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const v = value.includes('\0') ? value.replaceAll('\0', '') : value;
  return v.isWellFormed() ? v : v.toWellFormed();
}

// Every id this service issues is a UUID (randomUUID). Anything else cannot name a stored row, so the
// store answers "not found" without asking Postgres, which would refuse some of it (U+0000).
const ISSUED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` has the shape of an id this service issues. */
export function isIssuedId(id: string): boolean {
  return ISSUED_ID.test(id);
}

/** JSON text for a json/jsonb parameter, without U+0000 or a lone surrogate in any string. */
export function toJson(value: unknown): string {
  const json = JSON.stringify(value ?? null);
  // JSON.stringify writes U+0000 as `\u0000` and a lone surrogate as a `\udXXX` escape.
  if (!json.includes('\\u0000') && !/\\ud[89a-f]/i.test(json)) return json;
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? cleanText(v) : v));
}

/** Trimmed, or null when blank: the spec's rule for prompts and the store's for optional titles. */
export function trimToNull(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? cleanText(trimmed) : null;
}

// ---- SQL fragments ----------------------------------------------------------------------------

/** LEFT JOIN giving `starred_at` for the item aliased `item` (one index probe on the primary key). */
export function starJoin(type: ItemType, item: string): string {
  return `LEFT JOIN project_members star ON star.project_id = '${STARRED_PROJECT}'
            AND star.item_type = '${type}' AND star.item_id = ${item}.id`;
}

export function chatColumns(c: string): string {
  return `${c}.id, ${c}.title, ${c}.created_at, ${c}.updated_at, ${c}.initiated_provider, ${c}.initiated_model,
          ${c}.last_used_provider, ${c}.last_used_model, ${c}.additional_system_prompt, ${c}.enabled_tools`;
}

export function searchSummaryColumns(s: string): string {
  return `${s}.id, ${s}.title, ${s}.query, ${s}.created_at, ${s}.updated_at`;
}

export function searchDetailColumns(s: string): string {
  return `${searchSummaryColumns(s)}, ${s}.request_id, ${s}.latency_ms, ${s}.error, ${s}.answer_text,
          ${s}.answer_request_id, ${s}.answer_citations, ${s}.answer_error, ${s}.results`;
}

/** Message columns; json_agg of this object is what MessageJson describes. */
export const MESSAGE_COLUMNS = 'id, created_at, role, content, name, metadata';

// ---- rows -------------------------------------------------------------------------------------

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

export interface MessageRow {
  id: string;
  created_at: Date | string;
  role: string;
  content: string;
  name: string | null;
  metadata: Record<string, unknown> | null;
}

export interface SearchSummaryRow {
  id: string;
  title: string | null;
  query: string | null;
  created_at: Date;
  updated_at: Date;
  starred_at: Date | null;
}

export interface SearchDetailRow extends SearchSummaryRow {
  request_id: string | null;
  latency_ms: number | null;
  error: string | null;
  answer_text: string | null;
  answer_request_id: string | null;
  answer_citations: AnswerCitation[] | null;
  answer_error: string | null;
  results: SearchResultItem[] | null;
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

export function toSearchSummary(row: SearchSummaryRow): SearchSummary {
  return {
    id: row.id,
    title: row.title,
    query: row.query,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    starred: row.starred_at !== null,
    starredAt: isoOrNull(row.starred_at),
  };
}

/** SearchDetail fields are plain strings and numbers: a search never run gets '' / 0 / [] defaults. */
export function toSearchDetail(row: SearchDetailRow): SearchDetail {
  return {
    ...toSearchSummary(row),
    title: row.title ?? row.query ?? '',
    query: row.query ?? '',
    requestId: row.request_id ?? '',
    latencyMs: row.latency_ms ?? 0,
    error: row.error,
    answerText: row.answer_text,
    answerRequestId: row.answer_request_id,
    answerCitations: row.answer_citations ?? [],
    answerError: row.answer_error,
    results: row.results ?? [],
  };
}

/** A row of llm_calls. */
export interface LlmCallRow {
  id: string;
  chat_id: string | null;
  provider: string;
  model: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  latency_ms: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  total_tokens: number | null;
  error: string | null;
  message_id: string | null;
}

// ---- the last run of a chat -------------------------------------------------------------------

/** A chat's newest completion call as one JSON object (column `last_run`), null when it has none. */
export function lastRunSql(c: string): string {
  return `(SELECT json_build_object('id', l.id, 'provider', l.provider, 'model', l.model, 'status', l.status,
                                    'error', l.error, 'started_at', l.started_at, 'finished_at', l.finished_at,
                                    'latency_ms', l.latency_ms, 'input_tokens', l.input_tokens,
                                    'output_tokens', l.output_tokens, 'total_tokens', l.total_tokens)
             FROM llm_calls l WHERE l.chat_id = ${c}.id AND l.purpose = 'completion'
            ORDER BY l.started_at DESC LIMIT 1) AS last_run`;
}

/** `last_run` as json_build_object gives it: timestamps in Postgres's text form. */
export type LastRunRow = Pick<LlmCallRow, 'id' | 'provider' | 'model' | 'status' | 'error' | 'latency_ms' | 'input_tokens' | 'output_tokens' | 'total_tokens'> & {
  started_at: string;
  finished_at: string | null;
};

export function toLastRun(row: LastRunRow | null): LastRun | null {
  if (!row) return null;
  // Usage is stored whole or not at all (finishLlmCall*).
  const usage =
    row.total_tokens === null ? null : { inputTokens: row.input_tokens ?? 0, outputTokens: row.output_tokens ?? 0, totalTokens: row.total_tokens };
  return {
    callId: row.id,
    provider: row.provider as ProviderName,
    model: row.model,
    status: row.status as RunStatus,
    error: row.error,
    startedAt: iso(row.started_at),
    finishedAt: isoOrNull(row.finished_at),
    latencyMs: row.latency_ms,
    usage,
  };
}
