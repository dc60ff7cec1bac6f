// POST /v1/chats/title/suggest through the real server, provider_a simulator and database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanTitle, TITLE_INSTRUCTION } from '../../src/chat/title.ts';
import { apiDatabases, variantTag, sim, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

for (const db of apiDatabases()) {
  describe(`title suggestion ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db, env: { TITLE_MODEL: 'sim-a-nano' } });
    });
    after(() => t.close());

    const newChat = async (body: Record<string, unknown> = {}) => (await t.call('POST', '/v1/chats', body)).body.chat;
    const getChat = async (id: string) => (await t.call('GET', `/v1/chats/${id}`)).body.chat;
    const suggest = (chatId: string, content: string) => t.call('POST', '/v1/chats/title/suggest', { chatId, content });
    const responsesCalls = () => t.sim.requests.filter((r) => r.upstream === 'provider_a' && r.path.endsWith('/responses'));
    const llmCalls = async (chatId: string) =>
      (await t.server.ctx.pool.query('SELECT model, status, error FROM llm_calls WHERE chat_id = $1', [chatId])).rows;

    it('generates a title with TITLE_MODEL, cleans it, stores it and returns the chat', async () => {
      const chat = await newChat();
      const before = responsesCalls().length;
      const content = sim({ reply: '"Planning A Japan Trip."' }, 'Help me plan two weeks in Japan');
      const r = await suggest(chat.id, content);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.chat.id, chat.id);
      assert.equal(r.body.chat.title, 'Planning A Japan Trip');
      assert.equal((await getChat(chat.id)).title, 'Planning A Japan Trip');
      const calls = responsesCalls();
      assert.equal(calls.length, before + 1);
      const body = calls.at(-1)!.body;
      assert.equal(body.model, 'sim-a-nano');
      assert.equal(body.instructions, TITLE_INSTRUCTION);
      assert.equal(body.tools, undefined);
      assert.ok(!body.stream);
      assert.equal(body.store, false);
      assert.equal(JSON.stringify(body.input).includes('Help me plan two weeks in Japan'), true);
      assert.deepEqual(await llmCalls(chat.id), [{ model: 'sim-a-nano', status: 'succeeded', error: null }]);
    });

    it('keeps a generated title to one line and a few words', async () => {
      const chat = await newChat();
      const r = await suggest(chat.id, sim({ reply: 'Title: One two three four five six seven eight\nsecond line' }));
      assert.equal(r.body.chat.title, 'One two three four five six');
    });

    it('returns a titled chat unchanged without calling the model', async () => {
      const chat = await newChat({ title: 'My own title' });
      const before = responsesCalls().length;
      const r = await suggest(chat.id, sim({ reply: 'Something Else' }));
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.chat, chat);
      assert.equal(responsesCalls().length, before);
    });

    it('keeps a title set while generation is in flight', async () => {
      const chat = await newChat();
      const before = responsesCalls().length;
      const g = gateName();
      const pending = suggest(chat.id, sim({ reply: 'Generated Title', gate: g }));
      // In flight: the model has the request (its answer is held at the gate until the PATCH is done).
      await waitFor(() => t.sim.heldAt(g) === 1, 10_000, 'the title request to reach the model');
      assert.equal(responsesCalls().length, before + 1);
      const patched = await t.call('PATCH', `/v1/chats/${chat.id}`, { title: 'Typed by the user' });
      assert.equal(patched.status, 200);
      t.sim.openGate(g);
      const r = await pending;
      assert.equal(r.status, 200);
      assert.equal(r.body.chat.title, 'Typed by the user');
      assert.equal((await getChat(chat.id)).title, 'Typed by the user');
    });

    it('two suggestions at once share one model call and one LlmCall', async () => {
      const chat = await newChat();
      const before = responsesCalls().length;
      const g = gateName();
      const content = sim({ reply: 'Shared Title', gate: g });
      const both = Promise.all([suggest(chat.id, content), suggest(chat.id, content)]);
      // Sent together; the model's answer waits until one of them has reached it. (One that came
      // after the answer would find the chat titled and return it without a call: the same verdict.)
      await waitFor(() => t.sim.heldAt(g) > 0, 10_000, 'the title request to reach the model');
      t.sim.openGate(g);
      const [a, b] = await both;
      assert.deepEqual([a.status, b.status], [200, 200]);
      assert.deepEqual([a.body.chat.title, b.body.chat.title], ['Shared Title', 'Shared Title']);
      assert.equal(responsesCalls().length, before + 1);
      assert.deepEqual(await llmCalls(chat.id), [{ model: 'sim-a-nano', status: 'succeeded', error: null }]);
    });

    it('a title run is not listed as an active chat or search run', async () => {
      const chat = await newChat();
      const g = gateName();
      const pending = suggest(chat.id, sim({ reply: 'Slow Title', gate: g }));
      // It is a run while it goes (the gauge counts it), so the empty list below is a real exclusion.
      const titleRuns = async () => Number(/css_active_runs\{kind="title"\} (\d+)/.exec((await t.call('GET', '/metrics')).body as string)?.[1]);
      await waitFor(async () => (await titleRuns()) === 1, 5000, 'the title run to be active');
      const active = await t.call('GET', '/v1/active-runs');
      assert.deepEqual(active.body, { chats: [], searches: [] });
      t.sim.openGate(g);
      assert.equal((await pending).body.chat.title, 'Slow Title');
    });

    it('a failed generation answers 502 with the reason and leaves the chat untouched', async () => {
      const chat = await newChat({ messages: [{ role: 'user', content: 'hi' }] });
      const before = await getChat(chat.id);
      const r = await suggest(chat.id, sim({ status: 400 }));
      assert.equal(r.status, 502);
      assert.match(r.body.message, /^title generation failed: provider_a error 400/);
      assert.deepEqual(await getChat(chat.id), before);
      const [call] = await llmCalls(chat.id);
      assert.equal(call.status, 'failed');
      assert.equal(call.error, r.body.message);
    });

    it('a rate-limited title call answers 429 and marks its LlmCall failed', async () => {
      const chat = await newChat();
      const r = await suggest(chat.id, sim({ status: 429 }));
      assert.equal(r.status, 429, JSON.stringify(r.body));
      assert.match(r.body.message, /^title generation failed: /);
      assert.equal((await getChat(chat.id)).title, null);
      assert.deepEqual(await llmCalls(chat.id), [{ model: 'sim-a-nano', status: 'failed', error: r.body.message }]);
    });

    it('a reply with nothing usable is a failure too', async () => {
      const chat = await newChat();
      const r = await suggest(chat.id, sim({ reply: '  "…"  ' }));
      assert.equal(r.status, 502);
      assert.match(r.body.message, /returned no usable title/);
      assert.equal((await getChat(chat.id)).title, null);
    });

    it('unknown chat → 404 chat not found; blank content → 400', async () => {
      const r = await suggest('no-such-chat', 'hello');
      assert.equal(r.status, 404);
      assert.equal(r.body.message, 'chat not found');
      const chat = await newChat();
      const blank = await suggest(chat.id, '   ');
      assert.equal(blank.status, 400);
      assert.match(blank.body.message, /content must not be blank/);
      const missing = await t.call('POST', '/v1/chats/title/suggest', { chatId: chat.id });
      assert.equal(missing.status, 400);
    });

    it('is not shadowed by /v1/chats/:chatId routes, nor shadows them', async () => {
      // A chat literally named "title" stays reachable through the :chatId routes.
      assert.equal((await t.call('GET', '/v1/chats/title')).body.message, 'chat not found');
      assert.equal((await t.call('POST', '/v1/chats/title/messages', { role: 'user', content: 'x' })).body.message, 'chat not found');
      const wrongMethod = await t.call('GET', '/v1/chats/title/suggest');
      assert.equal(wrongMethod.status, 405);
      const viaProxy = await t.call('POST', '/api/v1/chats/title/suggest', { chatId: 'nope', content: 'x' });
      assert.equal(viaProxy.status, 404);
      assert.equal(viaProxy.body.message, 'chat not found');
    });
  });
}

describe('cleanTitle', () => {
  const cases: Array<[string, string]> = [
    ['Trip Planning', 'Trip Planning'],
    ['"Trip Planning."', 'Trip Planning'],
    ['“Trip Planning”', 'Trip Planning'],
    ["'Rust async basics'!", 'Rust async basics'],
    ['**Title:** Budget Review', 'Budget Review'],
    ['# Heading Style Title', 'Heading Style Title'],
    ['\n\n  Second Try  \nmore', 'Second Try'],
    ['a b c d e f g h i', 'a b c d e f'],
    ['x'.repeat(120), 'x'.repeat(80)],
    ['Why is the sky blue?', 'Why is the sky blue'],
    ['   ', ''],
    // A lead-in line that only announces the title (small models write one) is not the title.
    ['Here is a title for this conversation:\n\n**Japan Trip Planning**', 'Japan Trip Planning'],
    ['Title:\nJapan Trip Planning', 'Japan Trip Planning'],
    ['**Suggested title:**\n"Japan Trip Planning"', 'Japan Trip Planning'],
    ['Budget: Q3 Review', 'Budget: Q3 Review'],
    ['Notes:', 'Notes'],
    // Quotes that belong to the title stay: only a pair around all of it, or a quote with no partner, goes.
    ['Review of "Dune"', 'Review of "Dune"'],
    ['"Dune" Book Review', '"Dune" Book Review'],
    ['“Dune” Explained', '“Dune” Explained'],
    ['Exploring `useEffect`', 'Exploring `useEffect`'],
    ['The Word "Hello".', 'The Word "Hello"'],
    ['"Dune" and "Foundation"', '"Dune" and "Foundation"'],
    ['"Trip Planning', 'Trip Planning'],
    ['„Krieg und Frieden“', 'Krieg und Frieden'],
    ['«Guerre et paix»', 'Guerre et paix'],
  ];
  for (const [raw, want] of cases) it(JSON.stringify(raw), () => assert.equal(cleanTitle(raw), want));
});
