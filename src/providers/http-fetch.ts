// The `fetch` handed to both provider SDKs. It is undici's `request` (Node streams) behind the
// fetch signature, instead of the global fetch (web streams): both SDKs iterate any async-iterable
// body, and skipping web streams roughly halves the cost of each streamed chunk and the memory of
// each open stream. One connection pool per thread serves every provider call of that thread.
import { Agent, request } from 'undici';

type FetchInit = {
  method?: string;
  headers?: Record<string, string> | Headers | Array<[string, string]>;
  body?: string | Uint8Array | null;
  signal?: AbortSignal | null;
};

function plainHeaders(headers: FetchInit['headers']): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  if (Array.isArray(headers)) return Object.fromEntries(headers);
  return headers;
}

function webHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const h = new Headers();
  for (const key in raw) {
    const v = raw[key];
    if (Array.isArray(v)) for (const x of v) h.append(key, x);
    else if (v !== undefined) h.set(key, v);
  }
  return h;
}

/**
 * A fetch for the SDKs. `timeoutMs` bounds waiting for headers and for each body chunk; the SDKs
 * apply their own overall timeout through the abort signal.
 */
export function createProviderFetch(timeoutMs: number): typeof fetch {
  let made = fetches.get(timeoutMs);
  if (!made) fetches.set(timeoutMs, (made = makeFetch(timeoutMs)));
  return made;
}

/** One fetch, so one connection pool, per thread (per timeout): every client built here shares it. */
const fetches = new Map<number, typeof fetch>();

function makeFetch(timeoutMs: number): typeof fetch {
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: { timeout: Math.min(timeoutMs, 30_000) },
  });
  const providerFetch = async (input: string | URL | Request, init: FetchInit = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const res = await request(url, {
      method: (init.method ?? 'GET') as 'GET',
      headers: plainHeaders(init.headers),
      body: init.body ?? null,
      signal: init.signal ?? undefined,
      dispatcher,
    });
    const body = res.body;
    return {
      ok: res.statusCode >= 200 && res.statusCode < 300,
      status: res.statusCode,
      statusText: '',
      url,
      redirected: false,
      type: 'basic',
      headers: webHeaders(res.headers),
      body,
      get bodyUsed() {
        return body.bodyUsed;
      },
      text: () => body.text(),
      json: () => body.json(),
      arrayBuffer: () => body.arrayBuffer(),
      blob: () => body.blob(),
    };
  };
  return providerFetch as unknown as typeof fetch;
}
