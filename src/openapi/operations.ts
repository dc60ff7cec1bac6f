// What the OpenAPI document says about each route, keyed by the router's `METHOD /path`. Request
// bodies are the very zod schemas the routes validate with (src/domain/schemas.ts). A route that is not
// here is missing from GET /v1/openapi.json, and test/api/openapi.test.ts fails: adding a route
// means adding its entry here.
import { z } from 'zod';
import {
  appendMessageSchema,
  completionSchema,
  createChatSchema,
  createSearchSchema,
  patchChatSchema,
  providerSchema,
  searchChatSchema,
  searchRunSchema,
  starSchema,
  streamCompletionSchema,
  suggestTitleSchema,
} from '../domain/schemas.ts';
import { createUserSchema, patchUserSchema } from '../auth/user-schemas.ts';
import {
  chatDetail,
  chatStream,
  chatSummary,
  historyItem,
  message,
  named,
  providerModels,
  searchDetail,
  searchStream,
  searchSummary,
  usage,
  usageRow,
  user,
  workspaceItem,
  type SseStream,
} from './resources.ts';

export type SuccessStatus = 200 | 201;

export interface OperationDoc {
  /** Groups operations in viewers. */
  tag: 'web' | 'system' | 'models' | 'chats' | 'completions' | 'searches' | 'users' | 'openai';
  summary: string;
  description?: string;
  /** The zod schema the route validates its JSON body with. */
  body?: z.ZodType;
  query?: Record<string, { description: string; schema: z.ZodType }>;
  /** Request headers besides Authorization and Content-Type. */
  headers?: Record<string, { description: string; schema: z.ZodType }>;
  /** The success answer: a JSON body, an SSE stream, or another content type. */
  ok: { json: z.ZodType } | { sse: SseStream; description: string } | { content: string; description: string };
  /** The success answer's status, when not 200: 201 where the route creates what it answers with. */
  status?: SuccessStatus;
  /** Error statuses besides those every route of its kind has (see document.ts), each with when it happens. */
  errors?: Record<number, string>;
}

const SERVICE_TOOL = 'names of service tools (GET /v1/chat-tools)';

const requests = {
  CreateChatRequest: named('CreateChatRequest', createChatSchema),
  PatchChatRequest: named('PatchChatRequest', patchChatSchema),
  StarRequest: named('StarRequest', starSchema),
  SuggestTitleRequest: named('SuggestTitleRequest', suggestTitleSchema),
  AppendMessageRequest: named('AppendMessageRequest', appendMessageSchema),
  CompletionRequest: named('CompletionRequest', completionSchema),
  StreamCompletionRequest: named('StreamCompletionRequest', streamCompletionSchema),
  CreateSearchRequest: named('CreateSearchRequest', createSearchSchema),
  SearchRunRequest: named('SearchRunRequest', searchRunSchema),
  SearchChatRequest: named('SearchChatRequest', searchChatSchema),
  CreateUserRequest: named('CreateUserRequest', createUserSchema),
  PatchUserRequest: named('PatchUserRequest', patchUserSchema),
};

/** A user's own limits refusing a start (docs/operations.md, "Users and single sign-on", Limits), both with Retry-After. */
const USER_LIMITS = {
  429: 'too many active runs for this user (limit N), or daily token budget exhausted (Retry-After: seconds to the next UTC midnight); '
    + 'or the provider rate-limited the call past the retries (Retry-After: the provider\'s wait)',
};
/** What every admin-only route answers besides its own. */
const ADMIN_ONLY = { 400: 'users need ADMIN_TOKEN to be set (open mode), or a bad body naming the field', 403: 'admin token required' };
const userResponse = z.object({ user });
const usageQuery = { days: { description: 'the last N UTC days, today included: 1–90, default 30', schema: z.int().min(1).max(90) } };
const usageResponse = z.object({ usage: z.array(usageRow) });

const chatResponse = z.object({ chat: chatSummary });
const searchResponse = z.object({ search: searchSummary });
const deleted = z.object({ deleted: z.literal(true) });
const stopped = z.object({ stopped: z.literal(true) });
const PROVIDER_FAILURES = {
  409: 'a persisted run is already active for this chat',
  429: 'the provider rate-limited the call past the retries (Retry-After: the provider\'s wait)',
  502: 'the provider failed (after PROVIDER_RETRIES retries and any PROVIDER_FALLBACKS)',
  503: 'the process is at capacity or shutting down (with Retry-After), the run was cancelled by shutdown, '
    + 'or the provider is unavailable, retry later (its circuit breaker is open; Retry-After: until its trial call)',
  504: 'the provider timed out',
};

/** Idempotent starts of a completion (docs/api-notes.md, "Retrying a start safely"). */
const IDEMPOTENCY_KEY = {
  'Idempotency-Key': {
    description:
      'Optional, 1–255 printable ASCII characters, kept 24 h. A retry with the same key and body attaches to the run (or waits for it) '
      + 'while it is active and replays its outcome once it has ended, without calling the provider; such answers carry `Idempotent-Replayed: true`.',
    schema: z.string().min(1).max(255),
  },
};
const KEY_REUSED_ERROR = { 422: 'Idempotency-Key was used with a different request' };

export const operations: Record<string, OperationDoc> = {
  'GET /': { tag: 'web', summary: 'The bundled web client (HTML)', ok: { content: 'text/html', description: 'the page' } },
  'GET /assets/:version/:name': {
    tag: 'web',
    summary: "The web client's scripts and styles (immutable when `version` is the current one)",
    ok: { content: '*/*', description: 'the file, with its own content type' },
  },
  'GET /health': { tag: 'system', summary: 'Liveness: answers while the process serves HTTP (also HEAD)', ok: { json: z.object({ ok: z.literal(true) }) } },
  'GET /ready': {
    tag: 'system',
    summary: 'Readiness: the database answers',
    ok: { json: z.object({ ready: z.literal(true) }) },
    errors: { 503: 'the database does not answer' },
  },
  'GET /v1/openapi.json': {
    tag: 'system',
    summary: 'This document (OpenAPI 3.1)',
    ok: { content: 'application/json', description: 'the OpenAPI document' },
  },
  'GET /metrics': {
    tag: 'system',
    summary: 'Prometheus metrics (the admin token only)',
    ok: { content: 'text/plain', description: 'Prometheus text format' },
    errors: { 403: 'admin token required' },
  },
  'GET /v1/auth/session': {
    tag: 'system',
    summary: 'Whether the API runs in token mode, and whose workspace the token opens',
    ok: {
      json: z.object({
        authenticated: z.literal(true),
        mode: z.enum(['open', 'token']),
        user: z.object({ id: z.string(), name: z.string(), admin: z.boolean() }).optional().meta({ description: 'token mode only' }),
      }),
    },
  },
  'GET /v1/usage': {
    tag: 'users',
    summary: "The caller's own LlmCalls per UTC day, provider and model, newest day first",
    query: usageQuery,
    errors: { 400: 'days is not a whole number from 1 to 90' },
    ok: { json: usageResponse },
  },
  'POST /v1/users': {
    tag: 'users',
    summary: 'Create a user; the API key is shown once, only its hash is stored',
    body: requests.CreateUserRequest,
    ok: { json: z.object({ user, apiKey: z.string() }) },
    status: 201,
    errors: ADMIN_ONLY,
  },
  'GET /v1/users': { tag: 'users', summary: 'Every user, oldest first', ok: { json: z.object({ users: z.array(user) }) }, errors: ADMIN_ONLY },
  'GET /v1/users/:userId': { tag: 'users', summary: 'One user', ok: { json: userResponse }, errors: { ...ADMIN_ONLY, 404: 'user not found' } },
  'PATCH /v1/users/:userId': {
    tag: 'users',
    summary: "Change a user's name, limits or disabled flag (disabling stops their keys at once)",
    body: requests.PatchUserRequest,
    ok: { json: userResponse },
    errors: { ...ADMIN_ONLY, 404: 'user not found' },
  },
  'POST /v1/users/:userId/keys': {
    tag: 'users',
    summary: 'A new API key for the user; every earlier key stops working at once, on every instance',
    ok: { json: z.object({ apiKey: z.string() }) },
    status: 201,
    errors: { ...ADMIN_ONLY, 404: 'user not found' },
  },
  'DELETE /v1/users/:userId': {
    tag: 'users',
    summary: "Delete a user: keys stop, running streams end with `run cancelled: user deleted`, chats, searches and stars go",
    ok: { json: deleted },
    errors: { ...ADMIN_ONLY, 404: 'user not found' },
  },
  'GET /v1/users/:userId/usage': {
    tag: 'users',
    summary: "One user's LlmCalls per UTC day, provider and model (`admin` is the built-in admin)",
    query: usageQuery,
    ok: { json: usageResponse },
    errors: { ...ADMIN_ONLY, 404: 'user not found' },
  },
  'GET /v1/active-runs': {
    tag: 'system',
    summary: 'Chats and searches with a run on this process (or, with scope=cluster, on any instance)',
    query: {
      scope: {
        description: '`process` (the default, the spec\'s meaning) or `cluster`: every live instance\'s runs (with REDIS_URL)',
        schema: z.enum(['process', 'cluster']),
      },
    },
    errors: { 400: 'scope is neither `process` nor `cluster`' },
    ok: { json: z.object({ chats: z.array(z.string()), searches: z.array(z.string()) }) },
  },
  'GET /v1/chat-tools': {
    tag: 'system',
    summary: 'Service tools that provider_a and provider_c can use',
    ok: { json: z.object({ tools: z.array(z.object({ name: z.string(), description: z.string() })) }) },
  },
  'GET /v1/workspace-items': {
    tag: 'system',
    summary: 'Up to 100 chats and 100 searches, newest updatedAt first; with q, a search of the history',
    description:
      'With `q`: only the chats and searches one of whose fields (title, search query, user or assistant message, search answer) ' +
      'holds every word of q, case-insensitively, the last word also as a prefix; most relevant first (ties: updatedAt descending) ' +
      'among the newest 1,000 matches of each field (a very common word can pass over an older, more relevant match), ' +
      'each with `match` (HistoryItem). Without `q` the listing is unchanged and `limit` is not read.',
    query: {
      q: { description: 'words to find: 1–200 characters after trimming; operators and punctuation are plain text', schema: z.string().min(1).max(200) },
      limit: { description: 'with q: at most this many items (default 50)', schema: z.int().min(1).max(200) },
    },
    errors: { 400: 'q is blank or longer than 200 characters (after trimming), or limit is not a whole number from 1 to 200' },
    ok: { json: z.object({ items: z.array(z.union([workspaceItem, historyItem])) }) },
  },
  'GET /v1/models': {
    tag: 'models',
    summary: "Each provider's model list, as last loaded",
    ok: { json: z.object({ providers: z.partialRecord(providerSchema, providerModels) }) },
  },

  'GET /v1/chats': { tag: 'chats', summary: 'List chats', ok: { json: z.object({ chats: z.array(chatSummary) }) } },
  'POST /v1/chats': {
    tag: 'chats',
    summary: 'Create a chat',
    description: `\`enabledTools\`: ${SERVICE_TOOL}; omitted = all. \`provider\` and \`model\` go together.`,
    body: requests.CreateChatRequest,
    ok: { json: chatResponse },
  },
  'GET /v1/chats/:chatId': { tag: 'chats', summary: 'A chat with its messages', ok: { json: z.object({ chat: chatDetail }) } },
  'PATCH /v1/chats/:chatId': { tag: 'chats', summary: "Change a chat's title, prompt or tools", body: requests.PatchChatRequest, ok: { json: chatResponse } },
  'PATCH /v1/chats/:chatId/star': {
    tag: 'chats',
    summary: 'Star or unstar a chat (updatedAt unchanged)',
    body: requests.StarRequest,
    ok: { json: chatResponse },
  },
  'DELETE /v1/chats/:chatId': { tag: 'chats', summary: 'Delete a chat', ok: { json: deleted } },
  'POST /v1/chats/:chatId/messages': {
    tag: 'chats',
    summary: 'Append a message (attachments go to metadata.attachments)',
    body: requests.AppendMessageRequest,
    ok: { json: z.object({ message }) },
  },
  'POST /v1/chats/title/suggest': {
    tag: 'chats',
    summary: 'Give an untitled chat a short title from TITLE_MODEL',
    body: requests.SuggestTitleRequest,
    ok: { json: chatResponse },
    errors: {
      404: 'chat not found',
      429: 'daily token budget exhausted (Retry-After: seconds to the next UTC midnight), or provider_a rate-limited the title call',
      502: 'title generation failed',
      503: 'provider_a is not configured, or the service is at its run limit or shutting down',
      504: 'title generation timed out',
    },
  },

  'POST /v1/chat-completions': {
    tag: 'completions',
    summary: 'A whole completion',
    body: requests.CompletionRequest,
    ok: {
      json: z.object({
        chatId: z.string().nullable(),
        provider: providerSchema,
        model: z.string(),
        message: z.object({ role: z.literal('assistant'), content: z.string() }),
        usage: usage.nullable(),
        raw: z.record(z.string(), z.unknown()),
      }),
    },
    headers: IDEMPOTENCY_KEY,
    errors: { 404: 'chat not found (chatId given)', ...KEY_REUSED_ERROR, ...PROVIDER_FAILURES, 429: `${USER_LIMITS[429]}` },
  },
  'POST /v1/chat-completions/stream': {
    tag: 'completions',
    summary: 'A streamed completion',
    description: 'Failures after the stream has opened arrive as its terminal `error` event.',
    body: requests.StreamCompletionRequest,
    ok: { sse: chatStream, description: 'exactly one `meta`, `tool_call`*, `delta`*, then `done` or `error`' },
    headers: IDEMPOTENCY_KEY,
    errors: { 404: 'chat not found (chatId given)', 409: PROVIDER_FAILURES[409], ...KEY_REUSED_ERROR, ...USER_LIMITS, 503: PROVIDER_FAILURES[503] },
  },
  'POST /v1/chats/:chatId/stream/attach': {
    tag: 'completions',
    summary: "Re-attach to a chat's active stream: its buffered events, then live ones",
    ok: { sse: chatStream, description: 'the same events as the stream: replayed, then live, until `done` or `error`' },
    errors: { 404: 'active chat stream not found' },
  },
  'POST /v1/chats/:chatId/stream/stop': {
    tag: 'completions',
    summary: "Stop a chat's active run: its stream ends with `done` carrying the partial text and `stopped: true`",
    ok: { json: stopped },
    errors: { 404: 'active chat stream not found' },
  },

  'GET /v1/searches': { tag: 'searches', summary: 'List searches', ok: { json: z.object({ searches: z.array(searchSummary) }) } },
  'POST /v1/searches': {
    tag: 'searches',
    summary: 'Create a search, or reuse the latest one with the same query',
    body: requests.CreateSearchRequest,
    ok: { json: z.object({ search: searchSummary, reused: z.boolean(), cacheHit: z.boolean() }) },
  },
  'GET /v1/searches/:searchId': { tag: 'searches', summary: 'A search with its results and answer', ok: { json: z.object({ search: searchDetail }) } },
  'DELETE /v1/searches/:searchId': { tag: 'searches', summary: 'Delete a search', ok: { json: deleted } },
  'PATCH /v1/searches/:searchId/star': { tag: 'searches', summary: 'Star or unstar a search', body: requests.StarRequest, ok: { json: searchResponse } },
  'POST /v1/searches/:searchId/run': {
    tag: 'searches',
    summary: 'Run the search and its answer, whole (joins a running one)',
    body: requests.SearchRunRequest,
    ok: { json: z.object({ search: searchDetail }) },
    errors: {
      409: 'search run stopped: the run was stopped (POST …/run/stop) before it had a result',
      429: 'too many active runs for this user (limit N), with Retry-After',
      502: 'both the search and the answer failed',
      503: 'engine_a is not configured, or the process is at capacity',
    },
  },
  'POST /v1/searches/:searchId/run/stream': {
    tag: 'searches',
    summary: 'Run the search and its answer, streamed (attaches to a running one)',
    body: requests.SearchRunRequest,
    ok: { sse: searchStream, description: '`search_results` or `search_error`, `answer` or `answer_error`, then `done` or `error`' },
    errors: { 429: 'too many active runs for this user (limit N), with Retry-After', 503: 'engine_a is not configured, or the process is at capacity' },
  },
  'POST /v1/searches/:searchId/run/stream/attach': {
    tag: 'searches',
    summary: "Re-attach to a search's active stream",
    ok: { sse: searchStream, description: 'replayed, then live, until `done` or `error`' },
    errors: { 404: 'active search stream not found' },
  },
  'POST /v1/searches/:searchId/run/stop': {
    tag: 'searches',
    summary: "Stop a search's active run: its stream ends with `error` `search run stopped`; what arrived is stored",
    ok: { json: stopped },
    errors: { 404: 'active search stream not found' },
  },
  'POST /v1/searches/:searchId/chat': {
    tag: 'searches',
    summary: "A chat seeded with the search's query, answer, citations and top results",
    body: requests.SearchChatRequest,
    ok: { json: chatResponse },
  },
};
