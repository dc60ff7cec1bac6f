// A provider that misbehaves in ways the simulator does not: each run ends with a stored error and a
// terminal `error` event in the provider's own words, and the server goes on. provider_c is pointed at a
// small fake Chat Completions server whose answer the last user message picks.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';

type Answer = (res: ServerResponse, body: any) => void;

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** PROVIDER_TIMEOUT_MS of the server under test (its smallest allowed value). */
const TIMEOUT_MS = 1000;

const ANSWERS: Record<string, Answer> = {
  hello: (res, body) => {
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(chunk({ role: 'assistant', content: 'Hello.' }) + chunk({}, 'stop') + 'data: [DONE]\n\n');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }] }));
    }
  },
  // A gateway's failure with status 200.
  'error body': (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'upstream model overloaded', type: 'server_error' } }));
  },
  // A model that has died behind a front end that keeps the stream alive: bytes, but never data.
  'keep-alives': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: 'Thinking' }));
    const timer = setInterval(() => res.write(': keep-alive\n\n'), TIMEOUT_MS / 10);
    res.on('close', () => clearInterval(timer));
  },
};

/** The last user message's text: the key of its answer in ANSWERS. */
const lastUser = (body: any): string => [...(body?.messages ?? [])].reverse().find((m: any) => m.role === 'user')?.content ?? '';

async function fakeProvider(): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : null;
      const answer = ANSWERS[lastUser(body)];
      if (answer) return answer(res, body);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no answer for ${req.url}` } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

describe('provider faults', () => {
  let t: TestServer;
  let provider: Server;
  before(async () => {
    const fake = await fakeProvider();
    provider = fake.server;
    t = await startTestServer({ actorThreads: 1, env: { PROVIDER_C_BASE_URL: fake.url, PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS) } });
  });
  after(async () => {
    await t.close();
    provider.closeAllConnections();
    await new Promise((r) => provider.close(r));
  });

  const ask = (content: string, chatId?: string) => ({ provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content }], ...(chatId && { chatId }) });

  /** The chat's LlmCalls and stored messages. */
  const stored = async (chatId: string) => {
    const { pool } = t.server.ctx;
    const calls = await pool.query('SELECT status, error FROM llm_calls WHERE chat_id = $1', [chatId]);
    const messages = await pool.query('SELECT role FROM messages WHERE chat_id = $1 ORDER BY seq', [chatId]);
    return { calls: calls.rows, roles: messages.rows.map((r) => r.role) };
  };

  const ERROR = 'provider_c response error (server_error): upstream model overloaded';

  it('a 200 with an error body fails a whole completion with 502 and the provider’s message, storing no answer', async () => {
    const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
    const r = await t.call('POST', '/v1/chat-completions', ask('error body', chat.id));
    assert.equal(r.status, 502);
    assert.equal(r.body.message, ERROR);
    const { calls, roles } = await stored(chat.id);
    assert.deepEqual(calls, [{ status: 'failed', error: ERROR }]);
    assert.ok(!roles.includes('assistant'), `no assistant message stored: ${roles}`);
  });

  it('a 200 with an error body ends a stream with error in the provider’s words', async () => {
    const r = await t.stream('/v1/chat-completions/stream', ask('error body'));
    const last = r.events.at(-1)!;
    assert.equal(last.event, 'error');
    assert.equal(last.data.message, ERROR);
    const { calls, roles } = await stored(r.events[0]!.data.chatId);
    assert.deepEqual(calls, [{ status: 'failed', error: ERROR }]);
    assert.ok(!roles.includes('assistant'), `no assistant message stored: ${roles}`);
  });

  it('a stream that sends only keep-alives ends with error at PROVIDER_TIMEOUT_MS, and frees its chat', async () => {
    const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
    const events: SseEvent[] = [];
    const streamed = t.stream('/v1/chat-completions/stream', ask('keep-alives', chat.id), { stopAfter: (ev) => (events.push(ev), false) });
    await waitFor(() => events.at(-1)?.event === 'error', 10 * TIMEOUT_MS, 'the stream to end with error');
    await streamed;
    const message = `provider_c sent no data for ${TIMEOUT_MS} ms`;
    assert.deepEqual(events.map((e) => e.event), ['meta', 'delta', 'error']);
    assert.equal(events.at(-1)!.data.message, message);
    const { calls } = await stored(chat.id);
    assert.deepEqual(calls, [{ status: 'failed', error: message }]);
    const next = await t.call('POST', '/v1/chat-completions', ask('hello', chat.id));
    assert.equal(next.status, 200, 'the chat is free for the next run');
    assert.equal(next.body.message.content, 'Hello.');
  });
});
