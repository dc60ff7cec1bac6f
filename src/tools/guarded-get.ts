// A GET that follows redirects by hand so that every hop's address is checked (net-guard.ts) and the
// connection goes to exactly the checked address. node:http/https are used instead of global fetch because
// they take a per-request `lookup`, which pins the address without an extra dependency.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { pinnedLookup, resolveChecked, type GuardOptions } from './net-guard.ts';
import { ToolError } from './types.ts';

export interface ResponseHead {
  url: URL;
  status: number;
  headers: http.IncomingHttpHeaders;
}

export interface GuardedGetOptions extends GuardOptions {
  headers: Record<string, string>;
  signal: AbortSignal;
  maxRedirects: number;
  /** Decompressed bytes kept; reading stops past it. */
  maxBytes: number;
  /** Called once the final response's headers are in; throw to refuse before the body is read. */
  inspect?: (head: ResponseHead) => void;
}

export interface GuardedResponse extends ResponseHead {
  body: Buffer;
  /** true when reading stopped at maxBytes. */
  truncated: boolean;
  /** The URLs that redirected, in order. */
  redirectedFrom: URL[];
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function request(url: URL, opts: GuardedGetOptions, lookup: ReturnType<typeof pinnedLookup>) {
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    // agent: false so no pooled socket (connected to some earlier hop's address) is ever reused.
    const req = lib.request(url, { method: 'GET', headers: opts.headers, lookup, signal: opts.signal, agent: false }, resolve);
    req.on('error', reject);
    req.end();
  });
}

function decoded(res: http.IncomingMessage, url: URL): Readable {
  const encoding = String(res.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : encoding === 'identity' || encoding === ''
            ? null
            : undefined;
  if (decoder === undefined) {
    res.destroy();
    throw new ToolError(`cannot decode ${url.href}: unsupported content-encoding "${encoding}"`);
  }
  if (decoder === null) return res;
  res.on('error', (err) => decoder.destroy(err));
  return res.pipe(decoder);
}

async function readCapped(res: http.IncomingMessage, url: URL, maxBytes: number) {
  const stream = decoded(res, url);
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of stream) {
      const buf = chunk as Buffer;
      if (size + buf.length > maxBytes) {
        chunks.push(buf.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(buf);
      size += buf.length;
    }
  } finally {
    // Past the cap (or on error) stop the download instead of draining it.
    res.destroy();
    if (stream !== res) stream.destroy();
  }
  return { body: Buffer.concat(chunks, size), truncated };
}

/**
 * `work`, or the signal's abort if that comes first. Name resolution takes no signal (getaddrinfo
 * retries for tens of seconds on a name whose servers drop queries): the fetch's deadline and a
 * stop must not wait for it. The lookup itself finishes in the background and is dropped.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export async function guardedGet(start: URL, opts: GuardedGetOptions): Promise<GuardedResponse> {
  let url = start;
  const redirectedFrom: URL[] = [];
  for (;;) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ToolError(`refusing to fetch ${url.href}: only http and https URLs are supported`);
    }
    const addresses = await untilAborted(resolveChecked(url, opts), opts.signal);
    const res = await request(url, opts, pinnedLookup(addresses));
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (REDIRECTS.has(status) && location) {
      res.destroy();
      if (redirectedFrom.length >= opts.maxRedirects) {
        throw new ToolError(`too many redirects fetching ${start.href} (more than ${opts.maxRedirects})`);
      }
      redirectedFrom.push(url);
      try {
        url = new URL(location, url);
      } catch {
        throw new ToolError(`${url.href} redirected to an invalid location: ${location}`);
      }
      continue;
    }
    const head = { url, status, headers: res.headers };
    try {
      opts.inspect?.(head);
    } catch (err) {
      res.destroy();
      throw err;
    }
    const { body, truncated } = await readCapped(res, url, opts.maxBytes);
    return { ...head, body, truncated, redirectedFrom };
  }
}
