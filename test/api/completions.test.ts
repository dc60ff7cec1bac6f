// Chat completions, whole and streamed, for every provider through the simulator, with the same
// suite on the main thread (ACTOR_THREADS=0) and on two worker threads (ACTOR_THREADS=2).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';

const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PROVIDERS = ['provider_a', 'provider_b', 'provider_c', 'provider_d'] as const;

for (const threads of [0, 2]) {
  describe(`chat completions (ACTOR_THREADS=${threads})`, () => {
    let t: TestServer;
    const q = async (sql: string, params: unknown[] = []) => (await t.server.ctx.pool.query(sql, params)).rows;
    const lastRequest = (upstream: string) => [...t.sim.requests].reverse().find((r) => r.upstream === upstream && r.method === 'POST')!;
    before(async () => {
      t = await startTestServer({ actorThreads: threads, env: { CHAT_MAX_TOOL_ROUNDS: '2' } });
    });
    after(() => t.close());

    for (const provider of PROVIDERS) {
      it(`${provider}: a persisted stream creates the chat, streams deltas and stores the answer with its LlmCall`, async () => {
        const r = await t.stream('/v1/chat-completions/stream', {
          provider,
          model: 'sim-model',
          enabledTools: [],
          messages: [{ role: 'user', content: sim({ reply: 'One two three four', deltas: 4 }) }],
        });
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
        assert.equal(r.headers.get('cache-control'), 'no-cache');
        assert.equal(r.headers.get('x-accel-buffering'), 'no');
        const names = r.events.map((e) => e.event);
        assert.deepEqual(names, ['meta', 'delta', 'delta', 'delta', 'delta', 'done']);
        const [meta, done] = [r.events[0]!.data, r.events.at(-1)!.data];
        assert.equal(meta.type, 'meta');
        assert.equal(meta.provider, provider);
        assert.equal(meta.model, 'sim-model');
        assert.ok(meta.chatId && meta.callId);
        assert.equal(done.text, 'One two three four');
        assert.equal(r.events.slice(1, -1).map((e) => e.data.text).join(''), done.text);
        assert.equal(done.usage.totalTokens, done.usage.inputTokens + done.usage.outputTokens);

        const chat = (await t.call('GET', `/v1/chats/${meta.chatId}`)).body.chat;
        assert.deepEqual(chat.messages.map((m: any) => m.role), ['user', 'assistant']);
        assert.equal(chat.messages[1].content, done.text);
        assert.equal(chat.initiatedProvider, provider);
        assert.equal(chat.lastUsedModel, 'sim-model');
        const [call] = await q('SELECT * FROM llm_calls WHERE id = $1', [meta.callId]);
        assert.equal(call.status, 'succeeded');
        assert.equal(call.chat_id, meta.chatId);
        assert.equal(call.total_tokens, done.usage.totalTokens);
        assert.ok(call.latency_ms >= 0);
      });

      it(`${provider}: the whole-response call answers with message, usage and raw`, async () => {
        const r = await t.call('POST', '/v1/chat-completions', {
          provider,
          model: 'sim-model',
          messages: [{ role: 'user', content: sim({ reply: 'Whole answer' }) }],
          temperature: 0.3,
          maxTokens: 100,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.chatId, null);
        assert.equal(r.body.provider, provider);
        assert.deepEqual(r.body.message, { role: 'assistant', content: 'Whole answer' });
        assert.ok(r.body.usage.inputTokens > 0);
        assert.equal(typeof r.body.raw, 'object');
        const body = lastRequest(provider).body;
        assert.notEqual(body.stream, true, 'the whole-response call does not stream from the provider');
        assert.equal(body.temperature, 0.3);
      });
    }

    it('persist false stores nothing and sends null chatId and callId', async () => {
      const [before] = await q('SELECT (SELECT count(*) FROM chats) c, (SELECT count(*) FROM messages) m, (SELECT count(*) FROM llm_calls) l');
      const r = await t.stream('/v1/chat-completions/stream', {
        persist: false,
        provider: 'provider_c',
        model: 'm',
        messages: [{ role: 'user', content: sim({ tools: [{ name: 'web_search', args: { query: 'x' } }], reply: 'done' }) }],
      });
      assert.deepEqual([r.events[0]!.data.chatId, r.events[0]!.data.callId], [null, null]);
      assert.equal(r.events.at(-1)!.event, 'done');
      assert.ok(r.events.some((e) => e.event === 'tool_call'), 'tools still run');
      const [afterRows] = await q('SELECT (SELECT count(*) FROM chats) c, (SELECT count(*) FROM messages) m, (SELECT count(*) FROM llm_calls) l');
      assert.deepEqual(afterRows, before);
      assert.deepEqual((await t.call('GET', '/v1/active-runs')).body.chats, []);
    });

    it('with chatId stores only new non-assistant messages and updates lastUsed*', async () => {
      const chat = (await t.call('POST', '/v1/chats', { messages: [{ role: 'system', content: 'seed' }, { role: 'user', content: 'first' }] })).body.chat;
      const history = [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'an answer the client invented' },
        { role: 'user', content: sim({ reply: 'second answer' }, 'second') },
      ];
      const r = await t.call('POST', '/v1/chat-completions', { chatId: chat.id, provider: 'provider_b', model: 'b-1', messages: history });
      assert.equal(r.status, 200);
      assert.equal(r.body.chatId, chat.id);
      const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.deepEqual(
        detail.messages.map((m: any) => [m.role, m.content.split('\n')[0]]),
        [['system', 'seed'], ['user', 'first'], ['user', 'second'], ['assistant', 'second answer']],
      );
      assert.deepEqual([detail.initiatedProvider, detail.initiatedModel, detail.lastUsedProvider, detail.lastUsedModel], ['provider_b', 'b-1', 'provider_b', 'b-1']);
      await t.call('POST', '/v1/chat-completions', { chatId: chat.id, provider: 'provider_c', model: 'c-1', messages: history });
      const again = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.deepEqual([again.initiatedProvider, again.lastUsedProvider, again.lastUsedModel], ['provider_b', 'provider_c', 'c-1']);
      assert.equal(again.messages.filter((m: any) => m.role === 'user').length, 2, 'the resent history is not stored twice');
    });

    it('an unknown chatId is 404 chat not found, for both endpoints', async () => {
      for (const path of ['/v1/chat-completions', '/v1/chat-completions/stream']) {
        const r = await t.stream(path, { chatId: 'missing', provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'x' }] });
        assert.deepEqual([r.status, r.body.message], [404, 'chat not found']);
      }
    });

    it('additionalSystemPrompt, given or stored, goes first to the provider and never into the transcript', async () => {
      const chat = (await t.call('POST', '/v1/chats', { additionalSystemPrompt: 'Stored prompt.' })).body.chat;
      await t.call('POST', '/v1/chat-completions', { chatId: chat.id, provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'a' }] });
      assert.deepEqual(lastRequest('provider_c').body.messages[0], { role: 'system', content: 'Stored prompt.' });
      await t.call('POST', '/v1/chat-completions', { chatId: chat.id, provider: 'provider_a', model: 'm', additionalSystemPrompt: 'One-off.', messages: [{ role: 'user', content: 'b' }] });
      assert.equal(lastRequest('provider_a').body.instructions, 'One-off.');
      await t.call('POST', '/v1/chat-completions', { chatId: chat.id, provider: 'provider_b', model: 'm', messages: [{ role: 'user', content: 'c' }] });
      assert.deepEqual(lastRequest('provider_b').body.system, [{ type: 'text', text: 'Stored prompt.', cache_control: { type: 'ephemeral' } }]);
      const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.ok(detail.messages.every((m: any) => m.role !== 'system'));
      assert.equal(detail.additionalSystemPrompt, 'Stored prompt.');
    });

    it('enabledTools: all by default for a and c, the stored setting for a saved chat, none when empty, never for b and d', async () => {
      const toolNames = (upstream: string) => {
        const body = lastRequest(upstream).body;
        if (!('tools' in body)) return null;
        return body.tools.map((x: any) => x.name ?? x.function?.name);
      };
      await t.call('POST', '/v1/chat-completions', { provider: 'provider_a', model: 'm', messages: [{ role: 'user', content: 'x' }] });
      assert.deepEqual(toolNames('provider_a'), ['web_search', 'fetch_url']);
      assert.equal(lastRequest('provider_a').body.store, true, 'store: true when the tool loop can follow');
      await t.call('POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', enabledTools: ['fetch_url', 'bogus'], messages: [{ role: 'user', content: 'x' }] });
      assert.deepEqual(toolNames('provider_c'), ['fetch_url']);
      await t.call('POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'x' }] });
      assert.equal(toolNames('provider_c'), null);
      const chat = (await t.call('POST', '/v1/chats', { enabledTools: ['web_search'] })).body.chat;
      await t.call('POST', '/v1/chat-completions', { chatId: chat.id, provider: 'provider_a', model: 'm', messages: [{ role: 'user', content: 'x' }] });
      assert.deepEqual(toolNames('provider_a'), ['web_search']);
      for (const p of ['provider_b', 'provider_d']) {
        await t.call('POST', '/v1/chat-completions', { provider: p, model: 'm', enabledTools: ['web_search'], messages: [{ role: 'user', content: 'x' }] });
        assert.equal(toolNames(p), null, `${p} gets no service tools`);
      }
    });

    it('forwards attachments in each provider’s own form', async () => {
      const messages = [
        {
          role: 'user',
          content: 'see these',
          attachments: [
            { kind: 'image', filename: 'a.png', mimeType: 'image/png', dataUrl: PNG },
            { kind: 'text', filename: 'notes.txt', mimeType: 'text/plain', text: 'NOTE BODY' },
          ],
        },
      ];
      const parts = (p: string) => {
        const body = lastRequest(p).body;
        const msgs = p === 'provider_a' ? body.input : body.messages;
        return msgs.at(-1).content;
      };
      for (const p of PROVIDERS) await t.call('POST', '/v1/chat-completions', { provider: p, model: 'm', enabledTools: [], messages });
      const a = parts('provider_a');
      assert.ok(a.some((x: any) => x.type === 'input_image' && x.image_url === PNG));
      assert.ok(a.some((x: any) => x.type === 'input_text' && x.text.includes('NOTE BODY')));
      const b = parts('provider_b');
      assert.ok(b.some((x: any) => x.type === 'image' && x.source.type === 'base64' && x.source.media_type === 'image/png' && !x.source.data.startsWith('data:')));
      assert.ok(b.some((x: any) => x.type === 'text' && x.text.includes('NOTE BODY')));
      for (const p of ['provider_c', 'provider_d']) {
        const c = parts(p);
        assert.ok(c.some((x: any) => x.type === 'image_url' && x.image_url.url === PNG));
        assert.ok(c.some((x: any) => x.type === 'text' && x.text.includes('NOTE BODY')));
      }
    });

    it('a provider failure before the stream: meta then error, the LlmCall failed, initiated* still set', async () => {
      const chat = (await t.call('POST', '/v1/chats', {})).body.chat;
      const r = await t.stream('/v1/chat-completions/stream', { chatId: chat.id, provider: 'provider_c', model: 'c-9', messages: [{ role: 'user', content: sim({ status: 400 }) }] });
      assert.deepEqual(r.events.map((e) => e.event), ['meta', 'error']);
      const err = r.events[1]!.data;
      assert.equal(err.type, 'error');
      assert.match(err.message, /provider_c/);
      const [call] = await q('SELECT status, error FROM llm_calls WHERE id = $1', [r.events[0]!.data.callId]);
      assert.equal(call.status, 'failed');
      assert.equal(call.error, err.message);
      const detail = (await t.call('GET', `/v1/chats/${chat.id}`)).body.chat;
      assert.deepEqual([detail.initiatedProvider, detail.initiatedModel], ['provider_c', 'c-9']);
      assert.deepEqual(detail.messages.map((m: any) => m.role), ['user'], 'no assistant message on failure');
    });

    it('a stream that breaks mid-way ends with error after its deltas; the whole call answers 502', async () => {
      const r = await t.stream('/v1/chat-completions/stream', { provider: 'provider_b', model: 'm', messages: [{ role: 'user', content: sim({ reply: 'a b c d e f', deltas: 6, failAfter: 2 }) }] });
      assert.deepEqual(r.events.map((e) => e.event), ['meta', 'delta', 'delta', 'error']);
      const [call] = await q('SELECT status FROM llm_calls WHERE id = $1', [r.events[0]!.data.callId]);
      assert.equal(call.status, 'failed');
      const whole = await t.call('POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: sim({ status: 400 }) }] });
      assert.equal(whole.status, 502);
      assert.match(whole.body.message, /provider_c/);
      const limited = await t.call('POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: sim({ status: 429, retryAfter: 0 }) }] });
      assert.equal(limited.status, 429);
    });

    it('a provider that is not configured is a 400 naming the variable', async () => {
      const other = await startTestServer({ sim: t.sim, env: { PROVIDER_C_API_KEY: '' } });
      try {
        const r = await other.call('POST', '/v1/chat-completions', { provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'x' }] });
        assert.deepEqual([r.status, r.body.message], [400, 'provider_c is not configured: set PROVIDER_C_API_KEY']);
      } finally {
        await other.close();
      }
    });

    it('the tool loop: tool_call events before deltas, tool messages stored before their terminal event', async () => {
      const res = await fetch(`${t.url}/v1/chat-completions/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          provider: 'provider_c',
          model: 'm',
          messages: [{ role: 'user', content: sim({ tools: [{ name: 'web_search', args: { query: 'kittens' } }, { name: 'no_such_tool', args: {} }], reply: 'Found kittens.' }) }],
        }),
      });
      const { readSse } = await import('../helpers/server.ts');
      let storedAtTerminal = 0;
      const events = await readSse(res, new AbortController(), undefined, async (ev) => {
        if (ev.event !== 'tool_call' || ev.data.status === 'initiated') return;
        const rows = await q(`SELECT 1 FROM messages WHERE role = 'tool' AND metadata->>'toolCallId' = $1`, [ev.data.toolCallId]);
        storedAtTerminal += rows.length;
      });
      assert.equal(storedAtTerminal, 2, 'each tool message is in the database when its terminal event arrives');
      const names = events.map((e) => e.event);
      assert.equal(names[0], 'meta');
      assert.equal(names.at(-1), 'done');
      const firstDelta = names.indexOf('delta');
      assert.ok(names.lastIndexOf('tool_call') < firstDelta, 'tool_call events precede deltas');
      const calls = events.filter((e) => e.event === 'tool_call').map((e) => e.data);
      assert.equal(calls.length, 4);
      const search = calls.filter((c) => c.name === 'web_search');
      assert.deepEqual(search.map((c) => c.status), ['initiated', 'completed']);
      assert.equal(search[0].toolCallId, search[1].toolCallId);
      assert.deepEqual(search[0].args, { query: 'kittens' });
      assert.ok(search[0].summary.length > 0);
      assert.ok(search[1].completedAt && search[1].durationMs >= 0 && search[1].resultPreview);
      assert.equal(search[0].completedAt, undefined);
      const unknown = calls.filter((c) => c.name === 'no_such_tool');
      assert.deepEqual(unknown.map((c) => c.status), ['initiated', 'failed']);
      assert.match(unknown[1].error, /unknown tool/);
      assert.equal(events.at(-1)!.data.text, 'Found kittens.');

      const chatId = events[0]!.data.chatId;
      const detail = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
      const tools = detail.messages.filter((m: any) => m.role === 'tool');
      assert.equal(tools.length, 2);
      for (const m of tools) {
        assert.equal(m.metadata.kind, 'tool_call');
        const terminal = calls.find((c) => c.toolCallId === m.metadata.toolCallId && c.status !== 'initiated');
        assert.ok(terminal, 'the stored tool message matches a terminal event');
        assert.equal(m.metadata.status, terminal.status);
      }
      assert.deepEqual(detail.messages.map((m: any) => m.role), ['user', 'tool', 'tool', 'assistant']);
      const second = lastRequest('provider_c').body.messages;
      assert.ok(second.some((m: any) => m.role === 'tool'), 'tool results go back to the model');
    });

    it('stops with the limit message after CHAT_MAX_TOOL_ROUNDS cycles', async () => {
      t.sim.clearRequests();
      const r = await t.call('POST', '/v1/chat-completions', {
        provider: 'provider_a',
        model: 'm',
        messages: [{ role: 'user', content: sim({ tools: [{ name: 'fetch_url', args: { url: 'http://127.0.0.1:1/x' } }], toolRounds: 10 }) }],
      });
      assert.equal(r.status, 200);
      assert.match(r.body.message.content, /Stopped after 2 tool rounds/);
      const calls = t.sim.requests.filter((x) => x.upstream === 'provider_a' && x.method === 'POST');
      assert.equal(calls.length, 3, 'two tool cycles, then one more model call whose tool request is refused');
      assert.ok(calls[1]!.body.previous_response_id, 'later rounds chain with previous_response_id');
      assert.ok(calls[1]!.body.input.every((i: any) => i.type === 'function_call_output'));
    });

    it('exposes Prometheus metrics', async () => {
      const r = await fetch(`${t.url}/metrics`);
      const text = await r.text();
      assert.match(text, /css_run_duration_seconds_count\{kind="chat",provider="provider_c",outcome="ok"\} \d+/);
      assert.match(text, /css_run_errors_total\{kind="chat",provider="provider_c"\} \d+/);
      assert.match(text, /css_events_sent_total \d+/);
      assert.match(text, /css_active_runs\{kind="all"\} 0/);
    });
  });
}
