// The `fetch` handed to both provider SDKs. It is undici's `request` (Node streams) behind the
// fetch signature, instead of the global fetch (web streams): both SDKs iterate any async-iterable
// body, and skipping web streams roughly halves the cost of each streamed chunk and the memory of
// each open stream. https origins that offer HTTP/2 go through h2-fetch.ts instead (PROVIDER_HTTP2).
// One connection pool per thread serves every provider call of that thread.
import type { Readable } from 'node:stream';
import * as consume from 'node:stream/consumers';
import { Agent, request } from 'undici';
import { createH2Transport } from './h2-fetch.ts';

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

export type ProviderFetchOptions = {
  timeoutMs: number;
  /** HTTP/2 toward https origins that offer it (ALPN); false keeps every call on HTTP/1.1. */
  http2?: boolean;
  /** Extra trusted CA (tests); the system's otherwise. */
  ca?: string;
};

/**
 * A fetch for the SDKs. `timeoutMs` bounds waiting for headers and for each body chunk; the SDKs
 * apply their own overall timeout through the abort signal.
 */
export function createProviderFetch(options: ProviderFetchOptions): typeof fetch {
  const key = `${options.timeoutMs}:${options.http2 !== false}:${options.ca ?? ''}`;
  let made = fetches.get(key);
  if (!made) fetches.set(key, (made = makeFetch(options)));
  return made;
}

/** One fetch, so one connection pool, per thread (per options): every client built here shares it. */
const fetches = new Map<string, typeof fetch>();

/** The Response the SDKs read: status, headers, and the body as a Node Readable (sse.ts iterates it). */
function response(url: string, status: number, raw: Record<string, string | string[] | undefined>, body: Readable) {
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: '',
    url,
    redirected: false,
    type: 'basic',
    headers: webHeaders(raw),
    body,
    get bodyUsed() {
      return body.readableDidRead;
    },
    text: () => consume.text(body),
    json: () => consume.json(body),
    arrayBuffer: () => consume.arrayBuffer(body),
    blob: () => consume.blob(body),
  };
}

function makeFetch(options: ProviderFetchOptions): typeof fetch {
  const { timeoutMs } = options;
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: { timeout: Math.min(timeoutMs, 30_000), ...(options.ca ? { ca: options.ca } : {}) },
  });
  const h2 = options.http2 === false ? null : createH2Transport({ timeoutMs, ca: options.ca });
  const providerFetch = async (input: string | URL | Request, init: FetchInit = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init.method ?? 'GET';
    const headers = plainHeaders(init.headers);
    const body = init.body ?? null;
    const signal = init.signal ?? null;
    if (h2 && url.startsWith('https:')) {
      const reply = await h2.request(new URL(url), { method, headers, body, signal });
      if (reply) return response(url, reply.status, reply.headers, reply.body);
    }
    const res = await request(url, { method: method as 'GET', headers, body, signal: signal ?? undefined, dispatcher });
    return response(url, res.statusCode, res.headers, res.body);
  };
  return providerFetch as unknown as typeof fetch;
}
