// Error bodies exactly as each upstream family shapes them, so the SDKs build their own typed
// errors (status, `error` payload, request id) from them.
import type { ServerResponse } from 'node:http';
import { bearerToken, newId, ParseFailure, sendJson } from './http.ts';
import type { Ctx } from './state.ts';

export interface OpenAIErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

export function openaiError(
  res: ServerResponse,
  status: number,
  err: Partial<OpenAIErrorBody> & { message: string },
  headers: Record<string, string> = {},
): void {
  const d = openaiDefaults(status);
  const body: OpenAIErrorBody = {
    message: err.message,
    type: err.type ?? d.type,
    param: err.param ?? null,
    code: err.code === undefined ? d.code : err.code,
  };
  sendJson(res, status, { error: body }, { 'x-request-id': newId('req_'), ...headers });
}

function openaiDefaults(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 403) return { type: 'invalid_request_error', code: 'unsupported_country_region_territory' };
  if (status === 404) return { type: 'invalid_request_error', code: 'model_not_found' };
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

/** The message a scripted `status` uses for each code (mirrors the real wording where known). */
export function openaiScriptedMessage(status: number): string {
  if (status === 401) return 'Incorrect API key provided (simulated).';
  if (status === 429) return 'Rate limit reached for requests (simulated). Please try again later.';
  if (status === 503) return 'The engine is currently overloaded, please try again later. (simulated)';
  if (status >= 500) return 'The server had an error while processing your request. Sorry about that! (simulated)';
  return `Simulated error with status ${status}.`;
}

export function anthropicError(
  res: ServerResponse,
  status: number,
  message: string,
  type?: string,
  headers: Record<string, string> = {},
): void {
  const requestId = newId('req_');
  sendJson(
    res,
    status,
    { type: 'error', error: { type: type ?? anthropicType(status), message }, request_id: requestId },
    { 'request-id': requestId, ...headers },
  );
}

export function anthropicType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

export function anthropicScriptedMessage(status: number): string {
  if (status === 529) return 'Overloaded';
  if (status === 429) return 'Number of request tokens has exceeded your per-minute rate limit (simulated)';
  if (status === 401) return 'invalid x-api-key';
  if (status >= 500) return 'Internal server error (simulated)';
  return `Simulated error with status ${status}.`;
}

/** Auth and JSON checks shared by the OpenAI-style endpoints; false when an error was sent. */
export function openaiPreamble(ctx: Ctx): boolean {
  if (!bearerToken(ctx.req)) {
    openaiError(ctx.res, 401, {
      message:
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      code: 'invalid_api_key',
    });
    return false;
  }
  if (ctx.body instanceof ParseFailure || ctx.body === undefined) {
    openaiError(ctx.res, 400, {
      message:
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
    });
    return false;
  }
  return true;
}

export function openaiNotFound(ctx: Ctx, prefix: string): void {
  openaiError(ctx.res, 404, { message: `Invalid URL (${ctx.req.method ?? 'GET'} ${prefix}${ctx.path})`, code: null });
}
