// GET / serves the bundled web client: public even in token mode, at the root and under /api/,
// the page revalidated on each load, its assets under a content-hash path with long caching, and
// every module the page imports is there.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { NODE_MODULES, VENDOR, WEB_DIR } from '../../src/routes/web.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('web client serving', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { ADMIN_TOKEN: 'web-test-token' } });
  });
  after(() => server?.close());

  const get = (path: string) => fetch(server.url + path);

  it('serves the page at / and /api/ without a token, uncached, with a strict CSP', async () => {
    for (const path of ['/', '/api/', '/api']) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
      assert.match(await res.text(), /<script type="module" src="assets\/[0-9a-f]{12}\/app\.js">/);
    }
    // The API itself still wants the token.
    assert.equal((await get('/v1/chats')).status, 401);
  });

  it('serves every asset the page and its modules name, with its content type and long caching', async () => {
    const page = await (await get('/')).text();
    const version = /assets\/([0-9a-f]{12})\//.exec(page)![1]!;
    const named = new Set([...page.matchAll(/"assets\/[0-9a-f]{12}\/([^"]+)"/g)].map((m) => m[1]!));
    for (const file of readdirSync(WEB_DIR).filter((f) => f.endsWith('.js'))) {
      for (const m of readFileSync(WEB_DIR + file, 'utf8').matchAll(/from '\.\/([^']+)'/g)) named.add(m[1]!);
    }
    assert.ok(named.has('app.js') && named.has('app.css') && named.has('sse.js'), [...named].join(', '));
    for (const name of named) {
      const res = await get(`/assets/${version}/${name}`);
      assert.equal(res.status, 200, name);
      assert.equal(res.headers.get('content-type'), name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      // A vendored library is its npm file less the trailing source-map comment.
      if (VENDOR[name]) assert.ok(readFileSync(NODE_MODULES + VENDOR[name], 'utf8').startsWith((await res.text()).trimEnd()), name);
      else assert.equal(await res.text(), readFileSync(WEB_DIR + name, 'utf8'));
    }
    const api = await get(`/api/assets/${version}/app.js`);
    assert.equal(api.status, 200);
  });

  it('serves an old version uncached and answers 404 for an unknown asset', async () => {
    const old = await get('/assets/000000000000/app.js');
    assert.equal(old.status, 200);
    assert.equal(old.headers.get('cache-control'), 'no-cache');
    const missing = await get('/assets/000000000000/nope.js');
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).message, 'no asset named nope.js');
    assert.equal((await get('/assets/000000000000/..%2Fpackage.json')).status, 404);
  });
});
