// provider_b through the real @anthropic-ai/sdk: Messages streaming and not, tool_use rounds,
// images, typed errors (529 included), mid-stream failures, and continuing a trailing assistant turn.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('sim/messages', () => {
  const SIM = (o: object): string => `SIM ${JSON.stringify(o)}`;
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
  let sim: SimHandle;
  let b: Anthropic;

  before(async () => {
    sim = await startSimulator({ defaultReply: { mode: 'echo' } });
    b = new Anthropic({ apiKey: 'k', baseURL: sim.urls.provider_b, maxRetries: 0 });
  });
  after(() => sim.close());

  const textOf = (m: Anthropic.Message): string => m.content.map((x) => (x.type === 'text' ? x.text : '')).join('');

  describe('provider_b text', () => {
    test('create, non-streaming', async () => {
      const m = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, system: 'Be kind.', messages: [{ role: 'user', content: 'Hello Messages' }] });
      assert.equal(m.type, 'message');
      assert.equal(textOf(m), 'Simulated reply to: Hello Messages');
      assert.equal(m.stop_reason, 'end_turn');
      assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
    });

    test('create({stream:true}) event order', async () => {
      const s = await b.messages.create({
        model: 'sim-b-large',
        max_tokens: 256,
        stream: true,
        messages: [{ role: 'user', content: SIM({ reply: 'one two three', deltas: 3 }) }],
      });
      const types: string[] = [];
      let text = '';
      for await (const ev of s) {
        types.push(ev.type);
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
        if (ev.type === 'message_delta') assert.equal(ev.usage.output_tokens, 3);
      }
      assert.deepEqual(types, [
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      assert.equal(text, 'one two three');
    });

    test('messages.stream() final message, and system/attachments echo', async () => {
      const stream = b.messages.stream({
        model: 'sim-b-large',
        max_tokens: 256,
        system: [{ type: 'text', text: 'System one.' }],
        messages: [{ role: 'user', content: SIM({ echoSystem: true }) }],
      });
      let deltas = 0;
      stream.on('text', () => deltas++);
      const final = await stream.finalMessage();
      assert.equal(textOf(final), 'SYSTEM:System one.');
      assert.ok(deltas >= 1);
      const m = await b.messages.create({
        model: 'sim-b-large',
        max_tokens: 256,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
              { type: 'text', text: SIM({ echoInput: true }) },
            ],
          },
        ],
      });
      const echo = JSON.parse(textOf(m));
      assert.deepEqual(echo.parts, ['image', 'text']);
      assert.deepEqual(echo.attachments, [{ type: 'image', mediaType: 'image/png', bytes: 70 }]);
    });
  });

  describe('provider_b tools', () => {
    test('tool_use rounds, streamed and not', async () => {
      const script = SIM({ tools: [{ name: 'web_search', args: { query: 'x' } }, { name: 'clock', args: {} }], reply: 'fine' });
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: script }];
      const streamed = await b.messages.stream({ model: 'm', max_tokens: 100, messages }).finalMessage();
      assert.equal(streamed.stop_reason, 'tool_use');
      const uses = streamed.content.filter((x): x is Anthropic.ToolUseBlock => x.type === 'tool_use');
      assert.deepEqual(uses.map((u) => [u.name, u.input]), [['web_search', { query: 'x' }], ['clock', {}]]);
      messages.push({ role: 'assistant', content: streamed.content });
      messages.push({ role: 'user', content: uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: 'ok' })) });
      const final = await b.messages.create({ model: 'm', max_tokens: 100, messages });
      assert.equal(textOf(final), 'fine');
      await assert.rejects(
        b.messages.create({
          model: 'm',
          max_tokens: 100,
          messages: [messages[0]!, messages[1]!, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'x' }] }],
        }),
        (e: unknown) => e instanceof Anthropic.BadRequestError && /unexpected `tool_use_id`/.test(e.message),
      );
    });
  });

  describe('provider_b errors', () => {
    test('529, 500, 429 and 401 map to the SDK classes', async () => {
      const ask = (o: object) => b.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: SIM(o) }] });
      await assert.rejects(ask({ status: 529 }), (e: unknown) => e instanceof Anthropic.InternalServerError && e.status === 529 && (e.error as any).error.type === 'overloaded_error');
      await assert.rejects(ask({ status: 500 }), (e: unknown) => e instanceof Anthropic.InternalServerError && e.status === 500);
      await assert.rejects(ask({ status: 429, retryAfter: 2 }), (e: unknown) => e instanceof Anthropic.RateLimitError && e.headers?.get('retry-after') === '2');
      const res = await fetch(`${sim.urls.provider_b}/v1/messages`, { method: 'POST', headers: { 'anthropic-version': '2023-06-01' }, body: '{}' });
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as any).error.type, 'authentication_error');
      const noKey = new Anthropic({ apiKey: 'k', baseURL: sim.urls.provider_b, maxRetries: 0, defaultHeaders: { Authorization: null, 'X-Api-Key': null } });
      await assert.rejects(noKey.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), Anthropic.AuthenticationError);
    });

    test('invalid requests → BadRequestError with the real messages', async () => {
      await assert.rejects(
        b.messages.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] } as any),
        (e: unknown) => e instanceof Anthropic.BadRequestError && /max_tokens: Field required/.test(e.message),
      );
      await assert.rejects(
        b.messages.create({ model: 'm', max_tokens: 5, messages: [] }),
        (e: unknown) => e instanceof Anthropic.BadRequestError && /at least one message/.test(e.message),
      );
      await assert.rejects(
        b.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'system', content: 'x' }] } as any),
        Anthropic.BadRequestError,
      );
    });

    test('mid-stream error event and disconnect throw', async () => {
      for (const failMode of ['event', 'disconnect']) {
        let got = '';
        await assert.rejects(async () => {
          const s = b.messages.stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: SIM({ reply: 'abcd', deltas: 4, failAfter: 2, failMode }) }] });
          for await (const ev of s) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') got += ev.delta.text;
        }, failMode === 'event' ? (e: unknown) => e instanceof Anthropic.APIError && e.status === undefined : Error);
        assert.equal(got, 'ab', failMode);
      }
    });
  });

  test('provider_b model list pages end with has_more false', async () => {
    const ids: string[] = [];
    for await (const m of b.models.list({ limit: 2 })) ids.push(m.id);
    assert.deepEqual(ids, ['sim-b-large', 'sim-b-small', 'sim-b-haiku']);
  });

  // The Messages API continues a trailing assistant turn; so does the simulator: a prefix of the
  // scripted answer is continued with the rest only (streamed and not), anything else answers as before.
  const CONTINUED = 'The tide comes in twice a day, pulled by the moon.';
  const ASK = `tides\nSIM ${JSON.stringify({ reply: CONTINUED, deltas: 10 })}`;
  const ask = (assistant: string): Anthropic.MessageParam[] => [
    { role: 'user', content: ASK },
    { role: 'assistant', content: assistant },
  ];

  async function streamed(messages: Anthropic.MessageParam[]): Promise<string[]> {
    const s = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, stream: true, messages });
    const pieces: string[] = [];
    for await (const ev of s) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') pieces.push(ev.delta.text);
    return pieces;
  }

  describe('provider_b continuation of a trailing assistant turn', () => {
    test('streamed: only the rest, from where the prefix ends', async () => {
      const prefix = CONTINUED.slice(0, 17);
      const pieces = await streamed(ask(prefix));
      assert.equal(prefix + pieces.join(''), CONTINUED);
      assert.ok(pieces.length < 10, `fewer pieces than the whole answer's ten (${pieces.length})`);
    });

    test('non-streaming: the rest as the message, fewer output tokens', async () => {
      const whole = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, messages: [{ role: 'user', content: ASK }] });
      const m = await b.messages.create({ model: 'sim-b-large', max_tokens: 256, messages: ask(CONTINUED.slice(0, 30)) });
      const text = m.content.map((x) => (x.type === 'text' ? x.text : '')).join('');
      assert.equal(CONTINUED.slice(0, 30) + text, CONTINUED);
      assert.ok(m.usage.output_tokens < whole.usage.output_tokens);
    });

    test('a trailing turn that is no prefix of the answer gets the whole answer', async () => {
      assert.equal((await streamed(ask('Something else'))).join(''), CONTINUED);
    });
  });
});
