// Small HTTP helpers shared by every simulated upstream. Kept free of provider knowledge so each
// provider module decides its own error shapes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';

/** Bodies carry base64 images; the real APIs accept tens of MB, so the cap is generous. */
const MAX_BODY = 64 * 1024 * 1024;

export class BodyTooLarge extends Error {
  /** A stable code, as the service's errors carry (the simulator imports nothing of the service's). */
  readonly code = 'SIM_ERR_BODY_TOO_LARGE';
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new BodyTooLarge('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** undefined for an empty body, the parsed value for JSON, or a ParseFailure. */
export class ParseFailure {
  constructor(readonly raw: string) {}
}

export function parseJsonBody(buf: Buffer): unknown {
  if (buf.length === 0) return undefined;
  const raw = buf.toString('utf8');
  try {
    return JSON.parse(raw);
  } catch {
    return new ParseFailure(raw);
  }
}

// Ids only need to be unique within one simulator run (stored responses are looked up by id), and
// hex from one random prefix plus a counter is cheaper than crypto per request.
const runPrefix = randomBytes(4).toString('hex');
let idCounter = 0;
export function newId(prefix: string): string {
  idCounter++;
  return `${prefix}${runPrefix}${idCounter.toString(16).padStart(8, '0')}`;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendText(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
    ...headers,
  });
  res.end(body);
}

/**
 * Resolves after `ms`, or early (false) when the client goes away, so a slow scripted call does
 * not keep a timer alive for a request nobody waits for.
 */
export function delayUnlessClosed(res: ServerResponse, ms: number): Promise<boolean> {
  if (!(ms > 0)) return Promise.resolve(!res.destroyed);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

export function bearerToken(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m && m[1]!.trim() !== '' ? m[1]!.trim() : null;
}

export function retryCount(req: IncomingMessage): string | undefined {
  const v = req.headers['x-stainless-retry-count'];
  return Array.isArray(v) ? v[0] : v;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function tokensFor(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
