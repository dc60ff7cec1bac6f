// The provider fetch's HTTP/1.1 path (src/providers/http-fetch.ts: undici's dispatch handler API and a
// PushBody) against a local node:http server that counts its connections: connection reuse after a
// complete body and none after an abort or a cancel, error bodies, aborts before the headers and
// mid-body, a reset mid-body, the transport timeouts, and the abort listener's lifetime. Every
// verdict waits for an event (a callback, a socket's close), never for a stretch of time.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { test } from 'node:test';
import { OpenAI } from '../../src/providers/sdks.ts';
import { isAbortError, toProviderError } from '../../src/providers/errors.ts';
import { createProviderFetch } from '../../src/providers/http-fetch.ts';
import { BodyTooLargeError, MAX_WHOLE_BODY_BYTES, PushBody } from '../../src/providers/push-body.ts';
import { writeMegabytes } from './helpers.ts';

type Server = {
  base: string;
  /** Connections accepted so far. */
  connections: number;
  /** The socket each request came on, in order. */
  sockets: Socket[];
  /** Resolves once the next request has arrived. */
  nextRequest(): Promise<void>;
  close(): Promise<void>;
};

/** A server whose `handle` answers each request; an unanswered request is held open. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  const waiting: Array<() => void> = [];
  const server = createServer((req, res) => {
    s.sockets.push(req.socket);
    req.resume();
    req.on('end', () => {
      handle(req, res);
      waiting.shift()?.();
    });
  });
  const s: Server = {
    base: '',
    connections: 0,
    sockets: [],
    nextRequest: () => new Promise((r) => waiting.push(r)),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  server.on('connection', () => s.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  s.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return s;
}

/** Resolves when the server's end of a connection has closed. */
const closed = (socket: Socket) => (socket.destroyed ? Promise.resolve() : new Promise((r) => socket.once('close', r)));

/**
 * undici hands a connection back to its pool in a microtask after the body ends (its `drain`); a
 * request sent in the same turn opens another connection (so did `request` with a Readable). The SDKs
 * always await more than that between two calls; a test waits for the next turn.
 */
const nextTurn = () => new Promise((r) => setImmediate(r));

const fetch10s = createProviderFetch({ timeoutMs: 10_000 });

/** Subscribes to a PushBody; resolves with its chunks as text, rejects with its error. */
function readAll(body: PushBody, onChunk?: (text: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    body.subscribe(
      (b) => {
        const t = Buffer.from(b).toString();
        text += t;
        onChunk?.(t);
      },
      () => resolve(text),
      reject,
    );
  });
}

test('the HTTP/1.1 body is a PushBody; a complete body lets the next request reuse the connection', { timeout: 15_000 }, async () => {
  const server = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-seq': ['1', '2'] });
    res.write('data: 1\n\n');
    res.end('data: 2\n\n');
  });
  try {
    const first = await fetch10s(`${server.base}/v1/chat/completions?x=1`, { method: 'POST', body: '{}' });
    assert.equal(first.status, 200);
    assert.equal(first.ok, true);
    assert.equal(first.headers.get('content-type'), 'text/event-stream');
    assert.equal(first.headers.get('x-seq'), '1, 2');
    assert.ok(first.body instanceof PushBody);
    assert.equal(await readAll(first.body), 'data: 1\n\ndata: 2\n\n');
    await nextTurn();
    const second = await fetch10s(`${server.base}/v1/chat/completions`, { method: 'POST', body: '{}' });
    assert.equal(await second.text(), 'data: 1\n\ndata: 2\n\n');
    assert.equal(server.sockets[1], server.sockets[0]);
    assert.equal(server.connections, 1);
  } finally {
    await server.close();
  }
});

test('an error body reads with text() and json(), and the SDK throws its typed error from it', { timeout: 15_000 }, async () => {
  const server = await serve((_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
  });
  try {
    const res = await fetch10s(`${server.base}/v1/models`);
    assert.equal(res.status, 401);
    assert.equal(res.ok, false);
    assert.deepEqual(await res.json(), { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    assert.equal(res.bodyUsed, true);
    await nextTurn();
    const again = await fetch10s(`${server.base}/v1/models`);
    assert.match(await again.text(), /Incorrect API key/);
    await nextTurn();

    const client = new OpenAI({ apiKey: 'k', baseURL: `${server.base}/v1`, maxRetries: 0, fetch: fetch10s });
    const err = await client.chat.completions.create({ model: 'm', messages: [], stream: true }).asResponse().then(
      () => assert.fail('expected a 401'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.AuthenticationError);
    assert.equal(toProviderError('provider_c', err).message, 'provider_c error 401: Incorrect API key provided');
    assert.equal(server.connections, 1); // every error body was read to its end
  } finally {
    await server.close();
  }
});

test('an abort before the headers rejects the fetch with an AbortError and closes the connection', { timeout: 15_000 }, async () => {
  const server = await serve(() => {}); // never answers
  try {
    const ac = new AbortController();
    const arrived = server.nextRequest();
    const pending = fetch10s(`${server.base}/slow`, { method: 'POST', body: '{}', signal: ac.signal });
    await arrived;
    ac.abort();
    await assert.rejects(pending, (err: unknown) => isAbortError(err));
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
    await closed(server.sockets[0]!);

    // Already aborted: no request at all.
    await assert.rejects(fetch10s(`${server.base}/slow`, { signal: ac.signal }), (err: unknown) => isAbortError(err));
    assert.equal(server.sockets.length, 1);
  } finally {
    await server.close();
  }
});

/** `/held` sends one event and holds the rest; any other path gets a whole body. */
function heldOrDone(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (req.url === '/held') res.write('data: 1\n\n');
  else res.end('data: done\n\n');
}

/** The first request's connection closes, and the next request comes on another one. */
async function nextOnAnotherConnection(server: Server): Promise<void> {
  await closed(server.sockets[0]!);
  assert.equal(await (await fetch10s(`${server.base}/next`)).text(), 'data: done\n\n');
  assert.notEqual(server.sockets[1], server.sockets[0]);
}

test('an abort mid-body fails the body with the AbortError; the connection is not reused', { timeout: 15_000 }, async () => {
  const server = await serve(heldOrDone);
  try {
    const ac = new AbortController();
    const res = await fetch10s(`${server.base}/held`, { method: 'POST', body: '{}', signal: ac.signal });
    const read = readAll(res.body as unknown as PushBody, () => ac.abort());
    await assert.rejects(read, (err: unknown) => isAbortError(err));
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
    await nextOnAnotherConnection(server);
  } finally {
    await server.close();
  }
});

test('a consumer that leaves early cancels the request; the connection is not reused', { timeout: 15_000 }, async () => {
  const server = await serve(heldOrDone);
  try {
    const res = await fetch10s(`${server.base}/held`);
    for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>) break;
    await nextOnAnotherConnection(server);
  } finally {
    await server.close();
  }
});

test('a server that resets mid-body fails the body as a cut stream', { timeout: 15_000 }, async () => {
  const server = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n', () => res.socket!.resetAndDestroy());
  });
  try {
    const ac = new AbortController();
    const res = await fetch10s(`${server.base}/reset`, { signal: ac.signal });
    const err = await readAll(res.body as unknown as PushBody).then(() => assert.fail('expected a failure'), (e: unknown) => e);
    assert.equal((err as { code?: string }).code, 'UND_ERR_SOCKET');
    const mapped = toProviderError('provider_c', err, ac.signal);
    assert.match(mapped.message, /^provider_c stream interrupted: /);
    assert.ok(!isAbortError(mapped));
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
  } finally {
    await server.close();
  }
});

test('the transport timeouts still apply: a stalled body and late headers read as timeouts', { timeout: 15_000 }, async () => {
  const server = await serve((req, res) => {
    if (req.url === '/stall') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    }
  });
  const quick = createProviderFetch({ timeoutMs: 300 });
  try {
    const res = await quick(`${server.base}/stall`);
    const body = await readAll(res.body as unknown as PushBody).then(() => assert.fail('expected a timeout'), (e: unknown) => e);
    assert.equal((body as { code?: string }).code, 'UND_ERR_BODY_TIMEOUT');
    assert.equal(toProviderError('provider_b', body).message, 'provider_b request timed out');

    const headers = await quick(`${server.base}/silent`).then(() => assert.fail('expected a timeout'), (e: unknown) => e);
    assert.equal((headers as { code?: string }).code, 'UND_ERR_HEADERS_TIMEOUT');
  } finally {
    await server.close();
  }
});

test('a body nobody reads yet is paused past the high-water mark and resumes when read', { timeout: 15_000 }, async () => {
  const total = 4 * 1024 * 1024;
  const piece = Buffer.alloc(64 * 1024, 'x');
  let blocked: () => void;
  const serverBlocked = new Promise<void>((r) => (blocked = r));
  const server = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    let sent = 0;
    const more = () => {
      while (sent < total) {
        sent += piece.length;
        if (!res.write(piece)) {
          blocked();
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    more();
  });
  try {
    const res = await fetch10s(`${server.base}/big`);
    await serverBlocked; // the client has stopped reading (or the socket buffers are full)
    assert.equal((await res.arrayBuffer()).byteLength, total);
  } finally {
    await server.close();
  }
});

test('a whole body past MAX_WHOLE_BODY_BYTES is refused and its transfer stopped, not held', { timeout: 30_000 }, async () => {
  const server = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    writeMegabytes(res, MAX_WHOLE_BODY_BYTES / (1024 * 1024) + 8);
  });
  try {
    const res = await fetch10s(`${server.base}/v1/chat/completions`, { method: 'POST', body: '{}' });
    await assert.rejects(res.text(), BodyTooLargeError);
    await closed(server.sockets[0]!);
  } finally {
    await server.close();
  }
});
