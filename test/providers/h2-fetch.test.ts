// HTTP/2 toward https providers (src/providers/h2-fetch.ts), through the official openai SDK and the
// Chat Completions adapter: a TLS front (node:http2, or node:https for an HTTP/1.1-only origin) relays
// every request to the simulator, counts connections and streams, and can hold responses until a
// number of requests are open at once, so a client that queued streams would hang (and time out).
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createProviderFetch } from '../../src/providers/http-fetch.ts';
import { BodyTooLargeError, MAX_WHOLE_BODY_BYTES } from '../../src/providers/push-body.ts';
import { startSimulator } from '../../src/sim/server.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';
import { gateName } from '../helpers/wait.ts';
import { collect, failure, httpsAdapter, request, writeMegabytes, type Sim } from './helpers.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/h2-fetch', () => {
  let sim: Sim;
  let tls: { key: string; cert: string };

  before(async () => {
    sim = await startSimulator();
    tls = selfSignedCertificate();
  });
  after(() => sim.close());

  type Front = {
    base: string;
    /** Connections the front accepted, and the HTTP versions of the requests it relayed. */
    connections: number;
    versions: string[];
    sessions: ServerHttp2Session[];
    /** Most streams open at once. */
    peak: number;
    /** Responses closed before they were complete (the client went away). */
    cutShort: number;
    /** Hold every response until this many requests are open. */
    holdUntil: number;
    /** What to do with a request instead of relaying it. */
    intercept?: (req: Http2ServerRequest | import('node:http').IncomingMessage, res: any) => boolean;
    close(): Promise<void>;
  };

  async function front(kind: 'h2' | 'h1', maxConcurrentStreams = 1000): Promise<Front> {
    const simUrl = new URL(sim.urls.provider_c);
    let open = 0;
    let waiting: Array<() => void> = [];
    const f = { connections: 0, versions: [] as string[], sessions: [] as ServerHttp2Session[], peak: 0, cutShort: 0, holdUntil: 0 } as Front;
    const relay = (req: any, res: any) => {
      f.versions.push(req.httpVersion);
      open++;
      f.peak = Math.max(f.peak, open);
      res.on('close', () => {
        open--;
        if (!res.writableEnded) f.cutShort++; // the client went before the relay ended it
      });
      if (f.intercept?.(req, res)) return;
      const go = () => {
        const headers = { ...req.headers };
        for (const k of Object.keys(headers)) if (k.startsWith(':') || k === 'host') delete headers[k];
        const up = httpRequest({ host: simUrl.hostname, port: simUrl.port, method: req.method, path: req.url, headers }, (r) => {
          res.writeHead(r.statusCode!, { 'content-type': r.headers['content-type'] ?? 'application/json' });
          r.on('data', (d) => res.write(d));
          r.on('end', () => res.end());
          r.on('aborted', () => res.destroy(new Error('upstream cut')));
        });
        req.pipe(up);
      };
      if (open >= f.holdUntil) {
        for (const w of waiting.splice(0)) w();
        go();
      } else waiting.push(go);
    };
    const server = kind === 'h2'
      ? http2.createSecureServer({ ...tls, allowHTTP1: false, settings: { maxConcurrentStreams } }, relay)
      : https.createServer(tls, relay);
    server.on('secureConnection', () => f.connections++);
    if (kind === 'h2') (server as http2.Http2SecureServer).on('session', (s) => f.sessions.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    // The simulator serves provider_c under a path prefix; keep it.
    f.base = `https://127.0.0.1:${(server.address() as AddressInfo).port}${simUrl.pathname}`;
    f.close = () => new Promise<void>((r) => {
      for (const s of f.sessions) s.destroy();
      (server as any).closeAllConnections?.();
      server.close(() => r());
    });
    return f;
  }

  /** Runs `fn` on the front once it listens, and closes the front whatever happens. */
  async function withFront(opening: Promise<Front>, fn: (f: Front) => Promise<void>): Promise<void> {
    const f = await opening;
    try {
      await fn(f);
    } finally {
      await f.close();
    }
  }

  /** The provider_c adapter over the service's provider fetch, trusting the test certificate. */
  const adapter = (base: string, timeoutMs = 10_000, http2 = true) => httpsAdapter(base, tls.cert, { timeoutMs, http2 });

  const REPLY = 'one two three four five six seven eight';
  const slow = (deltas: number, rate: number) => request({ reply: REPLY, deltas, rate });
  /** Answers with one delta; `then` runs once that delta has been handed to the connection. */
  const oneDelta = (then: (res: Http2ServerResponse) => void) => (_req: unknown, res: Http2ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content: 'Hal' }, finish_reason: null }] })}\n\n`, () => then(res));
    return true;
  };

  test('concurrent streams share HTTP/2 connections, at most as many per connection as the server allows', () =>
    withFront(front('h2', 40), async (f) => {
      f.holdUntil = 100; // every response waits until all 100 requests are open
      const provider = adapter(f.base);
      const results = await Promise.all(Array.from({ length: 100 }, () => collect(provider.startSession(slow(4, 20)))));
      for (const r of results) assert.equal(r.text, REPLY);
      assert.deepEqual(new Set(f.versions), new Set(['2.0']));
      assert.equal(f.peak, 100);
      assert.equal(f.connections, 3, 'the server allows 40 streams per connection: 40 + 40 + 20');
    }));

  test('a graceful GOAWAY lets open streams finish; the next call opens a new connection', () =>
    withFront(front('h2'), async (f) => {
      f.holdUntil = 5;
      const provider = adapter(f.base);
      let seen = 0;
      const streams = Array.from({ length: 5 }, () =>
        (async () => {
          const session = provider.startSession(slow(8, 20));
          let text = '';
          await session.round(null, (t) => {
            text += t;
            // Once every stream has its first delta, the server asks the client to go away.
            if (++seen === 5) for (const s of f.sessions) s.goaway(http2.constants.NGHTTP2_NO_ERROR);
          });
          return text;
        })(),
      );
      for (const text of await Promise.all(streams)) assert.equal(text, REPLY);
      f.holdUntil = 0;
      const next = await collect(provider.startSession(slow(2, 100)));
      assert.equal(next.text, REPLY);
      assert.equal(f.connections, 2);
    }));

  test('an https origin that speaks only HTTP/1.1 gets HTTP/1.1, a connection per concurrent stream', () =>
    withFront(front('h1'), async (f) => {
      f.holdUntil = 5; // pipelined or queued requests would never all be open at once
      const provider = adapter(f.base);
      const results = await Promise.all(Array.from({ length: 5 }, () => collect(provider.startSession(slow(3, 20)))));
      for (const r of results) assert.equal(r.text, REPLY);
      assert.deepEqual(new Set(f.versions), new Set(['1.1']));
      assert.equal(f.connections, 5);
    }));

  test('an abort ends its stream, not the connection', () =>
    withFront(front('h2'), async (f) => {
      const provider = adapter(f.base);
      const ac = new AbortController();
      // Held after its first delta until the test has seen the abort: it is mid-stream when the abort comes.
      const gate = gateName();
      const session = provider.startSession({ ...request({ reply: REPLY, deltas: 40, gate, gateAfter: 1 }), signal: ac.signal });
      const err = await failure(session, () => ac.abort());
      assert.equal(err.name, 'AbortError');
      sim.openGate(gate);
      const next = await collect(provider.startSession(slow(2, 100)));
      assert.equal(next.text, REPLY);
      assert.equal(f.connections, 1);
      // Frames on one connection arrive in order: the reset came before the next stream's request.
      assert.equal(f.cutShort, 1, 'the server saw the aborted stream end early');
    }));

  test('an abort while the connection is still being made sends nothing and keeps the connection', () =>
    withFront(front('h2'), async (f) => {
      const providerFetch = createProviderFetch({ timeoutMs: 10_000, ca: tls.cert, http2: true });
      const ac = new AbortController();
      // The fetch is waiting for TLS and the server's SETTINGS when the abort comes.
      const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: `Hi\nSIM ${JSON.stringify({ deltas: 40, rate: 10 })}` }] });
      const pending = providerFetch(`${f.base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: ac.signal });
      ac.abort();
      await assert.rejects(pending, { name: 'AbortError' });
      const next = await collect(httpsAdapter(f.base, tls.cert, { fetch: providerFetch }).startSession(slow(2, 100)));
      assert.equal(next.text, REPLY);
      assert.deepEqual([f.versions.length, f.cutShort], [1, 0], 'the server saw only the next call');
      assert.equal(f.connections, 1, 'the next call used the connection the aborted one had opened');
    }));

  // The bound only turns a regression (a call that never settles) into a failure instead of a hung run.
  test('an origin that closes the connection before its SETTINGS fails the call, and the next one, at once', { timeout: 60_000 }, async () => {
    // h2c with prior knowledge, so the close comes straight after the connect, with no TLS and no error.
    // (It reads what it is sent, so that it sees the client's end and the connection closes.)
    const closer = net.createServer((socket) => socket.resume().end());
    await new Promise<void>((r) => closer.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(closer.address() as AddressInfo).port}`;
    try {
      // A timeout far beyond the test's: only the close can end these calls.
      const providerFetch = createProviderFetch({ timeoutMs: 600_000, h2cOrigins: [origin] });
      const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
      for (let i = 0; i < 2; i++) {
        await assert.rejects(providerFetch(`${origin}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }), (err: unknown) => {
          assert.match(String((err as Error).message) + String((err as { cause?: Error }).cause?.message ?? ''), /closed the connection before its HTTP\/2 settings/);
          return true;
        });
      }
    } finally {
      await new Promise((r) => closer.close(r));
    }
  });

  test('a whole body is read whole up to MAX_WHOLE_BODY_BYTES, and refused past it (h2c)', async () => {
    const server = http2.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      writeMegabytes(res, Number(new URL(req.url, 'http://h').searchParams.get('mb')));
    });
    server.on('error', () => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const providerFetch = createProviderFetch({ timeoutMs: 60_000, h2cOrigins: [origin] });
      const small = await providerFetch(`${origin}/?mb=3`);
      assert.equal((await small.text()).length, 3 * 1024 * 1024, 'every byte of a body under the cap');
      const huge = await providerFetch(`${origin}/?mb=${MAX_WHOLE_BODY_BYTES / 1024 / 1024 + 8}`);
      await assert.rejects(huge.text(), BodyTooLargeError);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  test('a stream the server resets fails the round; a server that stops answering times out', () =>
    withFront(front('h2'), async (f) => {
      const provider = adapter(f.base, 1000);
      // Reset after the delta went out, so the round fails mid-stream rather than before its headers.
      f.intercept = oneDelta((res) => res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
      const cut = await failure(provider.startSession(request({})));
      assert.match(cut.message, /^provider_c stream interrupted: .*NGHTTP2_INTERNAL_ERROR/);

      f.intercept = () => true; // headers never come
      const silent = await failure(provider.startSession(request({})));
      assert.equal(silent.message, 'provider_c request timed out');

      f.intercept = oneDelta(() => {}); // then nothing more
      let text = '';
      const stalled = await failure(provider.startSession(request({})), () => (text = 'Hal'));
      assert.equal(text, 'Hal');
      assert.equal(stalled.message, 'provider_c request timed out');
    }));

  test('a stream the server refuses unprocessed is sent again; one refused every time fails after five retries', () =>
    withFront(front('h2'), async (f) => {
      const provider = adapter(f.base);
      const refuse = (res: Http2ServerResponse) => {
        res.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return true;
      };
      let refusals = 2;
      f.intercept = (_req, res) => refusals-- > 0 && refuse(res);
      const r = await collect(provider.startSession(slow(3, 100)));
      assert.equal(r.text, REPLY);
      assert.equal(f.versions.length, 3, 'two refusals, then the stream the server took');

      f.intercept = (_req, res) => refuse(res);
      const err = await failure(provider.startSession(slow(3, 100)));
      assert.match(err.message, /^provider_c connection failed: .*NGHTTP2_REFUSED_STREAM/);
      assert.equal(f.versions.length, 3 + 6);
    }));

  test("the simulator's TLS mode (the bench's HTTP/2 rows) speaks HTTP/2 or HTTP/1.1 as the client offers", async () => {
    const secure = await startSimulator({ tls });
    try {
      assert.match(secure.urls.provider_c, /^https:/);
      for (const http2 of [true, false]) {
        secure.clearRequests();
        const r = await collect(adapter(secure.urls.provider_c, 10_000, http2).startSession(slow(3, 100)));
        assert.equal(r.text, REPLY);
        assert.equal(secure.requests[0]!.httpVersion, http2 ? '2.0' : '1.1');
      }
    } finally {
      await secure.close();
    }
  });
});
