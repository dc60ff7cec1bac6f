// HTTP/2 toward https provider origins that offer it (ALPN `h2`). One TLS connection carries up to
// STREAMS_PER_SESSION streams, where HTTP/1.1 holds a connection, a socket and a parser per open
// stream: over TLS 27 against 63 KB of RSS per open stream and 26 against 65–80 µs of CPU per chunk
// (bench/load/h2-probe.ts at d8cf097, docs/performance.md). Built on node:http2, not undici's `allowH2`: undici 7
// fails every stream of a connection on a graceful GOAWAY, which provider front ends send to rotate
// connections; node:http2 lets open streams finish, and a stream the server refused unprocessed (past
// nginx's `keepalive_requests`, say) is sent again on another connection. An origin that answers ALPN
// with http/1.1 gets `null` from `request` and goes to the HTTP/1.1 path (http-fetch.ts) from then on.
// An `http:` origin has no ALPN to ask: it comes here only when configured as speaking HTTP/2 with
// prior knowledge (h2c, PROVIDER_H2C_ORIGINS), and gets a cleartext session at once.
import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';

/** Streams per connection: RFC 9113 asks servers to allow at least 100; fewer if the server says so. */
const STREAMS_PER_SESSION = 100;
const IDLE_CLOSE_MS = 30_000;
/**
 * Times one request may be refused before it fails. A server that rotates connections (nginx's
 * `keepalive_requests`) refuses the streams opened past its limit; they were never processed, so
 * RFC 9113 §8.7 lets a client send them again, on another connection.
 */
const MAX_REFUSALS = 5;
const SESSION_GONE = new Set(['ERR_HTTP2_GOAWAY_SESSION', 'ERR_HTTP2_INVALID_SESSION']);

/** Error codes for our own timeouts; errors.ts maps them to a timed-out ProviderError. */
export const H2_TIMEOUT_CODES = ['H2_CONNECT_TIMEOUT', 'H2_HEADERS_TIMEOUT', 'H2_BODY_TIMEOUT'] as const;

/** HTTP/2 forbids connection-specific headers; Node throws on them. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'content-length']);

type H2Options = { timeoutMs: number; ca?: string | Buffer };
type Reply = { status: number; headers: Record<string, string | string[] | undefined>; body: ClientHttp2Stream };
type Request = { method: string; headers: Record<string, string>; body: string | Uint8Array | null; signal: AbortSignal | null };

/** One connection and how many streams it carries; `session` is `ready`'s value once it has come. */
type Entry = { ready: Promise<ClientHttp2Session | null>; session: ClientHttp2Session | null; active: number };
/** An origin's connections; `http1Only` once its ALPN answered http/1.1. */
type Origin = { http1Only: boolean; entries: Entry[] };

function timeoutError(code: (typeof H2_TIMEOUT_CODES)[number], message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** The error an abort rejects with (http-fetch.ts too): the signal's reason, or the platform's AbortError. */
export function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The HTTP/2 transport: `request` answers with a Reply, or with `null` when the origin speaks only
 * HTTP/1.1 (the caller then sends it there). Connections are shared by every caller of this transport.
 */
export function createH2Transport(options: H2Options) {
  const origins = new Map<string, Origin>();

  /**
   * TLS first, so ALPN decides: an HTTP/2 session on the socket, or null for an HTTP/1.1-only origin.
   * A cleartext origin (h2c) gets its session on the TCP connection at once.
   */
  const open = (url: URL): Promise<ClientHttp2Session | null> =>
    new Promise((resolve, reject) => {
      const cleartext = url.protocol === 'http:';
      const socket = cleartext
        ? net.connect({ host: url.hostname, port: Number(url.port || 80) })
        : tls.connect({
            host: url.hostname,
            port: Number(url.port || 443),
            servername: net.isIP(url.hostname) ? undefined : url.hostname, // no SNI for an address
            ALPNProtocols: ['h2', 'http/1.1'],
            ca: options.ca,
          });
      const connectMs = Math.min(options.timeoutMs, 30_000);
      const timer = setTimeout(() => socket.destroy(timeoutError('H2_CONNECT_TIMEOUT', `connect timed out after ${connectMs} ms`)), connectMs);
      const fail = (err: Error) => (clearTimeout(timer), reject(err)); // a no-op once settled
      socket.on('error', fail);
      // A server that closes cleanly before its SETTINGS raises no error: without this the session would
      // never be ready, and every request queued on it would wait for ever (the connect timer's destroy
      // of a closed socket emits nothing).
      socket.once('close', () => fail(Object.assign(new Error('the provider closed the connection before its HTTP/2 settings'), { code: 'ECONNRESET' })));
      socket.once(cleartext ? 'connect' : 'secureConnect', () => {
        if (!cleartext && (socket as tls.TLSSocket).alpnProtocol !== 'h2') {
          clearTimeout(timer);
          socket.destroy();
          resolve(null);
          return;
        }
        // Ready once the server's SETTINGS have come: they say how many streams it takes at once.
        const session = http2.connect(url.origin, { createConnection: () => socket, peerMaxConcurrentStreams: STREAMS_PER_SESSION });
        session.on('error', fail);
        session.once('remoteSettings', () => (clearTimeout(timer), resolve(session)));
      });
    });

  const limitOf = (entry: Entry) => Math.min(STREAMS_PER_SESSION, entry.session?.remoteSettings.maxConcurrentStreams ?? STREAMS_PER_SESSION);

  const forget = (origin: Origin, entry: Entry) => {
    const i = origin.entries.indexOf(entry);
    if (i >= 0) origin.entries.splice(i, 1);
  };

  const track = (origin: Origin, entry: Entry, session: ClientHttp2Session) => {
    entry.session = session;
    // After a GOAWAY the session takes no new streams but its open ones finish; it closes when they have.
    session.on('goaway', () => forget(origin, entry));
    session.on('close', () => forget(origin, entry));
    session.on('error', () => forget(origin, entry)); // its streams report the error themselves
    session.setTimeout(IDLE_CLOSE_MS, () => entry.active === 0 && session.close());
  };

  /** A stream slot on a connection of this origin: one with room, or a new one. */
  const slot = (origin: Origin, url: URL): Entry => {
    for (const entry of origin.entries) if (entry.active < limitOf(entry)) return entry;
    const entry: Entry = { ready: open(url), session: null, active: 0 };
    origin.entries.push(entry);
    entry.ready.then(
      (session) => (session ? track(origin, entry, session) : forget(origin, entry)),
      () => forget(origin, entry),
    );
    return entry;
  };

  const release = (entry: Entry) => {
    entry.active--;
    if (entry.active === 0) entry.session?.unref();
  };

  async function request(url: URL, req: Request): Promise<Reply | null> {
    let origin = origins.get(url.origin);
    if (!origin) origins.set(url.origin, (origin = { http1Only: false, entries: [] }));
    if (origin.http1Only) return null;
    for (let refusals = 0; ; ) {
      if (req.signal?.aborted) throw abortError(req.signal);
      const entry = slot(origin, url);
      const place = entry.active++;
      let session: ClientHttp2Session | null;
      try {
        session = await entry.ready;
      } catch (err) {
        release(entry);
        throw err;
      }
      if (!session) {
        release(entry);
        origin.http1Only = true;
        return null;
      }
      // Aborted while the connection was being made: an abort listener added now would never fire.
      if (req.signal?.aborted) {
        release(entry);
        throw abortError(req.signal);
      }
      // Slots were handed out before the server said its limit; those past it look again.
      if (place >= limitOf(entry)) {
        release(entry);
        continue;
      }
      session.ref();
      const reply = await send(session, entry, url, req, refusals === MAX_REFUSALS);
      if (reply) return reply;
      // Refused: this connection is going away (its GOAWAY may still be on the wire); take another.
      forget(origin, entry);
      refusals++;
    }
  }

  /** The server's reply; null when it refused the stream unprocessed and `lastTry` is false. */
  function send(session: ClientHttp2Session, entry: Entry, url: URL, req: Request, lastTry: boolean): Promise<Reply | null> {
    const headers: Record<string, string> = { ':method': req.method, ':path': url.pathname + url.search };
    for (const key in req.headers) {
      const name = key.toLowerCase();
      if (!HOP_BY_HOP.has(name)) headers[name] = req.headers[key]!;
    }
    return new Promise<Reply | null>((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = session.request(headers, { endStream: req.body === null });
      } catch (err) {
        release(entry);
        // The session got a GOAWAY or closed between the slot and the request: nothing was sent.
        if (!lastTry && SESSION_GONE.has((err as { code?: string }).code ?? '')) resolve(null);
        else reject(err);
        return;
      }
      let answered = false;
      const onAbort = () => stream.destroy(abortError(req.signal!));
      req.signal?.addEventListener('abort', onAbort, { once: true });
      stream.once('close', () => {
        req.signal?.removeEventListener('abort', onAbort);
        release(entry);
      });
      // Until the headers arrive a timeout rejects; afterwards it fails the body, as undici's
      // headersTimeout and bodyTimeout do on the HTTP/1.1 path.
      stream.setTimeout(options.timeoutMs, () =>
        stream.destroy(answered
          ? timeoutError('H2_BODY_TIMEOUT', `no data for ${options.timeoutMs} ms`)
          : timeoutError('H2_HEADERS_TIMEOUT', `no response headers for ${options.timeoutMs} ms`)),
      );
      stream.once('error', (err) => {
        if (answered) return;
        if (!lastTry && stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM && !req.signal?.aborted) resolve(null);
        else reject(err);
      });
      stream.once('response', (raw) => {
        answered = true;
        const status = Number(raw[':status']);
        const plain: Reply['headers'] = {};
        for (const key in raw) if (key[0] !== ':') plain[key] = raw[key] as string | string[];
        resolve({ status, headers: plain, body: stream });
      });
      if (req.body !== null) stream.end(req.body);
    });
  }

  return { request };
}
