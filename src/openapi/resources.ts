// The spec's resources, response bodies and SSE event payloads as the OpenAPI document's named
// schemas (request bodies are validated by src/domain/schemas.ts and documented from there). The resources
// the run codecs share are the domain's (src/domain/resources.ts), named here; the rest are for the
// document only. Each one `satisfies` the TypeScript type the code returns, so a field added to a type
// and not here fails the typecheck instead of leaving the document behind.
import { z } from 'zod';
import * as domain from '../domain/resources.ts';
import { chatFields, nullableString, searchFields, timestamp } from '../domain/resources.ts';
import { providerSchema, roleSchema } from '../domain/schemas.ts';
import type { ProviderModels } from '../models/registry.ts';
import type {
  Attachment,
  ChatDetail,
  LastRun,
  Message,
  WorkspaceItem,
} from '../base/types.ts';
import type { HistoryItem, HistoryMatch } from '../store/history-search.ts';
import type { UsageRow } from '../store/usage.ts';
import type { User } from '../store/users.ts';

/** The document's named schemas: each is emitted once under components.schemas and referenced by `$ref`. */
export const components = new Map<string, z.ZodType>();

/** Names `schema` as the component `id` (with a description), and returns it. */
export function named<S extends z.ZodType>(id: string, schema: S, description?: string): S {
  const s = description === undefined ? schema : schema.meta({ description });
  if (components.has(id)) throw new Error(`OpenAPI component ${id} is named twice`);
  components.set(id, s);
  return s;
}

export const errorBody = named(
  'Error',
  z.object({ message: z.string().meta({ description: 'what is wrong, for a person to read' }) }),
  'Every error answer (4xx, 5xx) has this shape.',
);

export const attachment = named(
  'StoredAttachment',
  z.discriminatedUnion('kind', [
    z.object({
      kind: z.literal('image'),
      id: z.string(),
      filename: z.string(),
      mimeType: z.enum(['image/png', 'image/jpeg']),
      sizeBytes: z.number().int(),
      dataUrl: z.string().meta({ description: 'a base64 data URL' }),
    }),
    z.object({
      kind: z.literal('text'),
      id: z.string(),
      filename: z.string(),
      mimeType: z.string(),
      sizeBytes: z.number().int(),
      text: z.string(),
      truncated: z.boolean(),
    }),
  ]),
  'An attachment as stored in `metadata.attachments`.',
) satisfies z.ZodType<Attachment>;

export const message = named(
  'Message',
  z.object({
    id: z.string(),
    createdAt: timestamp,
    role: roleSchema,
    content: z.string(),
    name: nullableString,
    metadata: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: '`attachments` on user messages with attachments; `kind: "tool_call"` on tool-call log messages' }),
  }),
) satisfies z.ZodType<Message>;

export const chatSummary = named('ChatSummary', domain.chatSummary);
export const lastRun = named(
  'LastRun',
  z.object({
    callId: z.string(),
    provider: providerSchema,
    model: z.string(),
    status: z.enum(['running', 'succeeded', 'failed', 'stopped']),
    error: nullableString.meta({ description: 'why it failed; for a run cut by a crash or restart, says the service stopped or restarted' }),
    startedAt: timestamp,
    finishedAt: timestamp.nullable(),
    latencyMs: z.number().int().nullable(),
    usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), totalTokens: z.number().int() }).nullable(),
    fallback: z
      .object({ from: z.string(), to: z.string(), reason: z.string() })
      .nullable()
      .meta({ description: 'the run went on on another model (PROVIDER_FALLBACKS): from and to are provider/model, reason why the first failed' }),
  }),
  "The chat's newest completion run (title suggestions are not counted).",
) satisfies z.ZodType<LastRun>;
export const chatDetail = named(
  'ChatDetail',
  z.object({ ...chatFields, messages: z.array(message), lastRun: lastRun.nullable() }),
) satisfies z.ZodType<ChatDetail>;

export const searchSummary = named('SearchSummary', domain.searchSummary);
export const searchResultItem = named('SearchResultItem', domain.searchResultItem);
export const answerCitation = named('AnswerCitation', domain.answerCitation);
export const searchDetail = named('SearchDetail', domain.searchDetail);

export const workspaceItem = named(
  'WorkspaceItem',
  z.discriminatedUnion('type', [z.object({ type: z.literal('chat'), ...chatFields }), z.object({ type: z.literal('search'), ...searchFields })]),
) satisfies z.ZodType<WorkspaceItem>;

// History search (GET /v1/workspace-items?q=…; docs/api-notes.md, "History search"): a workspace item with where q matched.
export const historyMatch = named(
  'HistoryMatch',
  z.object({
    field: z.enum(['title', 'query', 'message', 'answer']).meta({ description: 'the field holding every word of q (its best-ranked one)' }),
    snippet: z.string().meta({ description: 'up to 200 characters (UTF-16 units) of that field around the first hit, unmarked' }),
  }),
) satisfies z.ZodType<HistoryMatch>;

export const historyItem = named(
  'HistoryItem',
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('chat'), ...chatFields, match: historyMatch }),
    z.object({ type: z.literal('search'), ...searchFields, match: historyMatch }),
  ]),
) satisfies z.ZodType<HistoryItem>;

export const usage = named('Usage', domain.usage);

export const user = named(
  'User',
  z.object({
    id: z.string(),
    name: z.string(),
    createdAt: timestamp,
    disabled: z.boolean(),
    maxActiveRuns: z.number().int().nullable().meta({ description: 'runs at once, cluster-wide; null: USER_MAX_ACTIVE_RUNS' }),
    tokensPerDay: z.number().int().nullable().meta({ description: 'tokens per UTC day; null: USER_TOKENS_PER_DAY' }),
    costPerDay: z.number().nullable().meta({ description: 'USD per UTC day (MODEL_PRICES); null: USER_COST_PER_DAY' }),
    source: z.enum(['key', 'jwt']),
  }) satisfies z.ZodType<User>,
);

export const usageRow = named(
  'UsageRow',
  z.object({
    day: z.string().meta({ description: 'the UTC date, YYYY-MM-DD' }),
    provider: z.string(),
    model: z.string(),
    calls: z.number().int(),
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    totalTokens: z.number().int(),
    cachedInputTokens: z.number().int().meta({ description: 'of inputTokens, read from or written to the provider\'s prompt cache' }),
    cost: z.number().nullable().meta({ description: 'USD under MODEL_PRICES; null when a call of the model has no price' }),
  }) satisfies z.ZodType<UsageRow>,
);

export const providerModels = named(
  'ProviderModels',
  z.object({
    models: z.array(z.string()),
    loadedAt: timestamp.nullable(),
    error: nullableString,
    simulated: z
      .literal(true)
      .optional()
      .meta({ description: 'served by the offline simulator (no key set); only then is provider_d listed without AGENT_PROVIDER_API_KEY' }),
  }),
) satisfies z.ZodType<ProviderModels>;

/** An SSE stream: its event names, and one schema for its messages, `{event: <name>, data: <payload>}` each. */
export interface SseStream {
  events: string[];
  message: z.ZodType;
}

function sseStream(id: string, events: Record<string, z.ZodType>): SseStream {
  const variants = Object.entries(events).map(([name, data]) => z.object({ event: z.literal(name), data }));
  const message = named(id, z.union(variants), 'One SSE message: its `event:` name and its `data:` JSON.');
  return { events: Object.keys(events), message };
}

// Chat stream events (spec "Chat stream events"; actors/chat-run.ts, actors/chat-tools.ts).
export const chatStream = sseStream('ChatStreamMessage', {
  meta: named(
    'MetaEvent',
    z.object({ type: z.literal('meta'), chatId: nullableString, callId: nullableString, provider: providerSchema, model: z.string() }),
    'first event of every chat stream; the ids are null when `persist` is false',
  ),
  tool_call: named(
    'ToolCallEvent',
    z.object({
      toolCallId: z.string(),
      name: z.string(),
      status: z.enum(['initiated', 'completed', 'failed']),
      summary: z.string(),
      args: z.record(z.string(), z.unknown()),
      startedAt: timestamp,
      completedAt: timestamp.optional(),
      durationMs: z.number().int().optional(),
      resultPreview: z.string().optional(),
      error: z.string().optional(),
    }),
    'a service tool starting (`initiated`) or ending (`completed`, `failed`); upsert by `toolCallId`',
  ),
  delta: named('DeltaEvent', z.object({ type: z.literal('delta'), text: z.string() }), 'the next piece of the answer'),
  done: named(
    'DoneEvent',
    z.object({
      type: z.literal('done'),
      text: z.string().meta({ description: 'the whole answer: the deltas concatenated' }),
      usage: usage.optional(),
    }),
    'terminal: the run succeeded',
  ),
  error: named('ErrorEvent', z.object({ type: z.literal('error'), message: z.string() }), 'terminal: the run failed'),
});

// Search stream events (spec "Search stream events"; actors/search-run.ts).
export const searchStream = sseStream('SearchStreamMessage', {
  search_results: named('SearchResultsEvent', z.object({ requestId: nullableString, results: z.array(searchResultItem) })),
  search_error: named('SearchErrorEvent', z.object({ error: z.string() })),
  answer: named(
    'AnswerEvent',
    z.object({ answerText: nullableString, answerRequestId: nullableString, answerCitations: z.array(answerCitation) }),
  ),
  answer_error: named('AnswerErrorEvent', z.object({ error: z.string() })),
  done: named('SearchDoneEvent', z.object({ search: searchDetail }), 'terminal: the search and its answer are stored'),
  error: named('SearchFailedEvent', z.object({ message: z.string() }), 'terminal: the run failed'),
});
