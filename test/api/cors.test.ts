// CORS (CORS_ORIGINS), over real HTTP: a preflight from an allowed origin is answered without a
// token; every response to an allowed origin (JSON, errors, 401s, SSE streams) carries
// Access-Control-Allow-Origin and Vary; a disallowed origin never gets Access-Control-Allow-Origin;
// with CORS_ORIGINS unset there are no CORS headers at all. Also HEAD, answered by the same router.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/base/config.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const APP = 'https://app.example.com';
const OTHER = 'https://evil.example.net';
const TOKEN = 'cors-test-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const streamBody = { provider: 'provider_c', model: 'sim-c-large', persist: false, messages: [{ role: 'user', content: 'SIM {"reply":"hi there"}' }] };

function preflight(url: string, origin: string, method = 'POST') {
  return fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
  });
}

function assertAllowed(headers: Headers, origin: string, what: string) {
  assert.equal(headers.get('access-control-allow-origin'), origin, `${what}: Access-Control-Allow-Origin`);
  assert.match(headers.get('vary') ?? '', /\bOrigin\b/, `${what}: Vary: Origin`);
  const exposed = (headers.get('access-control-expose-headers') ?? '').toLowerCase();
  assert.match(exposed, /\bretry-after\b/, `${what}: exposes Retry-After`);
  assert.match(exposed, /\bidempotent-replayed\b/, `${what}: exposes Idempotent-Replayed`);
}

describe('CORS with a list of origins and token mode', () => {
  let sim: SimHandle;
  let t: TestServer;
  before(async () => {
    sim = await startSimulator();
    t = await startTestServer({ sim, env: { CORS_ORIGINS: `${APP}, http://localhost:5173`, ADMIN_TOKEN: TOKEN } });
  });
  after(async () => {
    await t.close();
    await sim.close();
  });

  it('answers a preflight from an allowed origin with 204 and no token, at the root and under /api', async () => {
    for (const path of ['/v1/chat-completions/stream', '/api/v1/chats/abc/stream/attach', '/v1/chats/abc']) {
      const res = await preflight(t.url + path, APP, path.endsWith('abc') ? 'PATCH' : 'POST');
      assert.equal(res.status, 204, path);
      assert.equal(await res.text(), '');
      assert.equal(res.headers.get('access-control-allow-origin'), APP);
      assert.match(res.headers.get('vary') ?? '', /\bOrigin\b/);
      const methods = res.headers.get('access-control-allow-methods') ?? '';
      for (const m of ['GET', 'POST', 'PATCH', 'DELETE']) assert.match(methods, new RegExp(`\\b${m}\\b`), `allows ${m}`);
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      for (const h of ['authorization', 'content-type', 'idempotency-key']) assert.match(allowed, new RegExp(`\\b${h}\\b`), `allows ${h}`);
      assert.ok(Number(res.headers.get('access-control-max-age')) > 0, 'a max-age');
    }
    const second = await preflight(`${t.url}/v1/models`, 'http://localhost:5173', 'GET');
    assert.equal(second.status, 204);
    assert.equal(second.headers.get('access-control-allow-origin'), 'http://localhost:5173', 'each listed origin is echoed');
  });

  it('gives a disallowed origin no Access-Control-Allow-Origin, on preflights and responses', async () => {
    const pre = await preflight(`${t.url}/v1/chat-completions/stream`, OTHER);
    assert.notEqual(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), null);
    assert.equal(pre.headers.get('access-control-allow-methods'), null);
    const res = await t.call('GET', '/v1/chats', undefined, { ...auth, origin: OTHER });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.match(res.headers.get('vary') ?? '', /\bOrigin\b/, 'still Vary: a cache must not serve it to an allowed origin');
    // An origin is compared whole: a prefix or another port is another origin.
    const near = await t.call('GET', '/v1/chats', undefined, { ...auth, origin: `${APP}:8443` });
    assert.equal(near.headers.get('access-control-allow-origin'), null);
  });

  it('puts the CORS headers on JSON answers, errors and 401s for an allowed origin', async () => {
    const ok = await t.call('GET', '/v1/chats', undefined, { ...auth, origin: APP });
    assert.equal(ok.status, 200);
    assertAllowed(ok.headers, APP, 'GET 200');

    const unauthorized = await t.call('GET', '/v1/chats', undefined, { origin: APP });
    assert.equal(unauthorized.status, 401);
    assertAllowed(unauthorized.headers, APP, '401');
    assert.match((unauthorized.headers.get('access-control-expose-headers') ?? '').toLowerCase(), /www-authenticate/);

    const missing = await t.call('GET', '/api/v1/chats/nope', undefined, { ...auth, origin: APP });
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { message: 'chat not found' });
    assertAllowed(missing.headers, APP, '404');

    const invalid = await t.call('POST', '/v1/chats', { title: 5 }, { ...auth, origin: APP });
    assert.equal(invalid.status, 400);
    assertAllowed(invalid.headers, APP, '400');

    const wrongMethod = await t.call('PUT', '/v1/chats', undefined, { ...auth, origin: APP });
    assert.equal(wrongMethod.status, 405);
    assertAllowed(wrongMethod.headers, APP, '405');
  });

  it('puts them on an SSE stream, which then streams as usual', async () => {
    const r = await t.stream('/v1/chat-completions/stream', streamBody, { headers: { ...auth, origin: APP } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    assertAllowed(r.headers, APP, 'SSE');
    assert.equal(r.events[0]!.event, 'meta');
    assert.equal(r.events.at(-1)!.event, 'done');
    assert.equal(r.events.at(-1)!.data.text, 'hi there');

    const refused = await t.stream('/v1/chat-completions/stream', streamBody, { headers: { ...auth, origin: OTHER } });
    assert.equal(refused.status, 200, 'CORS is enforced by the browser: the server still answers');
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
  });
});

describe('CORS_ORIGINS=*', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ env: { CORS_ORIGINS: '*' } });
  });
  after(() => t.close());

  it('allows any origin, echoing it', async () => {
    const pre = await preflight(`${t.url}/v1/searches`, OTHER);
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), OTHER);
    const res = await t.call('GET', '/health', undefined, { origin: 'http://127.0.0.1:3000' });
    assertAllowed(res.headers, 'http://127.0.0.1:3000', 'GET /health');
  });

  it('sends no Access-Control-Allow-Origin to a request without Origin (not a cross-origin call)', async () => {
    const res = await t.call('GET', '/health');
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});

describe('CORS_ORIGINS unset', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => t.close());

  it('sends no CORS headers and routes OPTIONS like any other method', async () => {
    const pre = await preflight(`${t.url}/v1/chats`, APP);
    assert.equal(pre.status, 405);
    const res = await t.call('GET', '/v1/chats', undefined, { origin: APP });
    assert.equal(res.status, 200);
    for (const h of ['access-control-allow-origin', 'access-control-expose-headers', 'vary']) assert.equal(res.headers.get(h), null, h);
  });

  it('answers HEAD where GET exists, with the GET headers and no body', async () => {
    for (const path of ['/health', '/api/health', '/v1/chats']) {
      const res = await fetch(t.url + path, { method: 'HEAD' });
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(await res.text(), '');
    }
    const post = await fetch(`${t.url}/v1/chat-completions`, { method: 'HEAD' });
    assert.equal(post.status, 405, 'no GET route there');
  });
});

describe('CORS_ORIGINS validation', () => {
  it('accepts origins (a trailing slash is dropped) or *', () => {
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:5173/' }).CORS_ORIGINS, ['https://a.example', 'http://localhost:5173']);
    assert.equal(loadConfig({ CORS_ORIGINS: '*' }).CORS_ORIGINS, '*');
    assert.equal(loadConfig({}).CORS_ORIGINS, undefined);
  });

  it('refuses what is not an origin, naming the variable and the value', () => {
    for (const bad of ['https://a.example/app', 'a.example', 'https://a.example, *', ',']) {
      assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), (err: Error) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /CORS_ORIGINS: must be \* or comma-separated origins/);
        return true;
      }, bad);
    }
  });
});
