// The spec's resource shapes, named as the spec names them.

/**
 * The built-in user of the ADMIN_TOKEN (and of open mode): owner of everything stored before users existed.
 * Here, below both auth/ (who is calling) and store/ (whose rows), so neither imports the other for it.
 */
export const ADMIN_USER_ID = 'admin';

export const PROVIDERS = ['provider_a', 'provider_b', 'provider_c', 'provider_d'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface ImageAttachment {
  kind: 'image';
  id: string;
  filename: string;
  mimeType: 'image/png' | 'image/jpeg';
  sizeBytes: number;
  dataUrl: string;
}

export interface TextAttachment {
  kind: 'text';
  id: string;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  text: string;
  truncated: boolean;
}

export type Attachment = ImageAttachment | TextAttachment;

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface Message {
  id: string;
  createdAt: string;
  role: Role;
  content: string;
  name: string | null;
  metadata: Record<string, unknown> | null;
}

export interface ChatSummary {
  id: string;
  title: string | null;
  createdAt: string;
  updatedAt: string;
  starred: boolean;
  starredAt: string | null;
  initiatedProvider: ProviderName | null;
  initiatedModel: string | null;
  lastUsedProvider: ProviderName | null;
  lastUsedModel: string | null;
  additionalSystemPrompt: string | null;
  enabledTools: string[];
}

export interface ChatDetail extends ChatSummary {
  messages: Message[];
  /** How the chat's newest model call went (beyond the spec: docs/api-notes.md, "How the last run went"). */
  lastRun: LastRun | null;
}

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'stopped';

export interface LastRun {
  callId: string;
  provider: ProviderName;
  model: string;
  status: RunStatus;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
  latencyMs: number | null;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number } | null;
  /** The run went on on another model than `provider`/`model` (PROVIDER_FALLBACKS): `provider/model` names. */
  fallback: { from: string; to: string; reason: string } | null;
}

export interface SearchSummary {
  id: string;
  title: string | null;
  query: string | null;
  createdAt: string;
  updatedAt: string;
  starred: boolean;
  starredAt: string | null;
}

/** One ranked result. The spec leaves the shape open; this is ours (see README). */
export interface SearchResultItem {
  url: string;
  title: string | null;
  snippet: string | null;
  summary: string | null;
  publishedDate: string | null;
  author: string | null;
  score: number | null;
  favicon: string | null;
  image: string | null;
}

/** One citation of a generated answer (see README). */
export interface AnswerCitation {
  url: string;
  title: string | null;
  author: string | null;
  publishedDate: string | null;
  text: string | null;
}

export interface SearchDetail {
  id: string;
  title: string;
  query: string;
  createdAt: string;
  updatedAt: string;
  starred: boolean;
  starredAt: string | null;
  requestId: string;
  latencyMs: number;
  error: string | null;
  answerText: string | null;
  answerRequestId: string | null;
  answerCitations: AnswerCitation[];
  answerError: string | null;
  results: SearchResultItem[];
}

export type WorkspaceItem = ({ type: 'chat' } & ChatSummary) | ({ type: 'search' } & SearchSummary);
