// The OpenAI-compatible Responses API (docs/clients.md, "The OpenAI-compatible API"), driven by the official
// `openai` SDK against a real server and the simulator, on both databases: whole and streamed responses,
// conversations by previous_response_id, a client function's round trip, background responses read again
// and resumed from several sequence numbers (live and after the end) against a full read, cancel, the 409
// of one run per chat, and another user's response.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { apiDatabases, sim, variantTag, waitFor } from '../helpers/server.ts';
import { ADMIN_TOKEN, as, createUser } from '../helpers/users.ts';
import { openaiClient, openaiServer, readAll } from '../helpers/openai.ts';
import { gateName } from '../helpers/wait.ts';

const MODEL = 'provider_c/sim-c-large';

type Event = OpenAI.Responses.ResponseStreamEvent;


for (const db of apiDatabases()) {
  describe(`OpenAI-compatible responses ${variantTag(db)}`, () => {
    const s = openaiServer({ db, env: { ADMIN_TOKEN } }, ADMIN_TOKEN);

    it('answers a whole response, stored as a chat turn', async () => {
      const r = await s.ai.responses.create({ model: MODEL, instructions: 'Be brief.', input: 'hello there' });
      assert.equal(r.object, 'response');
      assert.equal(r.status, 'completed');
      assert.match(r.id, /^resp_/);
      assert.equal(r.output_text, 'Simulated reply to: hello there');
      assert.ok(r.usage!.total_tokens > 0);
      const chatId = (r as any).chat_id as string;
      const chat = await as(s.t, ADMIN_TOKEN).call('GET', `/v1/chats/${chatId}`);
      assert.deepEqual(chat.body.chat.messages.map((m: any) => m.role), ['user', 'assistant']);
      const again = await s.ai.responses.retrieve(r.id);
      assert.deepEqual([again.status, again.output_text], ['completed', r.output_text]);
    });

    it('streams events numbered from 0, created … completed, that the SDK assembles', async () => {
      const input = sim({ reply: 'one two three four', deltas: 4 });
      const stream = s.ai.responses.stream({ model: MODEL, input });
      const events: Event[] = [];
      stream.on('event', (e) => events.push(e));
      const final = await stream.finalResponse();
      assert.equal(final.output_text, 'one two three four');
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
      assert.equal(events[0]!.type, 'response.created');
      assert.equal(events.at(-1)!.type, 'response.completed');
      assert.equal(events.filter((e) => e.type === 'response.output_text.delta').length, 4);
    });

    it('continues the latest turn in its chat; an earlier one starts a new chat with the history up to it', async () => {
      const first = await s.ai.responses.create({ model: MODEL, input: 'first question' });
      const second = await s.ai.responses.create({ model: MODEL, input: 'second question', previous_response_id: first.id });
      assert.equal((second as any).chat_id, (first as any).chat_id);
      const sent = s.t.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as any;
      assert.deepEqual(sent.messages.map((m: any) => m.content), ['first question', 'Simulated reply to: first question', 'second question']);
      const fork = await s.ai.responses.create({ model: MODEL, input: 'another second', previous_response_id: first.id });
      const forkChat = (fork as any).chat_id as string;
      assert.notEqual(forkChat, (first as any).chat_id);
      const chat = await as(s.t, ADMIN_TOKEN).call('GET', `/v1/chats/${forkChat}`);
      assert.deepEqual(chat.body.chat.messages.map((m: any) => m.content), ['first question', 'Simulated reply to: first question', 'another second', 'Simulated reply to: another second']);
      await assert.rejects(s.ai.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_nope' }), OpenAI.NotFoundError);
    });

    for (const MODEL of ['provider_c/sim-c-large', 'provider_b/sim-b-large']) it(`${MODEL.split('/')[0]} hands a client function's call over as a function_call item, then answers its output`, async () => {
      const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }];
      const input = sim({ tools: [{ name: 'get_weather', args: { city: 'Oslo' } }], reply: 'Snow in Oslo.' }, 'weather?');
      const first = await s.ai.responses.stream({ model: MODEL, input, tools }).finalResponse();
      const call = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      assert.deepEqual([call.name, JSON.parse(call.arguments)], ['get_weather', { city: 'Oslo' }]);
      const second = await s.ai.responses.create({
        model: MODEL,
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"sky":"snow"}' }],
        tools,
      });
      assert.equal(second.output_text, 'Snow in Oslo.');
    });

    it('runs in the background: retrieve, resume from several N live and after the end, exactly as a full read', async () => {
      const gate = gateName();
      const input = sim({ reply: 'a b c d e f g h i j', deltas: 10, gate, gateAfter: 4 });
      const bg = await s.ai.responses.create({ model: MODEL, input, background: true });
      // Queued until its run has stored its start (test/openai/queued.test.ts).
      assert.ok(bg.status === 'queued' || bg.status === 'in_progress', String(bg.status));
      await waitFor(() => s.t.sim.heldAt(gate) > 0, 10_000, 'the run held after 4 deltas');
      await waitFor(async () => (await s.ai.responses.retrieve(bg.id)).status === 'in_progress', 10_000, 'its start stored');
      const full = readAll(await s.ai.responses.retrieve(bg.id, { stream: true }));
      const points = [0, 3, 6, 9, 14];
      const live = points.map(async (n) => readAll(await s.ai.responses.retrieve(bg.id, { stream: true, starting_after: n })));
      s.t.sim.openGate(gate);
      const all = await full;
      assert.deepEqual(all.map((e) => e.sequence_number), all.map((_, i) => i), 'a full read: every number once');
      assert.equal(all.at(-1)!.type, 'response.completed');
      assert.equal(all.filter((e) => e.type === 'response.output_text.delta').map((e: any) => e.delta).join(''), 'a b c d e f g h i j');
      const resumed = await Promise.all(live);
      points.forEach((n, i) => assert.deepEqual(resumed[i], all.filter((e) => e.sequence_number > n), `live from ${n}`));
      await waitFor(async () => (await s.ai.responses.retrieve(bg.id)).status === 'completed', 10_000, 'stored as completed');
      for (const n of [-1, ...points]) {
        const stored = await readAll(await s.ai.responses.retrieve(bg.id, n < 0 ? { stream: true } : { stream: true, starting_after: n }));
        assert.deepEqual(stored, all.filter((e) => e.sequence_number > n), `after the end from ${n}`);
      }
      assert.equal((await s.ai.responses.retrieve(bg.id)).output_text, 'a b c d e f g h i j');
    });

    it('cancels a running response, and refuses a second run on its chat with 409 and x-should-retry: false', async () => {
      const gate = gateName();
      const bg = await s.ai.responses.create({ model: MODEL, input: sim({ reply: 'x y z', deltas: 3, gate, gateAfter: 1 }), background: true });
      await waitFor(() => s.t.sim.heldAt(gate) > 0, 10_000, 'the run held');
      const res = await fetch(`${s.t.url}/openai/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: 'more', previous_response_id: bg.id }),
      });
      assert.equal(res.status, 409);
      assert.equal(res.headers.get('x-should-retry'), 'false');
      assert.equal(((await res.json()) as any).error.type, 'conflict_error');
      const cancelled = await s.ai.responses.cancel(bg.id);
      assert.equal(cancelled.status, 'cancelled');
      assert.equal((await s.ai.responses.retrieve(bg.id)).status, 'cancelled');
      s.t.sim.openGate(gate);
    });

    it("another user's response is a 404; an unstored one cannot be read again", async () => {
      const ann = await createUser(s.t, 'Ann');
      const annAi = openaiClient(s.t.url, ann.key);
      const mine = await s.ai.responses.create({ model: MODEL, input: 'admin only' });
      await assert.rejects(annAi.responses.retrieve(mine.id), OpenAI.NotFoundError);
      await assert.rejects(annAi.responses.create({ model: MODEL, input: 'x', previous_response_id: mine.id }), OpenAI.NotFoundError);
      await assert.rejects(annAi.responses.cancel(mine.id), OpenAI.NotFoundError);
      const unstored = await annAi.responses.create({ model: MODEL, input: 'forget me', store: false });
      assert.equal(unstored.output_text, 'Simulated reply to: forget me');
      await assert.rejects(annAi.responses.retrieve(unstored.id), OpenAI.NotFoundError);
    });

    it('an Idempotency-Key retry starts nothing: it answers the first response, waiting for it when whole', async () => {
      const gate = gateName();
      const key = `k-${gate}`;
      const body = { model: MODEL, input: sim({ reply: 'once only', gate }) };
      const post = (b: unknown) =>
        fetch(`${s.t.url}/openai/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(b) });
      const first = post(body);
      await waitFor(() => s.t.sim.heldAt(gate) > 0, 10_000, 'the first run held');
      const retry = post(body);
      const reused = await post({ ...body, input: 'another request' });
      assert.equal(reused.status, 422);
      s.t.sim.openGate(gate);
      const [a, b] = await Promise.all([first, retry]);
      const [ra, rb] = [(await a.json()) as any, (await b.json()) as any];
      assert.deepEqual([a.status, b.status], [200, 200]);
      assert.equal(rb.id, ra.id, 'the same response');
      assert.deepEqual([ra.output_text, rb.output_text, rb.status], ['once only', 'once only', 'completed']);
      assert.equal(b.headers.get('idempotent-replayed'), 'true');
      assert.equal(s.t.sim.requests.filter((r) => JSON.stringify(r.body ?? '').includes(gate)).length, 1, 'one provider call');
    });
  });
}
