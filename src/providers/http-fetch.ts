// The `fetch` handed to both provider SDKs. On HTTP/1.1 it is undici's dispatch handler API behind the
// fetch signature, instead of the global fetch (web streams) or undici's `request` (a Readable): the
// promise resolves at the headers with a Response whose body is a PushBody (push-body.ts), to which the
// handler hands each socket read as it is parsed. eachFrame (session.ts) subscribes to it and turns each
// read into frames synchronously: no stream, no async iterator and no promise per chunk, and an open
// stream holds only the handler, the body and the subscriber. https origins that offer HTTP/2 go through
// h2-fetch.ts instead (PROVIDER_HTTP2), whose body stays a Readable. One connection pool per server and
// per actor thread (createProviders makes one fetch) serves every provider call made there.
import type { Readable } from 'node:stream';
import * as consume from 'node:stream/consumers';
import { Agent, type Dispatcher, util } from 'undici';
import { abortError, createH2Transport } from './h2-fetch.ts';
import { BodyTooLargeError, MAX_WHOLE_BODY_BYTES, PushBody, type BodySource } from './push-body.ts';

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
  /** HTTP/2 toward https origins that offer it (ALPN); false keeps those calls on HTTP/1.1. */
  http2?: boolean;
  /** `http:` origins (scheme, host, port) that speak HTTP/2 with prior knowledge (h2c): HTTP/2 there too. */
  h2cOrigins?: readonly string[];
  /** Extra trusted CA (tests); the system's otherwise. */
  ca?: string;
};

/**
 * The Response the SDKs read: status, headers, and the body, a PushBody (HTTP/1.1) or a Node Readable
 * (HTTP/2); eachFrame reads either. The SDKs read error bodies and whole responses with `text`/`json`.
 */
class ProviderResponse {
  readonly redirected = false;
  readonly type = 'basic';

  constructor(
    readonly url: string,
    readonly status: number,
    readonly statusText: string,
    readonly headers: Headers,
    readonly body: PushBody | Readable,
  ) {}

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get bodyUsed(): boolean {
    const body = this.body;
    return body instanceof PushBody ? body.bodyUsed : body.readableDidRead;
  }

  text(): Promise<string> {
    return this.read('text');
  }

  json(): Promise<unknown> {
    return this.read('json');
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.read('arrayBuffer');
  }

  blob() {
    return this.read('blob');
  }

  /** The whole body, as the PushBody reads itself or as node:stream/consumers reads a Readable. */
  private read<K extends 'text' | 'json' | 'arrayBuffer' | 'blob'>(how: K): ReturnType<(typeof consume)[K]> {
    const body = this.body;
    const whole = body instanceof PushBody ? body[how]() : consume[how](capped(body));
    return whole as ReturnType<(typeof consume)[K]>;
  }
}

/** `body`, destroyed with BodyTooLargeError once more than MAX_WHOLE_BODY_BYTES have come (push-body.ts). */
function capped(body: Readable): Readable {
  let size = 0;
  const count = (bytes: Uint8Array) => {
    size += bytes.byteLength;
    if (size <= MAX_WHOLE_BODY_BYTES) return;
    body.off('data', count);
    body.destroy(new BodyTooLargeError());
  };
  body.on('data', count);
  return body;
}

/** The raw header list undici's parser gives (name, value, name, value…) as web Headers; values are latin1. */
function headersOf(raw: Buffer[]): Headers {
  const h = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) h.append(util.headerNameToString(raw[i]!), raw[i + 1]!.toString('latin1'));
  return h;
}

/**
 * One HTTP/1.1 request through undici's dispatch handler API (the callbacks undici's own `request`
 * implements; its newer `onRequestStart`… names are adapted to these by a wrapper per call). It is
 * also its body's source (cancel, resume) and its signal's abort listener (`handleEvent`), so a
 * request costs this object, the Response and the body. The abort listener is removed when the
 * request ends, so a long-lived signal gathers none.
 */
class DispatchRequest implements Dispatcher.DispatchHandler, BodySource {
  private abort: ((err?: Error) => void) | null = null;
  private resumeParser: (() => void) | null = null;
  private body: PushBody | null = null;
  /** The signal fired before undici handed us `abort`: given to it in onConnect. */
  private reason: Error | null = null;
  private ended = false;

  constructor(
    private readonly url: string,
    private readonly signal: AbortSignal | null,
    private readonly resolve: (res: ProviderResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    signal?.addEventListener('abort', this);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.reason) abort(this.reason);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    if (statusCode < 200) return true; // 1xx: the real headers follow
    const headers = headersOf(rawHeaders); // first: if it throws, undici aborts and the fetch rejects
    this.resumeParser = resume;
    const body = (this.body = new PushBody(this));
    this.resolve(new ProviderResponse(this.url, statusCode, statusText, headers, body));
    return true;
  }

  onData(chunk: Buffer): boolean {
    return this.body!.push(chunk);
  }

  onComplete(): void {
    if (this.end()) this.body!.end();
  }

  /** A failure before the headers rejects the fetch; after them it fails the body. */
  onError(err: Error): void {
    if (!this.end()) return;
    if (this.body) this.body.fail(err);
    else this.reject(err);
  }

  /** The signal fired: the fetch rejects with its reason, or the body fails with it; the connection is closed. */
  handleEvent(): void {
    const reason = abortError(this.signal!);
    if (this.abort) this.abort(reason); // undici calls onError(reason) at once
    else this.reason = reason;
    this.onError(reason);
  }

  /** The body's consumer left early: close the connection rather than reuse it mid-body. */
  cancel(reason: Error): void {
    if (this.abort) this.abort(reason);
    else this.onError(reason);
  }

  /** Out of the parser's call: resume() asserts that no parser is running, and a consumer may read from inside one. */
  resume(): void {
    if (this.resumeParser && !this.ended) queueMicrotask(this.resumeParser);
  }

  /** True the first time: the request is over, its abort listener goes. */
  private end(): boolean {
    if (this.ended) return false;
    this.ended = true;
    this.signal?.removeEventListener('abort', this);
    return true;
  }
}

/** What a request needs of its URL: where it goes (undici's origin, the path with its query) and how. */
interface Target {
  protocol: string;
  origin: string;
  path: string;
}

/**
 * Parsed URLs by their text. A client calls the same few URLs (its base URL and an operation's path)
 * on every request, so each is parsed once rather than per call. Bounded: a caller that made a new URL
 * per request (a query string) empties it now and then, and costs one parse per call as before.
 */
class TargetCache {
  private readonly seen = new Map<string, Target>();

  of(url: string): Target {
    let target = this.seen.get(url);
    if (target === undefined) {
      const { protocol, origin, pathname, search } = new URL(url);
      if (this.seen.size >= 64) this.seen.clear();
      this.seen.set(url, (target = { protocol, origin, path: pathname + search }));
    }
    return target;
  }
}

/**
 * A fetch for the SDKs, with its own connection pool: the composition root makes one per server and each
 * actor thread one for itself (createProviders), and every client built from it shares it. `timeoutMs`
 * bounds waiting for headers and for each body chunk; the SDKs apply their own overall timeout through
 * the abort signal.
 */
export function createProviderFetch(options: ProviderFetchOptions): typeof fetch {
  const { timeoutMs } = options;
  const dispatcher = new Agent({
    keepAliveTimeout: 30_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: { timeout: Math.min(timeoutMs, 30_000), ...(options.ca ? { ca: options.ca } : {}) },
  });
  const h2c = new Set(options.h2cOrigins ?? []);
  const tlsH2 = options.http2 !== false;
  const h2 = tlsH2 || h2c.size > 0 ? createH2Transport({ timeoutMs, ca: options.ca }) : null;
  const targets = new TargetCache();
  const providerFetch = async (input: string | URL | Request, init: FetchInit = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = init.method ?? 'GET';
    const body = init.body ?? null;
    const signal = init.signal ?? null;
    const target = targets.of(url);
    if (h2 && (target.protocol === 'https:' ? tlsH2 : h2c.has(target.origin))) {
      const reply = await h2.request(new URL(url), { method, headers: plainHeaders(init.headers), body, signal });
      if (reply) return new ProviderResponse(url, reply.status, '', webHeaders(reply.headers), reply.body);
    }
    if (signal?.aborted) throw abortError(signal);
    // undici reads a header list as an object or any iterable of [name, value] (but an array as a flat
    // name, value… list): the SDK's Headers go as they are, without a plain copy of them per request.
    const headers = Array.isArray(init.headers) ? plainHeaders(init.headers) : (init.headers ?? {});
    return new Promise<ProviderResponse>((resolve, reject) => {
      const handler = new DispatchRequest(url, signal, resolve, reject);
      // A synchronous failure comes to handler.onError too.
      dispatcher.dispatch({ origin: target.origin, path: target.path, method, headers: headers as Dispatcher.DispatchOptions['headers'], body }, handler);
    });
  };
  return providerFetch as unknown as typeof fetch;
}
