// Issue 16: twenty 30 MB bodies at once stalled the event loop for up to 2 s. Big bodies are now
// parsed and checked in the CPU pool: while twenty are in flight, /health keeps answering, and the
// answers are the same as on the fast path. No timing is asserted here (the machine is shared), and the
// bodies are 10 MB so the file stays well inside make test's limit on a loaded machine; the 30 MB
// figure (p99 of /health) came from bench/load/big-bodies.ts (in git at d8cf097).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OFFLOAD_BODY_BYTES } from '../../src/http/body-pool.ts';
import { bigCompletionBody } from '../helpers/big-body.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const BIG_BODY_COUNT = 20;

describe('big bodies off the event loop', () => {
  let t: TestServer;
  let offloadedBodies: () => number;
  before(async () => {
    t = await startTestServer();
    offloadedBodies = () => t.server.bodies.offloaded;
  });
  after(() => t.close());

  it(`/health answers while ${BIG_BODY_COUNT} bodies of 10 MB are parsed and checked`, { timeout: 300_000 }, async () => {
    const body = bigCompletionBody(7, 2); // temperature 7: refused once every attachment is checked
    assert.ok(body.length > 9 * 1024 * 1024);
    const before = offloadedBodies();
    let pending = BIG_BODY_COUNT;
    const big = Array.from({ length: BIG_BODY_COUNT }, async () => {
      try {
        const res = await fetch(`${t.url}/v1/chat-completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body as unknown as BodyInit });
        return { status: res.status, body: (await res.json()) as { message: string } };
      } finally {
        pending--;
      }
    });
    let healthWhileBusy = 0;
    const poll = (async () => {
      while (pending > 0) {
        const h = await t.call('GET', '/health');
        assert.equal(h.status, 200);
        if (pending > 0) healthWhileBusy++;
      }
    })();
    const results = await Promise.all(big);
    await poll;
    for (const r of results) {
      assert.equal(r.status, 400);
      assert.match(r.body.message, /^invalid request body: temperature/);
    }
    assert.equal(offloadedBodies() - before, BIG_BODY_COUNT, 'every big body went to the pool');
    assert.ok(healthWhileBusy >= 3, `/health answered ${healthWhileBusy} times while the bodies were in flight`);
  });

  it('a big valid body is stored as it came; bad text in it is named like on the fast path', { timeout: 120_000 }, async () => {
    const content = `${'é'.repeat(OFFLOAD_BODY_BYTES)}😀`;
    const before = offloadedBodies();
    const r = await t.call('POST', '/v1/chats', { messages: [{ role: 'user', content, attachments: [{ kind: 'text', filename: 'a', mimeType: 'text/plain', text: `${'a'.repeat(199_999)}😀` }] }] });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 200));
    const stored = (await t.call('GET', `/v1/chats/${r.body.chat.id}`)).body.chat.messages[0];
    assert.equal(stored.content, content);
    assert.equal(stored.metadata.attachments[0].text, 'a'.repeat(199_999));
    const bad = await t.call('POST', '/v1/chats', { messages: [{ role: 'user', content: `${content}\ud800` }] });
    assert.deepEqual([bad.status, bad.body.message], [400, 'invalid request body: messages[0].content: contains a lone UTF-16 surrogate (not valid Unicode)']);
    const malformed = await t.call('POST', '/v1/chats', `{"title":"${'t'.repeat(OFFLOAD_BODY_BYTES)}`);
    assert.equal(malformed.status, 400);
    assert.match(malformed.body.message, /^malformed JSON body: /);
    assert.equal(offloadedBodies() - before, 3);
    const small = offloadedBodies();
    assert.equal((await t.call('POST', '/v1/chats', { title: 'small' })).status, 200);
    assert.equal(offloadedBodies(), small, 'small bodies stay on the fast path');
  });
});
