// The OpenAI envelope of the façade's errors: `{ error: { message, type, param, code } }` with the status the
// spec's API would give. The headers tell the official SDKs what to do: `x-should-retry: false` where a retry
// cannot help (one run per conversation, a spent daily budget; the SDKs retry 409 and 429 otherwise), and
// `retry-after-ms` beside `retry-after` where waiting does.
import { createError, type HttpError } from '../http/errors.ts';
import type { ErrorShape } from '../http/reply.ts';

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  409: 'conflict_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
};

/** The codes whose retry cannot succeed soon: the SDK must not retry them. */
const FINAL_CODES = new Set(['CSS_CONFLICT', 'CSS_USER_TOKENS_EXHAUSTED', 'CSS_IDEMPOTENCY_KEY_EXPIRED']);

/** An error with the OpenAI `param` it concerns (a body field). */
export interface ParamError extends HttpError {
  param?: string;
}

/** `CSS_NOT_FOUND` → `not_found`: the catalogue's code, as OpenAI spells its codes. */
const openaiCode = (code: string): string => code.replace(/^CSS_/, '').toLowerCase();

export const openaiErrorShape: ErrorShape = (err) => {
  const type = TYPE_BY_STATUS[err.status] ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error');
  const headers: Record<string, string> = { ...err.headers };
  if (FINAL_CODES.has(err.code) || err.status === 409) headers['x-should-retry'] = 'false';
  const after = Number(headers['retry-after']);
  if (Number.isFinite(after) && after > 0 && headers['x-should-retry'] !== 'false') headers['retry-after-ms'] = String(after * 1000);
  const body = { error: { message: err.message, type, param: (err as ParamError).param ?? null, code: openaiCode(err.code) } };
  return { body, headers };
};

/**
 * A Responses stream's `error` event. The API reference and the SDK's `ResponseErrorEvent` put `code`,
 * `message` and `param` on the event; OpenAI's servers send them nested under `error`, which is what makes the
 * official SDKs throw an `APIError` (with that message and code) instead of yielding an event a client may not
 * look at. Both, so that either reading finds the error (docs/clients.md, "The OpenAI-compatible API").
 */
export function responseErrorEvent(sequenceNumber: number, code: string, message: string, type = 'invalid_request_error'): string {
  const data = { type: 'error', sequence_number: sequenceNumber, code, message, param: null, error: { type, code, message, param: null } };
  return `event: error\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The body of an error sent inside a stream that has begun (Chat Completions' `data: {"error":…}`). */
export function streamErrorBody(message: string, code = 'run_failed', type = 'server_error'): { error: { message: string; type: string; param: null; code: string } } {
  return { error: { message, type, param: null, code } };
}

export const MODEL_NOT_FOUND = createError('CSS_MODEL_NOT_FOUND', 404, (model: string) => `The model '${model}' does not exist or is not served here: use an id of GET /openai/v1/models ("provider/model")`);
export const AMBIGUOUS_MODEL = createError('CSS_AMBIGUOUS_MODEL', 400, (model: string, providers: string) => `model '${model}' is served by ${providers}: name one as "provider/${model}"`);
/** A response whose run was lost and is not yet recovered (a takeover or the recovery sweep is due). */
export const RESPONSE_UNAVAILABLE = createError('CSS_RESPONSE_UNAVAILABLE', 503, (id: string) => `response '${id}' lost its run and is being recovered: read it again shortly`, { 'retry-after': '2' });
export const RESPONSE_NOT_FOUND = createError('CSS_RESPONSE_NOT_FOUND', 404, (id: string) => `No response found with id '${id}'.`);

/** A 400 naming the body field it concerns. */
export function invalidParam(param: string, message: string): HttpError {
  const err = createError('CSS_INVALID_REQUEST', 400, (m: string) => m)(message) as ParamError;
  err.param = param;
  return err;
}
