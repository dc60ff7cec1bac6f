// Model lists. provider_a mixes chat and non-chat models on purpose so the service's filter has
// work to do. `/__control {"failModels":[…]}` makes a list fail for refresh-failure tests.
import { anthropicError, openaiError } from './errors.ts';
import { bearerToken, sendJson } from './http.ts';
import { anthropicAuthorized } from './messages.ts';
import type { Ctx } from './state.ts';

const CREATED = 1_700_000_000;

const OPENAI_STYLE: Record<string, { id: string; owned_by: string }[]> = {
  provider_a: [
    { id: 'sim-a-large', owned_by: 'system' },
    { id: 'sim-a-mini', owned_by: 'system' },
    { id: 'sim-a-nano', owned_by: 'system' },
    { id: 'gpt-4.1-nano', owned_by: 'system' },
    { id: 'text-embedding-3-small', owned_by: 'system' },
    { id: 'whisper-1', owned_by: 'openai-internal' },
    { id: 'dall-e-3', owned_by: 'system' },
    { id: 'tts-1', owned_by: 'openai-internal' },
    { id: 'omni-moderation-latest', owned_by: 'system' },
    { id: 'babbage-002', owned_by: 'system' },
  ],
  provider_c: [
    { id: 'sim-c-large', owned_by: 'sim-c' },
    { id: 'sim-c-small', owned_by: 'sim-c' },
  ],
  provider_d: [
    { id: 'sim-d-agent', owned_by: 'sim-d' },
    { id: 'sim-d-small', owned_by: 'sim-d' },
  ],
};

const MESSAGES_STYLE = [
  { type: 'model', id: 'sim-b-large', display_name: 'Sim B Large', created_at: '2025-09-29T00:00:00Z' },
  { type: 'model', id: 'sim-b-small', display_name: 'Sim B Small', created_at: '2025-05-14T00:00:00Z' },
  { type: 'model', id: 'sim-b-haiku', display_name: 'Sim B Haiku', created_at: '2024-10-22T00:00:00Z' },
];

export function isModelsPath(ctx: Ctx): boolean {
  if (ctx.req.method !== 'GET') return false;
  return ctx.upstream === 'provider_b' ? ctx.path === '/v1/models' : ctx.path === '/models';
}

export function handleModels(ctx: Ctx): void {
  const failing = ctx.state.failModels.has(ctx.upstream);
  if (ctx.upstream === 'provider_b') {
    if (!anthropicAuthorized(ctx)) return anthropicError(ctx.res, 401, 'x-api-key header is required');
    if (failing) return anthropicError(ctx.res, 500, 'Internal server error (simulated models failure)');
    return messagesPage(ctx);
  }
  if (!bearerToken(ctx.req)) {
    return openaiError(ctx.res, 401, { message: "You didn't provide an API key.", code: 'invalid_api_key' });
  }
  if (failing) {
    return openaiError(ctx.res, 500, { message: 'The server had an error while processing your request (simulated models failure).' });
  }
  const data = (OPENAI_STYLE[ctx.upstream] ?? []).map((m) => ({ id: m.id, object: 'model', created: CREATED, owned_by: m.owned_by }));
  sendJson(ctx.res, 200, { object: 'list', data });
}

/** Real paging semantics (limit, after_id, before_id), although the list fits in one page. */
function messagesPage(ctx: Ctx): void {
  const limit = Math.min(Math.max(Number.parseInt(ctx.query.get('limit') ?? '20', 10) || 20, 1), 1000);
  let start = 0;
  let end = MESSAGES_STYLE.length;
  const after = ctx.query.get('after_id');
  const before = ctx.query.get('before_id');
  if (after) start = MESSAGES_STYLE.findIndex((m) => m.id === after) + 1;
  if (before) end = Math.max(0, MESSAGES_STYLE.findIndex((m) => m.id === before));
  if (start <= 0 && after) start = MESSAGES_STYLE.length;
  const data = MESSAGES_STYLE.slice(start, Math.min(end, start + limit));
  sendJson(ctx.res, 200, {
    data,
    has_more: start + data.length < end,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  });
}
