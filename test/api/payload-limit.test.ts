// The spec's 32 MB limit on "request body of chat completion and direct message payloads", on each of
// them: a declared content-length over it is refused with 413 before a byte of the body is read, a body
// that really is over it (sent chunked, so no length tells in advance) is refused as it arrives, and a
// body of exactly 32 MB is served. The bodies are small JSON padded with whitespace to size, so
// the accepted ones store and forward nothing big.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rawExchange, type RawResult } from '../helpers/raw-http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { storedRows } from '../helpers/store.ts';

const LIMIT = 32 * 1024 * 1024;
const TOO_LARGE = 'request body is larger than the 32 MB limit';

/** `json` followed by whitespace up to `bytes` bytes: still one valid JSON document. */
function padded(json: unknown, bytes: number): Buffer {
  const head = Buffer.from(JSON.stringify(json));
  const buf = Buffer.alloc(bytes, 0x20);
  head.copy(buf);
  return buf;
}

const head = (path: string, framing: string) => `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${framing}\r\n\r\n`;

/** The body in two chunks of chunked transfer encoding: the server learns its size only by reading it. */
function chunked(path: string, body: Buffer): Buffer {
  const half = body.length >> 1;
  const chunk = (b: Buffer) => [Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')];
  return Buffer.concat([Buffer.from(head(path, 'transfer-encoding: chunked')), ...chunk(body.subarray(0, half)), ...chunk(body.subarray(half)), Buffer.from('0\r\n\r\n')]);
}

describe('the 32 MB limit on completion and message payloads', () => {
  let t: TestServer;
  /** The chat direct messages go to. */
  let chat: { id: string };
  const stored = () => storedRows(t.server.ctx.pool);
  before(async () => {
    t = await startTestServer();
    chat = (await t.call('POST', '/v1/chats', { title: 'payloads' })).body.chat;
  });
  after(() => t.close());

  const completion = { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'hi' }] };
  const targets = [
    { path: '/v1/chat-completions', json: completion, served: (r: RawResult) => assert.equal(JSON.parse(r.body).message.content, 'Simulated reply to: hi') },
    { path: '/v1/chat-completions/stream', json: completion, served: (r: RawResult) => assert.match(r.body, /event: done\ndata: \{"type":"done","text":"Simulated reply to: hi"/) },
    { path: '/v1/chats/:chatId/messages', json: { role: 'user', content: 'hi' }, served: (r: RawResult) => assert.equal(JSON.parse(r.body).message.content, 'hi') },
  ];

  for (const target of targets) {
    describe(`POST ${target.path}`, () => {
      const path = () => target.path.replace(':chatId', chat.id);

      it('a declared content-length over 32 MB is refused with 413 before the body is sent', async () => {
        // Only the head goes out: an answer proves the server did not wait for the body.
        const r = await rawExchange(t.server.port, head(path(), `content-length: ${LIMIT + 1}`), 30_000);
        assert.equal(r.timedOut, false, 'the server answered without the body');
        assert.equal(r.status, 413, r.head);
        assert.deepEqual(JSON.parse(r.body), { message: TOO_LARGE });
      });

      it('a body of exactly 32 MB is served; one byte more, sent chunked, is refused with 413', async () => {
        const before = await stored();
        const body = padded(target.json, LIMIT);
        const ok = await rawExchange(t.server.port, Buffer.concat([Buffer.from(head(path(), `content-length: ${LIMIT}`)), body]), 120_000);
        assert.equal(ok.status, 200, `${ok.head}\n${ok.body.slice(0, 300)}`);
        target.served(ok);
        const kept = await stored();
        // A completion without a chat stores its LlmCall; a message, the message.
        assert.ok(kept.messages + kept.calls > before.messages + before.calls, 'the accepted payload was stored');
        t.sim.clearRequests();
        const over = await rawExchange(t.server.port, chunked(path(), padded(target.json, LIMIT + 1)), 120_000);
        assert.equal(over.status, 413, over.head);
        assert.deepEqual(JSON.parse(over.body), { message: TOO_LARGE });
        assert.deepEqual(await stored(), kept, 'nothing of the refused payload was stored');
        assert.equal(t.sim.requests.length, 0, 'no provider was asked');
      });
    });
  }
});
