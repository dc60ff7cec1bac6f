// The plain-HTTP plumbing both engine clients share: URL joining that keeps a base path,
// timeout/abort handling, reading the body once, and turning failures into EngineError.
import { EngineError, type EngineName } from './errors.ts';
import { sliceUnits, storableText } from '../base/text.ts';

export interface EngineRequestOptions {
  /** Cancels the request (run cancelled, caller's deadline). */
  signal?: AbortSignal;
  /** Extra per-request deadline; combined with `signal`. */
  timeoutMs?: number;
}

/**
 * The most of an engine's answer that is read: far above a real one (100 results with page text, an answer
 * with its cited pages), far below what would strain the run's thread. A bigger body is refused unread.
 */
export const ENGINE_BODY_MAX_BYTES = 16 * 1024 * 1024;

export interface EngineHttpResponse {
  status: number;
  contentType: string;
  text: string;
  latencyMs: number;
}

/** `{base}/{path}` keeping any path prefix of the base (`new URL(path, base)` would drop its last segment). */
export function joinUrl(base: string, path: string): URL {
  return new URL(`${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`);
}

function combinedSignal(opts: EngineRequestOptions): { signal?: AbortSignal; timeout?: AbortSignal } {
  const timeout = opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : undefined;
  const parts = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
  return { signal: parts.length > 1 ? AbortSignal.any(parts) : parts[0], timeout };
}

export async function engineFetch(
  engine: EngineName,
  what: string,
  url: URL,
  init: RequestInit,
  opts: EngineRequestOptions,
): Promise<EngineHttpResponse> {
  const { signal, timeout } = combinedSignal(opts);
  const started = performance.now();
  let res: Response;
  let text: string | null;
  try {
    res = await fetch(url, { ...init, signal, redirect: 'follow' });
    text = await readCapped(res, ENGINE_BODY_MAX_BYTES);
  } catch (err) {
    if (timeout?.aborted) {
      throw new EngineError(engine, `${engine} ${what} timed out after ${opts.timeoutMs} ms`, { cause: err });
    }
    if (signal?.aborted) throw new EngineError(engine, `${engine} ${what} was aborted`, { cause: err });
    const reason = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
    throw new EngineError(engine, `${engine} ${what} could not be reached at ${url.origin}: ${reason}`, {
      cause: err,
    });
  }
  if (text === null) {
    throw new EngineError(engine, `${engine} ${what} answered HTTP ${res.status} with a body larger than ${ENGINE_BODY_MAX_BYTES} bytes`, {
      status: res.status,
    });
  }
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    text,
    latencyMs: Math.round(performance.now() - started),
  };
}

/** The body as text (as `Response.text()` decodes it), or null once it passes `max` bytes, the rest unread. */
async function readCapped(res: Response, max: number): Promise<string | null> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** A short, single-line excerpt of a body for error messages. */
export function excerpt(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${sliceUnits(flat, max)}…` : flat;
}

/** The engine's `{"error": "…"}` text, or an excerpt of whatever else it sent. */
export function errorText(res: EngineHttpResponse): string {
  if (res.contentType.includes('json')) {
    try {
      const body = JSON.parse(res.text) as { error?: unknown; message?: unknown };
      const msg = body.error ?? body.message;
      if (typeof msg === 'string' && msg) return msg;
      if (msg && typeof msg === 'object') return excerpt(JSON.stringify(msg));
    } catch {
      /* fall through to the raw excerpt */
    }
  }
  return excerpt(res.text) || 'empty body';
}

export function parseJson(engine: EngineName, what: string, res: EngineHttpResponse): unknown {
  try {
    return JSON.parse(res.text);
  } catch (err) {
    throw new EngineError(
      engine,
      `${engine} ${what} answered HTTP ${res.status} with a body that is not JSON (${res.contentType || 'no content type'}): ${excerpt(res.text)}`,
      { status: res.status, cause: err },
    );
  }
}

/**
 * The JSON of a 2xx answer, or an EngineError when it lacks what every real answer has (`has`): an error
 * reported with status 200 (`{"error": …}` from a gateway or an older version) or another API's body, which
 * would otherwise pass as an empty success.
 */
export function parseAnswer(engine: EngineName, what: string, res: EngineHttpResponse, field: string, has: (data: Record<string, unknown>) => boolean): Record<string, unknown> {
  const data = obj(parseJson(engine, what, res));
  if (has(data)) return data;
  const message = errorText({ ...res, contentType: 'json' });
  throw new EngineError(engine, `${engine} ${what} answered HTTP ${res.status} without ${field}: ${message}`, {
    status: res.status,
    engineMessage: message,
  });
}

// Small readers for untrusted JSON: wrong types become null instead of leaking into our shapes, and text
// comes out as it will be stored (no U+0000, no lone surrogate), so what a run streams is what it stores.
export const str = (v: unknown): string | null => (typeof v === 'string' ? storableText(v) : null);
/**
 * `v` when it is an http(s) address. Anything else (`javascript:`, `data:`) is no web page, and a client
 * that renders a result as a link would run it in its own page.
 */
export const webUrl = (v: unknown): string | null => {
  const url = str(v)?.trim();
  return url && /^https?:\/\//i.test(url) ? url : null;
};
export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
export const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
