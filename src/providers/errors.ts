// Turns whatever the SDKs (or a broken stream) throw into a ProviderError whose message can be shown to
// the user and stored on the LlmCall. Both SDKs share the same error class names and shapes, so the
// SDK classes are checked with instanceof; the body fields differ, so those are read by duck typing.
import { sliceUnits } from '../base/text.ts';
import { A, O } from './sdks.ts';
import { H2_TIMEOUT_CODES } from './h2-fetch.ts';
import type { SseFrames } from './sse.ts';
import { ProviderError, type ProviderName } from './types.ts';

/**
 * A cancelled request. Still a ProviderError (so code that only catches ProviderError sees it), but
 * named `AbortError` like the platform's own aborts, so callers tell cancellation from failure with
 * `isAbortError(err)` or `err.name === 'AbortError'`.
 */
export class ProviderAbortError extends ProviderError {
  constructor(provider: ProviderName, options?: { cause?: unknown }) {
    super(`${provider} request aborted`, undefined, options);
    this.name = 'AbortError';
  }
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

type Loose = Record<string, unknown> | null | undefined;

/** The transports' own timeouts (http-fetch.ts sets them from PROVIDER_TIMEOUT_MS): a timeout, not a cut stream. */
const TRANSPORT_TIMEOUTS = new Set<string>(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', ...H2_TIMEOUT_CODES]);

/** Thrown while reading a body (the error itself), or while waiting for headers (the SDK's connection error's cause). */
function transportTimeout(e: Loose): boolean {
  return TRANSPORT_TIMEOUTS.has(String(e?.code)) || TRANSPORT_TIMEOUTS.has(String((e?.cause as Loose)?.code));
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() ? v.trim() : undefined;
}

/** The provider's own words: openai keeps the inner `{message}` in `err.error`, the Messages SDK the whole body. */
function providerMessage(err: Loose): string | undefined {
  const body = err?.error as Loose;
  const inner = body?.error as Loose;
  return (
    str(err?.apiMessage) ??
    str(body?.message) ??
    str(inner?.message) ??
    (typeof inner === 'string' ? str(inner) : undefined) ??
    // The SDKs prefix their message with the status; drop it so it is not repeated.
    str(typeof err?.message === 'string' ? err.message.replace(/^\d{3}\s+/, '') : undefined)
  );
}

/** The most of a provider's message kept: its own error text is far shorter; past this it is a dump. */
const MESSAGE_LIMIT = 1000;
const HTML_PAGE = /^\s*<(!doctype\s+html|html|head|body)\b/i;

/**
 * A provider's message fit to show and store: an HTML page (a proxy's or a CDN's answer in front of the
 * provider) as its title, and anything else cut at MESSAGE_LIMIT.
 */
function readable(message: string): string {
  if (HTML_PAGE.test(message)) {
    const title = /<title[^>]*>([^<]*)<\/title>/i.exec(message)?.[1]?.replace(/\s+/g, ' ').trim();
    return title ? `${title} (an HTML page)` : 'an HTML page';
  }
  return message.length > MESSAGE_LIMIT ? `${sliceUnits(message, MESSAGE_LIMIT)}…` : message;
}

function errorCode(err: Loose): string | undefined {
  const body = err?.error as Loose;
  const inner = body?.error as Loose;
  return str(err?.code) ?? str(err?.type) ?? str(body?.code) ?? str(inner?.type) ?? str(body?.type);
}

/**
 * The wait a provider asked for on an error answer, in ms: `retry-after-ms` (OpenAI's), else
 * `retry-after` in seconds or as an HTTP date. Undefined when it named none or none readable.
 */
export function retryAfterOf(err: Loose): number | undefined {
  const headers = err?.headers as { get?(name: string): string | null } | undefined;
  const get = (name: string) => (typeof headers?.get === 'function' ? headers.get(name) : null);
  const ms = Number.parseFloat(get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = get('retry-after');
  if (raw === null) return undefined;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Maps any thrown value to a ProviderError. Pass the request's signal: an aborted request always maps to an abort. */
export function toProviderError(provider: ProviderName, err: unknown, signal?: AbortSignal): ProviderError {
  if (err instanceof ProviderError) return err;
  if (signal?.aborted || err instanceof O.APIUserAbortError || err instanceof A.APIUserAbortError || isAbortError(err)) {
    return new ProviderAbortError(provider, { cause: signal?.reason ?? err });
  }
  const e = (typeof err === 'object' ? err : { message: String(err) }) as Loose;
  if (err instanceof O.APIConnectionTimeoutError || err instanceof A.APIConnectionTimeoutError || transportTimeout(e)) {
    return new ProviderError(`${provider} request timed out`, undefined, { cause: err, timedOut: true });
  }
  if (err instanceof O.APIConnectionError || err instanceof A.APIConnectionError) {
    const cause = (e?.cause as Loose)?.message;
    const detail = str(cause) ? `: ${str(cause)}` : '';
    return new ProviderError(`${provider} connection failed${detail}`, undefined, { cause: err, transient: true });
  }
  const status = typeof e?.status === 'number' ? e.status : undefined;
  const message = readable(providerMessage(e) ?? 'unknown error');
  if (status !== undefined) {
    return new ProviderError(`${provider} error ${status}: ${message}`, status, { cause: err, retryAfterMs: retryAfterOf(e) });
  }
  if (err instanceof O.APIError || err instanceof A.APIError) {
    // Status-less APIError: an `error` event or `{"error":…}` frame inside a stream that had already begun.
    const code = errorCode(e);
    return new ProviderError(`${provider} stream error${code ? ` (${code})` : ''}: ${message}`, undefined, { cause: err, transient: true });
  }
  if (err instanceof SyntaxError) {
    return new ProviderError(`${provider} sent an unreadable stream frame: ${message}`, undefined, { cause: err });
  }
  // e.g. undici's `TypeError: terminated` when the connection drops mid-body.
  return new ProviderError(`${provider} stream interrupted: ${message}`, undefined, { cause: err, transient: true });
}

/**
 * For a stream that closed without its terminal event (a clean disconnect the SDK does not report). A
 * body that was one JSON value and no SSE event at all (`sse`) was an answer in place of a stream: its
 * `error`, in the provider's words, or what it was.
 */
export function truncatedStream(provider: ProviderName, sse?: SseFrames): ProviderError {
  const body = sse?.unframedJson();
  if (body !== undefined) return bodyError(provider, body) ?? new ProviderError(`${provider} sent JSON instead of an event stream: ${excerpt(body)}`);
  return new ProviderError(`${provider} stream ended before the response was complete`, undefined, { transient: true });
}

/**
 * Throws when a whole (non-streamed) response holds no answer: its body carries `error` (gateways and
 * compatible servers answer some failures with status 200, and the SDKs throw only for a non-2xx), or
 * `answered` is false because the field the answer lives in (`field`: choices, output, content) is missing.
 */
export function checkWholeBody(provider: ProviderName, body: unknown, answered: boolean, field: string): void {
  const err = bodyError(provider, body) ?? (answered ? null : new ProviderError(`${provider} response has no ${field}: ${excerpt(body)}`));
  if (err) throw err;
}

/**
 * The error a response body carries, in the provider's words: `{"error": {"message", "type"|"code"}}`
 * (OpenAI-style, and the Messages API's `{"type": "error", "error": {…}}`) or `{"error": "…"}`.
 */
function bodyError(provider: ProviderName, body: unknown): ProviderError | null {
  const error = (body as Loose)?.error;
  if (!error) return null;
  // The body as the Messages SDK puts it on its errors (`err.error`), so both read as they do there.
  const asThrown = { error: body } as Loose;
  const code = errorCode(asThrown);
  const message = readable(providerMessage(asThrown) ?? excerpt(error));
  return new ProviderError(`${provider} response error${code ? ` (${code})` : ''}: ${message}`);
}

/** A body as it came, short enough for an error message. */
function excerpt(body: unknown): string {
  const text = typeof body === 'string' ? body : (JSON.stringify(body) ?? String(body));
  return text.length > 200 ? `${sliceUnits(text, 200)}…` : text;
}
