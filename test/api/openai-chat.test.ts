// The OpenAI-compatible API's models and Chat Completions (docs/clients.md, "The OpenAI-compatible API"),
// driven by the official `openai` SDK against a real server and the simulator: the envelope of errors and
// its retry headers, whole and streamed answers, the usage chunk, a client function's round trip, and
// `store: true` making a chat of the caller.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { apiDatabases, sim, startTestServer, variantTag, waitFor, type TestServer } from '../helpers/server.ts';
import { DRAINING } from '../../src/http/errors.ts';
import { openaiErrorShape } from '../../src/openai/errors.ts';
import { ADMIN_TOKEN, as, createUser } from '../helpers/users.ts';
import { openaiClient } from '../helpers/openai.ts';
import { gateName } from '../helpers/wait.ts';

const MODEL = 'provider_c/sim-c-large';

const client = (t: TestServer, apiKey: string): OpenAI => openaiClient(t.url, apiKey);

for (const db of apiDatabases()) {
  describe(`OpenAI-compatible models and chat completions ${variantTag(db)}`, () => {
    let t: TestServer;
    let admin: OpenAI;
    before(async () => {
      t = await startTestServer({ db, env: { ADMIN_TOKEN } });
      admin = client(t, ADMIN_TOKEN);
      // The model lists load in the background after the start.
      await waitFor(async () => (await admin.models.list()).data.some((m) => m.id === MODEL), 10_000, 'the model lists');
    });
    after(() => t.close());

    it('lists every model as provider/model, and one by id (slash encoded or not); an unknown one is a 404 envelope', async () => {
      const ids = (await admin.models.list()).data.map((m) => m.id);
      assert.ok(ids.includes('provider_a/sim-a-large') && ids.includes(MODEL), ids.join(', '));
      for (const m of (await admin.models.list()).data) {
        assert.equal(m.object, 'model');
        assert.equal(m.owned_by, m.id.split('/')[0]);
      }
      const one = await admin.models.retrieve(MODEL);
      assert.deepEqual([one.id, one.owned_by], [MODEL, 'provider_c']);
      const raw = await as(t, ADMIN_TOKEN).call('GET', '/api/openai/v1/models/provider_c/sim-c-large');
      assert.equal(raw.body.id, MODEL, 'also under /api, slash unencoded');
      await assert.rejects(admin.models.retrieve('provider_c/nope'), (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        assert.equal((err.error as any).type, 'not_found_error');
        assert.match(err.message, /provider_c\/nope/);
        return true;
      });
    });

    it('answers 401 in the envelope to a wrong key, and counts requests on /metrics', async () => {
      await assert.rejects(client(t, 'wrong').models.list(), (err: unknown) => err instanceof OpenAI.AuthenticationError && (err.error as any).type === 'authentication_error');
      const text = (await as(t, ADMIN_TOKEN).call('GET', '/metrics')).body as string;
      assert.match(text, /^css_openai_requests_total\{api="models",status="200"\} [1-9]/m);
      assert.match(text, /^css_openai_requests_total\{api="models",status="404"\} [1-9]/m);
    });

    it('answers a whole completion, by provider/model or a bare model id', async () => {
      for (const model of [MODEL, 'sim-c-large']) {
        const r = await admin.chat.completions.create({ model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello there' }] });
        assert.equal(r.object, 'chat.completion');
        assert.match(r.id, /^chatcmpl-/);
        assert.equal(r.model, MODEL);
        assert.equal(r.choices[0]!.message.content, 'Simulated reply to: hello there');
        assert.equal(r.choices[0]!.finish_reason, 'stop');
        assert.ok(r.usage!.total_tokens > 0 && r.usage!.total_tokens === r.usage!.prompt_tokens + r.usage!.completion_tokens);
      }
      const bad = await as(t, ADMIN_TOKEN).call('POST', '/openai/v1/chat/completions', { model: MODEL, messages: [] });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.type, 'invalid_request_error');
      assert.match(bad.body.error.message, /messages/);
    });

    it('streams chunks with the role first, the finish reason, the usage chunk and [DONE]', async () => {
      const content = sim({ reply: 'one two three four five', deltas: 5 });
      const stream = admin.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content }], stream_options: { include_usage: true } });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      stream.on('chunk', (c) => chunks.push(c));
      const final = await stream.finalChatCompletion();
      assert.equal(final.choices[0]!.message.content, 'one two three four five');
      assert.equal(final.choices[0]!.finish_reason, 'stop');
      assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
      assert.ok(chunks.filter((c) => c.choices[0]?.delta.content).length >= 5, 'the deltas as they came');
      const last = chunks.at(-1)!;
      assert.deepEqual(last.choices, []);
      assert.ok(last.usage!.total_tokens > 0);
      assert.equal(new Set(chunks.map((c) => `${c.id} ${c.created} ${c.model}`)).size, 1, 'every chunk, the usage one too, has the same id, created and model');
      // The raw wire: bare data lines, ending in [DONE].
      const res = await fetch(`${t.url}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const text = await res.text();
      assert.ok(text.trimEnd().endsWith('data: [DONE]'));
      assert.doesNotMatch(text, /^event:/m);
    });

    for (const MODEL of ['provider_c/sim-c-large', 'provider_d/sim-d-agent', 'provider_b/sim-b-large']) it(`${MODEL.split('/')[0]} hands a client function's call back with finish_reason tool_calls, then answers with its result`, async () => {
      const tools: OpenAI.ChatCompletionTool[] = [
        { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      ];
      const user = { role: 'user' as const, content: sim({ tools: [{ name: 'get_weather', args: { city: 'Paris' } }], reply: 'It is sunny in Paris.' }, 'weather?') };
      const first = await admin.chat.completions.create({ model: MODEL, messages: [user], tools });
      const choice = first.choices[0]!;
      assert.equal(choice.finish_reason, 'tool_calls');
      const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
      assert.deepEqual([call.type, call.function.name, JSON.parse(call.function.arguments)], ['function', 'get_weather', { city: 'Paris' }]);
      const messages: OpenAI.ChatCompletionMessageParam[] = [user, choice.message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: '{"sky":"clear"}' }];
      // The same round trip streamed: the call arrives as delta.tool_calls.
      const streamedCall = await admin.chat.completions.stream({ model: MODEL, messages: [user], tools }).finalChatCompletion();
      assert.equal(streamedCall.choices[0]!.finish_reason, 'tool_calls');
      assert.equal((streamedCall.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.name, 'get_weather');
      const second = await admin.chat.completions.create({ model: MODEL, messages, tools });
      assert.equal(second.choices[0]!.finish_reason, 'stop');
      assert.equal(second.choices[0]!.message.content, 'It is sunny in Paris.');
      // The provider got the call and its result as the wire's own messages, not as text.
      if (MODEL.startsWith('provider_b')) {
        const sent = t.sim.requests.filter((r) => r.path.endsWith('/v1/messages')).at(-1)!.body as any;
        assert.deepEqual(sent.messages.map((m: any) => m.role), ['user', 'assistant', 'user']);
        assert.deepEqual(sent.messages[1].content.at(-1), { type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'Paris' } });
        assert.deepEqual(sent.messages[2].content, [{ type: 'tool_result', tool_use_id: call.id, content: '{"sky":"clear"}' }]);
        assert.equal(sent.tools[0].name, 'get_weather');
        return;
      }
      const sent = t.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as any;
      assert.deepEqual(sent.messages.map((m: any) => m.role), ['user', 'assistant', 'tool']);
      assert.equal(sent.messages[2].tool_call_id, call.id);
    });

    it("store: true keeps the exchange as a chat of the caller; without it there is none", async () => {
      const ann = await createUser(t, 'Ann');
      const annAi = client(t, ann.key);
      const before = (await ann.call('GET', '/v1/chats')).body.chats.length;
      const unstored = await annAi.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'not kept' }] });
      assert.equal((unstored as any).chat_id, undefined);
      const stored = await annAi.chat.completions.create({ model: MODEL, store: true, messages: [{ role: 'user', content: 'keep this' }] });
      const chatId = (stored as any).chat_id as string;
      const chat = await ann.call('GET', `/v1/chats/${chatId}`);
      assert.equal(chat.status, 200);
      assert.deepEqual(chat.body.chat.messages.map((m: any) => [m.role, m.content]), [['user', 'keep this'], ['assistant', 'Simulated reply to: keep this']]);
      assert.equal((await ann.call('GET', '/v1/chats')).body.chats.length, before + 1);
      assert.equal((await as(t, ADMIN_TOKEN).call('GET', `/v1/chats/${chatId}`)).status, 404, "another user's");
    });

    it('a failure after the stream began is a data: {"error"} event the SDK throws', async () => {
      const content = sim({ reply: 'a b c d e f', deltas: 6, failAfter: 2 });
      const stream = admin.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content }] });
      await assert.rejects(stream.finalChatCompletion(), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError, String(err));
        assert.match(err.message, /provider_c|stream|failed/i);
        return true;
      });
    });

    it('429s tell the SDK what to do: retry-after-ms for active runs, x-should-retry: false for a spent budget', async () => {
      const gate = gateName();
      const bo = await createUser(t, 'Bo', { maxActiveRuns: 1 });
      const boAi = client(t, bo.key);
      const held = boAi.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: sim({ reply: 'x', gate }) }] });
      await waitFor(() => t.sim.heldAt(gate) > 0, 10_000, "Bo's run held");
      const res = await bo.call('POST', '/openai/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'one more' }] });
      assert.equal(res.status, 429);
      assert.equal(res.body.error.type, 'rate_limit_error');
      assert.equal(res.body.error.message, 'too many active runs for this user (limit 1)');
      assert.equal(Number(res.headers.get('retry-after-ms')), Number(res.headers.get('retry-after')) * 1000);
      assert.equal(res.headers.get('x-should-retry'), null);
      t.sim.openGate(gate);
      await held;
      const cy = await createUser(t, 'Cy', { tokensPerDay: 5 });
      assert.equal((await cy.call('POST', '/openai/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'spend my tokens please' }] })).status, 200);
      const spent = await cy.call('POST', '/openai/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'more' }] });
      assert.deepEqual([spent.status, spent.body.error.message, spent.headers.get('x-should-retry')], [429, 'daily token budget exhausted', 'false']);
      await assert.rejects(client(t, cy.key).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'more' }] }), OpenAI.RateLimitError);
    });

    it('an Idempotency-Key retry starts nothing: whole, it waits for the first answer; streamed, it gets it as chunks', async () => {
      for (const stream of [false, true]) {
        const gate = gateName();
        const key = `k-${gate}`;
        const body = { model: MODEL, stream, stream_options: stream ? { include_usage: true } : undefined, messages: [{ role: 'user', content: sim({ reply: 'only once', gate }) }] };
        const post = (b: unknown) =>
          fetch(`${t.url}/openai/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(b) });
        const first = post(body);
        await waitFor(() => t.sim.heldAt(gate) > 0, 10_000, 'the first run held');
        const retry = post(body);
        assert.equal((await post({ ...body, messages: [{ role: 'user', content: 'another' }] })).status, 422, 'same key, other body');
        t.sim.openGate(gate);
        const [a, b] = await Promise.all([first, retry]);
        assert.deepEqual([a.status, b.status], [200, 200]);
        assert.equal(b.headers.get('idempotent-replayed'), 'true');
        const [ta, tb] = [await a.text(), await b.text()];
        if (!stream) {
          assert.deepEqual([JSON.parse(ta).id, JSON.parse(tb).choices[0].message.content], [JSON.parse(tb).id, 'only once']);
        } else {
          const content = (text: string) => text.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6))).map((c) => c.choices[0]?.delta.content ?? '').join('');
          assert.deepEqual([content(ta), content(tb)], ['only once', 'only once']);
          assert.ok(tb.trimEnd().endsWith('data: [DONE]'));
          assert.match(tb, /"choices":\[\],"usage":\{"prompt_tokens"/);
        }
        assert.equal(t.sim.requests.filter((r) => JSON.stringify(r.body ?? '').includes(gate)).length, 1, 'one provider call');
      }
    });
  });
}

describe('the OpenAI error envelope', () => {
  it('gives every 503 retry-after-ms beside retry-after', () => {
    const shaped = openaiErrorShape(DRAINING());
    assert.deepEqual(shaped.body, { error: { message: 'server is draining', type: 'server_error', param: null, code: 'draining' } });
    assert.deepEqual([shaped.headers?.['retry-after'], shaped.headers?.['retry-after-ms']], ['5', '5000']);
  });
});
