// Faults end one run, never the server: a database fault mid-run and an actor host that dies.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readSse, sim, startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';
import { CHECKPOINTED_TEXT } from '../helpers/store.ts';
import { gateName } from '../helpers/wait.ts';

describe('faults', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ actorThreads: 1 });
  });
  after(() => t.close());

  const ask = (content: string, extra: Record<string, unknown> = {}) => ({
    provider: 'provider_c',
    model: 'm',
    enabledTools: [],
    messages: [{ role: 'user', content }],
    ...extra,
  });

  it('a database fault while storing the answer ends the run with error and a failed LlmCall', async () => {
    const pool = t.server.ctx.pool;
    const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
    // Held after its first delta until the table is gone, so the answer cannot be stored before.
    const gate = gateName();
    const res = await fetch(`${t.url}/v1/chat-completions/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask(sim({ deltas: 20, rate: 20, gate, gateAfter: 1 }), { chatId: chat.id })),
    });
    // Once the answer streams and the run has stored its input and LlmCall (the provider is called
    // alongside that write, so a delta can come first), take the messages table away from the run.
    let moved = false;
    let events: SseEvent[];
    try {
      events = await readSse(res, new AbortController(), undefined, async (ev) => {
        if (ev.event === 'delta' && !moved) {
          moved = true;
          await waitFor(async () => (await pool.query('SELECT 1 FROM llm_calls WHERE chat_id = $1', [chat.id])).rows.length === 1, 10_000, 'the LlmCall row');
          await pool.query('ALTER TABLE messages RENAME TO messages_away');
          t.sim.openGate(gate);
        }
      });
    } finally {
      if (moved) await pool.query('ALTER TABLE messages_away RENAME TO messages');
    }
    const names = events.map((e) => e.event);
    assert.equal(names[0], 'meta');
    assert.equal(names.at(-1), 'error');
    assert.ok(!names.includes('done'));
    const message = events.at(-1)!.data.message;
    assert.match(message, /messages/);
    const calls = await pool.query('SELECT status, error FROM llm_calls WHERE chat_id = $1', [chat.id]);
    assert.deepEqual(calls.rows.map((r) => r.status), ['failed']);
    assert.equal(calls.rows[0].error, message);
    const next = await t.call('POST', '/v1/chat-completions', ask('after the fault', { chatId: chat.id }));
    assert.equal(next.status, 200, 'the next run on the same chat works');
  });

  it('storage failing at the start aborts the provider call and ends the run with that error', async () => {
    const pool = t.server.ctx.pool;
    const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
    t.sim.clearRequests();
    await pool.query('ALTER TABLE llm_calls RENAME TO llm_calls_away');
    let r;
    try {
      // Held after its first delta at a gate nobody opens: only the storage error can end it.
      r = await t.stream('/v1/chat-completions/stream', ask(sim({ deltas: 40, rate: 20, gate: gateName(), gateAfter: 1 }), { chatId: chat.id }));
    } finally {
      await pool.query('ALTER TABLE llm_calls_away RENAME TO llm_calls');
    }
    const names = r.events.map((e) => e.event);
    assert.equal(names[0], 'meta');
    assert.equal(names.at(-1), 'error');
    assert.match(r.events.at(-1)!.data.message, /llm_calls/, 'the storage error, not a bare abort');
    assert.ok(names.filter((n) => n === 'delta').length < 40, 'the provider stream was cut short');
    const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
    assert.ok(!detail.messages.some((m: { role: string }) => m.role === 'assistant'));
  });

  it('an actor host that dies ends its runs with error; a new host takes the next runs', async () => {
    const { supervisor } = t.server.ctx;
    // An unknown run kind throws inside the worker's message handler: an uncaught error kills it.
    const started = supervisor.start({ kind: 'no_such_kind' as never, key: null, request: {} as never, ifRunning: 'reject', label: 'test' });
    assert.ok(started.ok, 'the run was placed on a host');
    const result = await started.handle.result;
    if (result.ok) assert.fail('expected the crash to fail the run');
    assert.match(result.message, /run host failed/);
    const ok = await t.call('POST', '/v1/chat-completions', ask(sim({ reply: 'still here' })));
    assert.equal(ok.status, 200);
    assert.equal(ok.body.message.content, 'still here');
  });
});

describe('an actor host that dies: what its runs had stored', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ actorThreads: 1, env: { CHECKPOINT_MS: '100' } });
  });
  after(() => t.close());

  it("fails their calls and keeps a chat run's checkpointed text as its interrupted answer, as a restart would", async () => {
    const pool = t.server.ctx.pool;
    const events: SseEvent[] = [];
    // Held after three deltas: the run is still going when its host dies.
    const streamed = t.stream(
      '/v1/chat-completions/stream',
      { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas: 20, rate: 50, gate: gateName(), gateAfter: 3 }) }] },
      { stopAfter: (ev) => (events.push(ev), false) },
    );
    await waitFor(() => events.filter((e) => e.event === 'delta').length === 3, 10_000, 'three deltas');
    const { chatId, callId } = events[0]!.data as { chatId: string; callId: string };
    const call = async () => (await pool.query('SELECT status, error FROM llm_calls WHERE id = $1', [callId])).rows[0];
    await waitFor(async () => Boolean((await pool.query(CHECKPOINTED_TEXT, [callId])).rows[0]?.checkpoint_text), 10_000, 'a checkpoint');
    const { supervisor } = t.server.ctx;
    // An unknown run kind throws inside the worker's message handler: an uncaught error kills it.
    const crash = supervisor.start({ kind: 'no_such_kind' as never, key: null, request: {} as never, ifRunning: 'reject', label: 'test' });
    assert.ok(crash.ok);
    await crash.handle.result;
    await streamed;
    assert.match(events.at(-1)!.data.message, /^run host failed/);

    await waitFor(async () => (await call()).status === 'failed', 10_000, 'the call to be failed');
    assert.match((await call()).error, /^instance lost/);
    const detail = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
    const answer = detail.messages.find((m: { role: string }) => m.role === 'assistant');
    assert.deepEqual(answer?.metadata, { interrupted: true, reason: 'instance lost' });
    const streamedText = events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');
    assert.ok(answer.content.length > 0 && streamedText.startsWith(answer.content), 'what was checkpointed of what the client got');
    assert.equal(detail.lastRun?.status, 'failed');
    const next = await t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: [], chatId, messages: [{ role: 'user', content: sim({ reply: 'again' }) }] });
    assert.equal(next.events.at(-1)?.event, 'done', 'the chat takes its next run');
  });
});
