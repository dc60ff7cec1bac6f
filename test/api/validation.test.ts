// Bad input gets a clear 4xx with a message naming the problem, and stores nothing. Also: auth,
// the /api prefix, unknown routes and methods, body caps.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const JPEG_B64 = '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDA==';
const image = (over: Record<string, unknown> = {}) => ({ kind: 'image', filename: 'a.png', mimeType: 'image/png', sizeBytes: 70, dataUrl: `data:image/png;base64,${PNG_B64}`, ...over });
const user = (extra: Record<string, unknown> = {}) => ({ role: 'user', content: 'hi', ...extra });

describe('validation and limits', () => {
  let t: TestServer;
  let count: () => Promise<number>;
  before(async () => {
    t = await startTestServer();
    count = async () => {
      const r = await t.server.ctx.pool.query('SELECT (SELECT count(*) FROM chats) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM llm_calls) + (SELECT count(*) FROM searches) AS n');
      return Number(r.rows[0].n);
    };
  });
  after(() => t.close());

  const cases: Array<[string, string, string, unknown, number, RegExp]> = [
    ['malformed JSON', 'POST', '/v1/chats', '{"title":', 400, /malformed JSON body/],
    ['JSON that is not an object', 'POST', '/v1/chats', '[1,2]', 400, /must be a JSON object/],
    ['wrong type', 'POST', '/v1/chats', { title: 5 }, 400, /title: .*expected string/],
    ['unknown provider', 'POST', '/v1/chats', { provider: 'provider_z', model: 'm' }, 400, /provider: .*provider_a/],
    ['provider without model', 'POST', '/v1/chats', { provider: 'provider_a' }, 400, /provider and model must be supplied together/],
    ['model without provider', 'POST', '/v1/chats', { model: 'm' }, 400, /provider and model must be supplied together/],
    ['unknown role', 'POST', '/v1/chats', { messages: [{ role: 'robot', content: 'x' }] }, 400, /messages\[0\]\.role/],
    ['nine attachments', 'POST', '/v1/chats', { messages: [user({ attachments: Array.from({ length: 9 }, () => image()) })] }, 400, /at most 8 attachments/],
    ['gif image', 'POST', '/v1/chats', { messages: [user({ attachments: [image({ mimeType: 'image/gif' })] })] }, 400, /image\/png or image\/jpeg/],
    ['jpeg bytes declared png', 'POST', '/v1/chats', { messages: [user({ attachments: [image({ dataUrl: `data:image/png;base64,${JPEG_B64}` })] })] }, 400, /content is image\/jpeg but mimeType says image\/png/],
    ['text bytes declared png', 'POST', '/v1/chats', { messages: [user({ attachments: [image({ dataUrl: `data:image/png;base64,${Buffer.from('hello world, not an image').toString('base64')}` })] })] }, 400, /neither PNG nor JPEG/],
    ['not a data URL', 'POST', '/v1/chats', { messages: [user({ attachments: [image({ dataUrl: 'https://example.org/a.png' })] })] }, 400, /base64 data URL/],
    ['text attachment over 8 MB', 'POST', '/v1/chats', { messages: [user({ attachments: [{ kind: 'text', filename: 'a', mimeType: 'text/plain', sizeBytes: 9 * 1024 * 1024, text: 'x' }] })] }, 400, /over the 8 MB limit/],
    ['unknown attachment kind', 'POST', '/v1/chats', { messages: [user({ attachments: [{ kind: 'video', filename: 'a' }] })] }, 400, /attachments\[0\]/],
    ['blank chat title', 'PATCH', '/v1/chats/x', { title: '' }, 400, /title: must not be blank/],
    ['persist false with chatId', 'POST', '/v1/chat-completions/stream', { persist: false, chatId: 'x', provider: 'provider_c', model: 'm', messages: [user()] }, 400, /chatId must be omitted when persist is false/],
    ['completion without messages', 'POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', messages: [] }, 400, /messages: must contain at least one message/],
    ['completion without model', 'POST', '/v1/chat-completions', { provider: 'provider_c', messages: [user()] }, 400, /model/],
    ['attachment on an assistant message', 'POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', messages: [{ role: 'assistant', content: 'x', attachments: [image()] }] }, 400, /only allowed on user messages/],
    ['temperature out of range', 'POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', temperature: 7, messages: [user()] }, 400, /temperature/],
  ];

  for (const [name, method, path, body, status, message] of cases) {
    it(`${name} → ${status}, nothing stored`, async () => {
      const before = await count();
      const r = await t.call(method, path, body);
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.match(r.body.message, message);
      assert.equal(await count(), before);
    });
  }

  it('a large text attachment is cut at 200,000 characters with truncated set', async () => {
    const text = 'y'.repeat(250_000);
    const chat = (await t.call('POST', '/v1/chats', { messages: [user({ attachments: [{ kind: 'text', filename: 'big.txt', mimeType: 'text/plain', text }] })] })).body.chat;
    const a = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat.messages[0].metadata.attachments[0];
    assert.equal(a.text.length, 200_000);
    assert.equal(a.truncated, true);
    assert.equal(a.sizeBytes, 250_000);
  });

  it('415 for a body that is not JSON', async () => {
    const r = await t.call('POST', '/v1/chats', 'title=x', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(r.status, 415);
    assert.match(r.body.message, /content-type must be application\/json/);
  });

  it('413 before reading a body over the cap (1 MB here, 32 MB for completions)', async () => {
    const big = JSON.stringify({ title: 'x'.repeat(1_100_000) });
    const r = await t.call('POST', '/v1/searches', big);
    assert.equal(r.status, 413);
    assert.match(r.body.message, /larger than the 1 MB limit/);
    const ok = await t.call('POST', '/v1/chats', { messages: [user({ content: 'z'.repeat(1_100_000) })] });
    assert.equal(ok.status, 200, 'chat payloads take up to 32 MB');
    // A declared 40 MB body is refused from its header alone: the server answers before any byte of it.
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(t.server.port, '127.0.0.1');
      let got = '';
      sock.on('data', (d) => {
        got += d;
        if (got.includes('}')) {
          sock.destroy();
          resolve(got);
        }
      });
      sock.on('error', reject);
      sock.write(`POST /v1/chat-completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${40 * 1024 * 1024}\r\n\r\n`);
    });
    assert.match(raw, /^HTTP\/1\.1 413 /);
    assert.match(raw, /larger than the 32 MB limit/);
  });

  it('unknown routes 404 and wrong methods 405, at the root and under /api', async () => {
    const a = await t.call('GET', '/v1/nothing');
    assert.deepEqual([a.status, a.body.message], [404, 'no route for GET /v1/nothing']);
    const b = await t.call('PUT', '/api/v1/chats');
    assert.deepEqual([b.status, b.body.message], [405, 'method PUT is not allowed on /v1/chats']);
    assert.deepEqual(b.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD', 'POST'], 'the methods the path has');
    assert.deepEqual((await t.call('GET', '/api/health')).body, { ok: true });
    assert.equal((await t.call('GET', '/api/v1/chats')).status, 200);
  });

  it('session mode is open without ADMIN_TOKEN', async () => {
    assert.deepEqual((await t.call('GET', '/v1/auth/session')).body, { authenticated: true, mode: 'open' });
  });

  it('active runs are empty at rest; chat tools come from config', async () => {
    assert.deepEqual((await t.call('GET', '/v1/active-runs')).body, { chats: [], searches: [] });
    const tools = (await t.call('GET', '/v1/chat-tools')).body.tools;
    assert.deepEqual(tools.map((x: any) => x.name), ['web_search', 'fetch_url']);
    assert.ok(tools.every((x: any) => typeof x.description === 'string' && x.description.length > 20));
  });
});

describe('token mode', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ env: { ADMIN_TOKEN: 's3cret' } });
  });
  after(() => t.close());

  it('401 without or with a wrong token, on every route but /health, streams included', async () => {
    for (const [method, path] of [
      ['GET', '/v1/chats'],
      ['GET', '/v1/auth/session'],
      ['POST', '/v1/chat-completions/stream'],
      ['POST', '/v1/chats/x/stream/attach'],
      ['GET', '/v1/nothing'],
    ]) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 's3cret' }] as Record<string, string>[]) {
        const r = await t.call(method!, path!, undefined, headers);
        assert.deepEqual([r.status, r.body], [401, { message: 'unauthorized' }], `${method} ${path}`);
        assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      }
    }
    assert.equal((await t.call('GET', '/health')).status, 200);
  });

  it('the right token passes and the session reports token mode', async () => {
    const auth = { authorization: 'Bearer s3cret' };
    // `user` is additive (docs/operations.md, "Users and single sign-on"): the admin token is the built-in admin, users or not.
    assert.deepEqual((await t.call('GET', '/v1/auth/session', undefined, auth)).body, {
      authenticated: true,
      mode: 'token',
      user: { id: 'admin', name: 'admin', admin: true },
    });
    assert.equal((await t.call('GET', '/v1/chats', undefined, auth)).status, 200);
  });
});
