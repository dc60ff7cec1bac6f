// The spec's attachment limits (Limits; Attachment; completion rule 6) on every endpoint that takes
// attachments: POST /v1/chats, POST /v1/chats/:id/messages, POST /v1/chat-completions and its stream.
// An image is PNG or JPEG of at most 6 MB, a text source at most 8 MB (in bytes, not characters), at most
// 8 per message, and `dataUrl` holds real base64. Each refusal is a 400 whose message names the field and
// the rule, before anything is stored or any provider is asked; each limit itself is accepted, so a cap
// set too low fails here as surely as one set too high.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_IMAGE_BYTES, MAX_TEXT_SOURCE_BYTES } from '../../src/base/attachments.ts';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';
import { storedRows } from '../helpers/store.ts';

const MB = 1024 * 1024;
/** The spec's figures, written out: the constants are what is under test, not the source of truth. */
assert.equal(MAX_IMAGE_BYTES, 6 * MB);
assert.equal(MAX_TEXT_SOURCE_BYTES, 8 * MB);

/** Base64 of a PNG of exactly `bytes` bytes (the signature, then zeros: the service sniffs the head). */
function pngBase64(bytes: number): string {
  const buf = Buffer.alloc(bytes);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(buf);
  return buf.toString('base64');
}
const SMALL_PNG = pngBase64(70);
const image = (b64 = SMALL_PNG, over: Record<string, unknown> = {}) => ({ kind: 'image', filename: 'a.png', mimeType: 'image/png', dataUrl: `data:image/png;base64,${b64}`, ...over });
const text = (body: string) => ({ kind: 'text', filename: 'a.txt', mimeType: 'text/plain', text: body });

interface Sent {
  status: number;
  body: any;
}

/** One endpoint that takes attachments on a user message. */
interface Target {
  name: string;
  /** Where the message's attachments sit in the body, as the service names fields. */
  field: string;
  send(attachments: unknown[], content?: string): Promise<Sent>;
}

describe('attachment rules on every endpoint that takes attachments', () => {
  let t: TestServer;
  let chatId: string;
  const stored = () => storedRows(t.server.ctx.pool);
  before(async () => {
    t = await startTestServer();
    chatId = (await t.call('POST', '/v1/chats', {})).body.chat.id;
  });
  after(() => t.close());

  const completion = (attachments: unknown[], content: string) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content, attachments }] });
  const targets: Target[] = [
    { name: 'POST /v1/chats', field: 'messages[0].attachments', send: (a, content = 'hi') => t.call('POST', '/v1/chats', { messages: [{ role: 'user', content, attachments: a }] }) },
    { name: 'POST /v1/chats/:chatId/messages', field: 'attachments', send: (a, content = 'hi') => t.call('POST', `/v1/chats/${chatId}/messages`, { role: 'user', content, attachments: a }) },
    { name: 'POST /v1/chat-completions', field: 'messages[0].attachments', send: (a, content = 'hi') => t.call('POST', '/v1/chat-completions', completion(a, content)) },
    {
      name: 'POST /v1/chat-completions/stream',
      field: 'messages[0].attachments',
      async send(a, content = 'hi') {
        const r = await t.stream('/v1/chat-completions/stream', completion(a, content));
        if (r.status !== 200) {
          assert.equal(r.events.length, 0, 'a refusal comes before the stream opens');
          return { status: r.status, body: r.body };
        }
        const end = r.events.at(-1)!;
        assert.equal(end.event, 'done', JSON.stringify(end.data));
        return { status: r.status, body: { message: { role: 'assistant', content: end.data.text } } };
      },
    },
  ];

  /**
   * What the service kept of the message's attachments: the stored ones (sizeBytes, truncated) for the
   * storing endpoints, what the provider received for the completions (their `echoInput` answer).
   */
  async function kept(target: Target, r: Sent): Promise<Array<{ kind: string; bytes: number; truncated?: boolean }>> {
    if (target.name.includes('completions')) {
      const seen = JSON.parse(r.body.message.content) as { parts: string[]; attachments: Array<{ type: string; bytes: number }> };
      // Text attachments arrive as extra text parts (explicit blocks), images as image parts.
      const texts = seen.parts.slice(1).filter((p) => p === 'text').map(() => ({ kind: 'text', bytes: -1 }));
      return [...seen.attachments.map((a) => ({ kind: a.type === 'image_url' ? 'image' : a.type, bytes: a.bytes })), ...texts];
    }
    const message = target.name === 'POST /v1/chats' ? (await t.call('GET', `/v1/chats/${r.body.chat.id}`)).body.chat.messages[0] : r.body.message;
    return message.metadata.attachments.map((a: any) => ({ kind: a.kind, bytes: a.sizeBytes, ...(a.kind === 'text' ? { truncated: a.truncated } : {}) }));
  }

  /** Sends, expects the 400 with `problem` on `field` of the target, and checks nothing was stored or asked. */
  async function refused(target: Target, attachments: unknown[], field: string, problem: string, label = '') {
    const before = await stored();
    t.sim.clearRequests();
    const r = await target.send(attachments);
    assert.equal(r.status, 400, `${target.name} ${label}: ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.equal(r.body.message, `invalid request body: ${target.field}${field}: ${problem}`, target.name);
    assert.deepEqual(await stored(), before, `${target.name}: nothing stored`);
    assert.equal(t.sim.requests.length, 0, `${target.name}: no provider asked`);
  }

  const echo = sim({ echoInput: true });

  for (const target of targets) {
    describe(target.name, () => {
      it('an image of exactly 6 MB is accepted; one byte more is refused naming the limit', async () => {
        const r = await target.send([image(pngBase64(6 * MB))], echo);
        assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
        assert.deepEqual(await kept(target, r), [{ kind: 'image', bytes: 6 * MB }]);
        await refused(target, [image(pngBase64(6 * MB + 1))], '[0].dataUrl', `image is ${6 * MB + 1} bytes, over the ${6 * MB} byte (6 MB) limit`);
      });

      it('a text attachment of exactly 8 MB is accepted (inlined up to 200,000 characters); a real one over 8 MB is refused', async () => {
        const r = await target.send([text('a'.repeat(8 * MB))], echo);
        assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
        const expected = target.name.includes('completions') ? [{ kind: 'text', bytes: -1 }] : [{ kind: 'text', bytes: 8 * MB, truncated: true }];
        assert.deepEqual(await kept(target, r), expected);
        await refused(target, [text('a'.repeat(8 * MB + 1))], '[0].sizeBytes', `text attachment source is ${8 * MB + 1} bytes, over the 8 MB limit`);
        // The source size is counted in bytes: half as many two-byte characters are just as much.
        const twoByte = 'é'.repeat(4 * MB + 1);
        await refused(target, [text(twoByte)], '[0].sizeBytes', `text attachment source is ${8 * MB + 2} bytes, over the 8 MB limit`);
      });

      it('a dataUrl whose payload is not base64 is refused', async () => {
        const unpadded = SMALL_PNG.replace(/=+$/, '');
        for (const b64 of [
          `${SMALL_PNG.slice(0, 20)}!${SMALL_PNG.slice(21)}`, // a character outside the alphabet
          `${SMALL_PNG.slice(0, 20)} ${SMALL_PNG.slice(20)}`, // whitespace inside
          `${SMALL_PNG.slice(0, 20)}=${SMALL_PNG.slice(20)}`, // padding in the middle
          `${unpadded}${'A'.repeat((5 - (unpadded.length % 4)) % 4)}`, // one character past a whole group: no byte ends there
          `${SMALL_PNG.slice(0, 20)}A=`, // padding that does not close a 4-character group
        ]) {
          await refused(target, [image(b64)], '[0].dataUrl', 'dataUrl is not valid base64', b64.slice(-8));
        }
      });

      it('only PNG and JPEG, at most 8 per message', async () => {
        await refused(target, [image(SMALL_PNG, { mimeType: 'image/gif' })], '[0].mimeType', 'image mimeType must be image/png or image/jpeg (got image/gif)');
        await refused(target, Array.from({ length: 9 }, () => image()), '', 'at most 8 attachments per message');
        const r = await target.send(Array.from({ length: 8 }, () => image()), echo);
        assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
        assert.deepEqual(await kept(target, r), Array(8).fill({ kind: 'image', bytes: 70 }));
      });
    });
  }

  it('attachments belong to user messages: refused on a tool message, and on any non-user completion message', async () => {
    const before = await stored();
    const tool = await t.call('POST', `/v1/chats/${chatId}/messages`, { role: 'tool', content: 'out', attachments: [image()] });
    assert.deepEqual([tool.status, tool.body.message], [400, 'invalid request body: attachments: tool messages cannot carry attachments']);
    for (const path of ['/v1/chat-completions', '/v1/chat-completions/stream']) {
      for (const role of ['assistant', 'system', 'tool']) {
        const body = { provider: 'provider_c', model: 'm', messages: [{ role, content: 'x', attachments: [image()] }, { role: 'user', content: 'hi' }] };
        const r = await t.call('POST', path, body);
        assert.deepEqual([r.status, r.body.message], [400, 'invalid request body: messages[0].attachments: attachments are only allowed on user messages'], `${path} ${role}`);
      }
    }
    assert.deepEqual(await stored(), before);
  });

  it('POST /v1/chats/:chatId/messages merges attachments into the stored metadata.attachments', async () => {
    const earlier = { kind: 'text', id: 'kept', filename: 'old.txt', mimeType: 'text/plain', sizeBytes: 3, text: 'old', truncated: false };
    const r = await t.call('POST', `/v1/chats/${chatId}/messages`, { role: 'user', content: 'hi', metadata: { note: 1, attachments: [earlier] }, attachments: [text('new')] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const saved = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat.messages.find((m: any) => m.id === r.body.message.id);
    assert.equal(saved.metadata.note, 1);
    assert.deepEqual(saved.metadata.attachments.map((a: any) => [a.filename, a.text]), [['old.txt', 'old'], ['a.txt', 'new']]);
  });
});
