// The README's proxy configuration (deploy/nginx.conf), run as it is in front of a real server:
// requests the bundled uWebSockets.js 20.30 leaves unanswered (HTTP/1.0, no Host, `_`/`.` header
// names, unknown or lowercase methods, malformed request lines, very long URLs) all get an HTTP answer,
// and HTTP/1.0 and odd-header clients get whole SSE streams. Skipped, saying why, only when nginx is not
// installed (and cannot be); an installed nginx that does not start with deploy/nginx.conf fails it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureNginx, startNginxProxy, type Proxy } from '../helpers/nginx.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const streamBody = JSON.stringify({ persist: false, provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'hello there' }] });
const post = (version: string, path: string, body: string, extra = '') =>
  `POST ${path} HTTP/${version}\r\n${version === '1.1' ? 'Host: x\r\n' : ''}${extra}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

function sseEvents(body: string): string[] {
  // Whatever the transfer framing, event names are on their own lines.
  return [...body.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]!);
}

const skip = ensureNginx() ? false : 'nginx is not installed and apt-get could not install nginx-light';
if (skip) console.error(`[nginx] SKIPPED test/deploy/nginx.test.ts: ${skip}`);

describe('nginx in front (deploy/nginx.conf)', { skip }, () => {
  let t: TestServer;
  let proxy: Proxy | null = null;
  before(async () => {
    t = await startTestServer();
    // A start error (a broken deploy/nginx.conf) throws here and fails every test below.
    proxy = await startNginxProxy(t.server.port);
    if (!proxy) throw new Error('nginx was installed a moment ago and is gone');
  });
  after(async () => {
    await proxy?.stop();
    await t?.close();
  });

  const answered: Array<[string, string, number, RegExp?]> = [
    ['HTTP/1.0', 'GET /health HTTP/1.0\r\n\r\n', 200, /"ok":true/],
    ['HTTP/1.0 with Host', 'GET /api/health HTTP/1.0\r\nHost: x\r\n\r\n', 200, /"ok":true/],
    ['HTTP/1.1 without Host', 'GET /health HTTP/1.1\r\n\r\n', 400],
    ['a header name with _', 'GET /health HTTP/1.1\r\nHost: x\r\nX_Trace_Id: 1\r\nConnection: close\r\n\r\n', 200, /"ok":true/],
    ['a header name with .', 'GET /health HTTP/1.1\r\nHost: x\r\nX.Trace.Id: 1\r\nConnection: close\r\n\r\n', 200, /"ok":true/],
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400],
    ['a request line without version', 'GET /health x y\r\nHost: x\r\n\r\n', 400],
    ['an unknown HTTP version', 'GET /health HTTP/3.7\r\nHost: x\r\n\r\n', 505],
    ['PROPFIND', 'PROPFIND /v1/chats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 405, /method not allowed/],
    ['a lowercase method', 'get /health HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['a 20 KB URL', `GET /health?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 200, /"ok":true/],
    ['a 40 KB URL', `GET /health?${'a'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414],
    ['a 100 KB header', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(100_000)}\r\n\r\n`, 400],
    ['HTTP/1.0 JSON API call', post('1.0', '/v1/chats', '{"title":"via 1.0"}'), 200, /"title":"via 1.0"/],
    ['HTTP/1.0 bad input keeps its 400 message', post('1.0', '/v1/chats', '{"title":"\\u0000"}'), 400, /title: contains U\+0000/],
  ];

  for (const [name, request, status, body] of answered) {
    it(`${name} → ${status}`, async () => {
      const r = await rawExchange(proxy!.port, request, 10_000);
      assert.equal(r.status, status, `${name}: ${r.head.slice(0, 200)}`);
      assert.ok(r.complete, `${name}: incomplete response`);
      if (body) assert.match(r.body, body);
    });
  }

  it('an HTTP/1.0 client gets a whole chat stream, through done', async () => {
    const r = await rawExchange(proxy!.port, post('1.0', '/v1/chat-completions/stream', streamBody), 30_000);
    assert.equal(r.status, 200, r.head);
    assert.match(r.head, /content-type: text\/event-stream/i);
    assert.ok(r.complete && !r.timedOut);
    const events = sseEvents(r.body);
    assert.equal(events[0], 'meta');
    assert.ok(events.includes('delta'), events.join(','));
    assert.equal(events.at(-1), 'done');
  });

  it('an HTTP/1.1 client with odd header names gets a whole chat stream', async () => {
    const r = await rawExchange(proxy!.port, post('1.1', '/api/v1/chat-completions/stream', streamBody, 'X_Client: a\r\nX.Client: b\r\nConnection: close\r\n'), 30_000);
    assert.equal(r.status, 200, r.head);
    const events = sseEvents(r.body);
    assert.deepEqual([events[0], events.at(-1)], ['meta', 'done']);
  });
});
