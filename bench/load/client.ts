// A minimal HTTP/1.1 client for thousands of concurrent SSE streams: one raw socket and one small
// incremental parser per stream (status line, headers, chunked or close-delimited body, SSE event
// splitting). No fetch/undici per stream: their per-request objects and streams would cost the
// generator more CPU than the process under test, and the figures are about that process.
import { connect, type Socket } from 'node:net';

export interface Endpoint {
  host: string;
  port: number;
}

/** Epoch milliseconds with sub-millisecond precision, comparable with the simulator's stamps. */
export const epochNow = (): number => performance.timeOrigin + performance.now();

export interface StreamHandlers {
  /** Status line and headers are in. */
  onHead?(status: number, headers: Map<string, string>): void;
  /** One SSE event block (without the blank line), `at` = epoch ms of the socket read it came in. */
  onEvent(block: string, at: number): void;
  /** A non-SSE body (an error answer), whole. */
  onBody?(status: number, body: string): void;
  /** The connection is over; `error` when it broke before a clean end. */
  onClose(error: string | null): void;
}

const CRLF2 = Buffer.from('\r\n\r\n');

/**
 * One request on its own connection (`Connection: close`: a stream holds its socket for its whole
 * life anyway, so pooling would buy nothing here). Returns the socket so a caller can drop it.
 */
export function openStream(ep: Endpoint, method: string, path: string, headers: Record<string, string>, body: string | null, h: StreamHandlers): Socket {
  const s = connect({ host: ep.host, port: ep.port });
  s.setNoDelay(true);
  let head: Buffer | null = Buffer.alloc(0);
  let status = 0;
  let chunked = false;
  let sse = false;
  // Chunked decoding state: bytes left in the current chunk, or -1 while reading a size line.
  let left = -1;
  let sizeLine = '';
  let skipCrlf = 0;
  let text = '';
  let ended = false;
  let closed = false;

  const finish = (error: string | null): void => {
    if (closed) return;
    closed = true;
    if (!sse && h.onBody && status > 0) h.onBody(status, text);
    h.onClose(ended || (!chunked && status > 0 && !error) ? null : (error ?? 'connection closed before the end of the body'));
  };

  const feedText = (str: string, at: number): void => {
    if (!sse) {
      text += str;
      return;
    }
    text += str;
    let i = text.indexOf('\n\n');
    if (i < 0) return;
    let from = 0;
    while (i >= 0) {
      h.onEvent(text.slice(from, i), at);
      from = i + 2;
      i = text.indexOf('\n\n', from);
    }
    text = text.slice(from);
  };

  const feedBody = (buf: Buffer, at: number): void => {
    if (!chunked) return feedText(buf.toString('latin1'), at);
    let p = 0;
    let out = '';
    while (p < buf.length) {
      if (skipCrlf > 0) {
        const n = Math.min(skipCrlf, buf.length - p);
        skipCrlf -= n;
        p += n;
        continue;
      }
      if (left < 0) {
        const nl = buf.indexOf(10, p);
        if (nl < 0) {
          sizeLine += buf.toString('latin1', p);
          break;
        }
        sizeLine += buf.toString('latin1', p, nl);
        p = nl + 1;
        left = Number.parseInt(sizeLine, 16);
        sizeLine = '';
        if (left === 0) {
          ended = true;
          break;
        }
        continue;
      }
      const n = Math.min(left, buf.length - p);
      out += buf.toString('latin1', p, p + n);
      left -= n;
      p += n;
      if (left === 0) {
        left = -1;
        skipCrlf = 2;
      }
    }
    if (out) feedText(out, at);
    if (ended) s.destroy();
  };

  s.on('data', (chunk: Buffer) => {
    const at = epochNow();
    if (head) {
      const buf = head.length ? Buffer.concat([head, chunk]) : chunk;
      const end = buf.indexOf(CRLF2);
      if (end < 0) {
        head = buf;
        return;
      }
      const lines = buf.toString('latin1', 0, end).split('\r\n');
      status = Number(lines[0]!.split(' ')[1]);
      const hs = new Map<string, string>();
      for (let i = 1; i < lines.length; i++) {
        const c = lines[i]!.indexOf(':');
        if (c > 0) hs.set(lines[i]!.slice(0, c).trim().toLowerCase(), lines[i]!.slice(c + 1).trim());
      }
      chunked = /chunked/i.test(hs.get('transfer-encoding') ?? '');
      sse = (hs.get('content-type') ?? '').startsWith('text/event-stream');
      head = null;
      h.onHead?.(status, hs);
      const rest = buf.subarray(end + 4);
      if (rest.length) feedBody(rest, at);
      return;
    }
    feedBody(chunk, at);
  });
  s.on('error', (err) => finish(err.message));
  s.on('close', () => finish(null));
  s.on('connect', () => {
    let req = `${method} ${path} HTTP/1.1\r\nHost: ${ep.host}:${ep.port}\r\nConnection: close\r\n`;
    for (const [k, v] of Object.entries(headers)) req += `${k}: ${v}\r\n`;
    if (body !== null) req += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
    s.write(req + '\r\n' + (body ?? ''));
  });
  return s;
}

/** The `event:` name and the joined `data:` lines of one SSE block. */
export function parseBlock(block: string): { event: string; data: string } {
  let event = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(line[5] === ' ' ? 6 : 5);
    else if (line.startsWith('event:')) event = line.slice(line[6] === ' ' ? 7 : 6);
  }
  return { event, data };
}

const STAMP = /(\d{12,}\.\d+)\|/g;

/** Calls `fn` with each `<epochMs>|` stamp in `s` (the simulator's stamped delta text). */
export function eachStamp(s: string, fn: (stamp: number) => void): void {
  STAMP.lastIndex = 0;
  for (let m = STAMP.exec(s); m; m = STAMP.exec(s)) fn(Number(m[1]));
}

/** Number of stamps in a text (`done.text`, a replayed delta). */
export function countStamps(s: string): number {
  let n = 0;
  for (let i = s.indexOf('|'); i >= 0; i = s.indexOf('|', i + 1)) n++;
  return n;
}
