// provider_c / provider_d through the real openai SDK: Chat Completions streaming and not,
// fragmented tool calls, include_usage, custom agent frames, errors, rate, stamps, determinism.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { waitFor } from '../helpers/wait.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('sim/chat', () => {
  const SIM = (o: object): string => `SIM ${JSON.stringify(o)}`;
  let sim: SimHandle;
  let c: OpenAI;
  let d: OpenAI;

  before(async () => {
    sim = await startSimulator({ defaultReply: { mode: 'echo' } });
    c = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_c, maxRetries: 0 });
    d = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_d, maxRetries: 0 });
  });
  after(() => sim.close());

  async function chunks(client: OpenAI, messages: ChatCompletionMessageParam[]): Promise<ChatCompletionChunk[]> {
    const s = await client.chat.completions.create({
      model: 'sim-c-large',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const out: ChatCompletionChunk[] = [];
    for await (const ch of s) out.push(ch);
    return out;
  }

  const textOf = (list: ChatCompletionChunk[]): string => list.map((ch) => ch.choices?.[0]?.delta?.content ?? '').join('');

  describe('chat completions text', () => {
    test('non-streaming', async () => {
      const r = await c.chat.completions.create({
        model: 'sim-c-large',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'What is a tide pool?' },
        ],
      });
      assert.equal(r.object, 'chat.completion');
      assert.equal(r.choices[0]!.message.content, 'Simulated reply to: What is a tide pool?');
      assert.equal(r.choices[0]!.finish_reason, 'stop');
      assert.ok(r.usage!.prompt_tokens > 0);
    });

    test('streaming with include_usage: role chunk, deltas, finish, usage chunk', async () => {
      const list = await chunks(c, [{ role: 'user', content: `x\n${SIM({ reply: 'abcdef', deltas: 3 })}` }]);
      assert.equal(list[0]!.choices[0]!.delta.role, 'assistant');
      assert.equal(textOf(list), 'abcdef');
      assert.equal(list.filter((ch) => ch.choices[0]?.delta?.content).length, 3);
      assert.equal(list.at(-2)!.choices[0]!.finish_reason, 'stop');
      const last = list.at(-1)!;
      assert.deepEqual(last.choices, []);
      assert.equal(last.usage!.completion_tokens, 3);
      for (const ch of list.slice(0, -1)) assert.equal(ch.usage, null);
    });

    test('same request, same text; deltas > length pads to exactly N', async () => {
      const msg: ChatCompletionMessageParam[] = [{ role: 'user', content: `Tell me\n${SIM({ reply: 'ok', deltas: 7 })}` }];
      const a = await chunks(c, msg);
      const b = await chunks(c, msg);
      assert.equal(textOf(a), textOf(b));
      const pieces = a.map((ch) => ch.choices[0]?.delta?.content).filter((t) => t);
      assert.equal(pieces.length, 7);
    });

    test('rate: 10 deltas at 50/s take ~180 ms and arrive in order', async () => {
      const t0 = performance.now();
      const list = await chunks(c, [{ role: 'user', content: SIM({ reply: '0123456789', deltas: 10, rate: 50 }) }]);
      const elapsed = performance.now() - t0;
      assert.equal(textOf(list), '0123456789');
      assert.ok(elapsed >= 170, `took ${elapsed} ms`);
    });

    /** A stream of `directive` read delta by delta: `until(n)` reads until n texts are in, `rest()` to the end. */
    async function stepped(directive: Record<string, unknown>) {
      const s = await c.chat.completions.create({ model: 'sim-c-large', stream: true, messages: [{ role: 'user', content: SIM(directive) }] });
      const it = s[Symbol.asyncIterator]();
      const seen: string[] = [];
      return {
        seen,
        async until(n: number) {
          while (seen.length < n) {
            const t = (await it.next()).value?.choices[0]?.delta?.content;
            if (t) seen.push(t);
          }
        },
        async rest() {
          for (let r = await it.next(); !r.done; r = await it.next()) seen.push(r.value.choices[0]?.delta?.content ?? '');
          return seen.join('');
        },
      };
    }

    test('gate with gateAfter: the stream holds after n deltas until the gate opens, paced or not', async () => {
      for (const rate of [undefined, 100]) {
        const gate = `mid-${rate}`;
        const s = await stepped({ reply: 'abcdef', deltas: 6, rate, gate, gateAfter: 2 });
        await s.until(2);
        await waitFor(() => sim.heldAt(gate) === 1, 10_000, 'the stream to hold at its gate');
        sim.openGate(gate);
        assert.equal(await s.rest(), 'abcdef');
      }
      const bad = await c.chat.completions.create({ model: 'sim-c-large', messages: [{ role: 'user', content: SIM({ gateAfter: 2 }) }] });
      assert.equal(bad.choices[0]!.message.content, "SIM directive error: 'gateAfter' needs a 'gate'");
    });

    test('gate with gateEvery: the stream holds after every n deltas, the k-th time at <gate>-<k>, paced or not', async () => {
      for (const rate of [undefined, 100]) {
        const gate = `step-${rate}`;
        const s = await stepped({ reply: 'abcdefg', deltas: 7, rate, gate, gateEvery: 3 });
        for (const k of [1, 2]) {
          await s.until(3 * k);
          await waitFor(() => sim.heldAt(`${gate}-${k}`) === 1, 10_000, `the stream to hold at its gate ${k}`);
          assert.equal(s.seen.join(''), 'abcdefg'.slice(0, 3 * k), `held after ${3 * k} deltas`);
          sim.openGate(`${gate}-${k}`);
        }
        assert.equal(await s.rest(), 'abcdefg');
        assert.equal(sim.heldAt(`${gate}-3`), 0, 'no hold after the last delta');
      }
      const bad = await c.chat.completions.create({ model: 'sim-c-large', messages: [{ role: 'user', content: SIM({ gate: 'g', gateAfter: 1, gateEvery: 2 }) }] });
      assert.equal(bad.choices[0]!.message.content, "SIM directive error: 'gateEvery' and 'gateAfter' exclude each other");
    });

    test('stamp: each delta is its send time', async () => {
      const before = performance.timeOrigin + performance.now();
      const list = await chunks(c, [{ role: 'user', content: SIM({ deltas: 5, rate: 200, stamp: true }) }]);
      const stamps = list.map((ch) => ch.choices[0]?.delta?.content).filter((t): t is string => !!t);
      assert.equal(stamps.length, 5);
      let prev = before - 1;
      for (const s of stamps) {
        assert.match(s, /^\d+\.\d{3}\|$/);
        const t = Number.parseFloat(s);
        assert.ok(t >= prev, 'stamps do not go back');
        prev = t;
      }
    });

    test('provider_d custom frames reach the SDK as objects without choices', async () => {
      const list = await chunks(d, [{ role: 'user', content: SIM({ reply: 'hi there', custom: true }) }]);
      const custom = list.filter((ch) => !('choices' in ch));
      assert.equal(custom.length, 2);
      assert.ok(custom.some((x) => (x as any).type === 'progress'));
      assert.equal(textOf(list.filter((ch) => 'choices' in ch)), 'hi there');
    });
  });

  describe('chat completions tool calls', () => {
    const script = SIM({
      tools: [
        { name: 'web_search', args: { query: 'tide pools near me' } },
        { name: 'fetch_url', args: { url: 'https://example.org/a' } },
      ],
      toolRounds: 2,
      reply: 'All done.',
    });

    test('fragments keyed by index; id and name only on the first fragment; rounds then answer', async () => {
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: `Research\n${script}` }];
      for (let round = 0; round < 2; round++) {
        const list = await chunks(c, messages);
        const frags = list.flatMap((ch) => ch.choices[0]?.delta?.tool_calls ?? []);
        const calls: { id: string; name: string; args: string }[] = [];
        for (const f of frags) {
          if (f.id) {
            assert.equal(f.type, 'function');
            assert.ok(f.function?.name);
            calls[f.index] = { id: f.id, name: f.function!.name!, args: f.function?.arguments ?? '' };
          } else {
            assert.equal(f.function?.name, undefined);
            calls[f.index]!.args += f.function!.arguments;
          }
        }
        assert.ok(frags.filter((f) => f.index === 0 && !f.id).length >= 2, 'arguments in ≥2 fragments');
        assert.deepEqual(
          calls.map((x) => [x.name, JSON.parse(x.args)]),
          [
            ['web_search', { query: 'tide pools near me' }],
            ['fetch_url', { url: 'https://example.org/a' }],
          ],
        );
        assert.equal(list.find((ch) => ch.choices[0]?.finish_reason)!.choices[0]!.finish_reason, 'tool_calls');
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: calls.map((x) => ({ id: x.id, type: 'function', function: { name: x.name, arguments: x.args } })),
        });
        for (const x of calls) messages.push({ role: 'tool', tool_call_id: x.id, content: `out ${x.name}` });
      }
      const final = await c.chat.completions.create({ model: 'm', messages });
      assert.equal(final.choices[0]!.message.content, 'All done.');
    });

    test('non-streaming tool calls and the default post-tool reply', async () => {
      const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: SIM({ tools: [{ name: 'web_search', args: { q: 1 } }] }) }];
      const r = await c.chat.completions.create({ model: 'm', messages });
      assert.equal(r.choices[0]!.finish_reason, 'tool_calls');
      const call = r.choices[0]!.message.tool_calls![0]!;
      assert.equal(call.type === 'function' && call.function.arguments, '{"q":1}');
      messages.push(r.choices[0]!.message as ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: 'the search output' });
      const r2 = await c.chat.completions.create({ model: 'm', messages });
      assert.equal(r2.choices[0]!.message.content, 'Tool results: the search output');
    });

    test('tool messages must answer the previous tool_calls', async () => {
      await assert.rejects(
        c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_1', content: 'y' }] }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && /must be a response to a preceeding message/.test(e.message),
      );
      await assert.rejects(
        c.chat.completions.create({
          model: 'm',
          messages: [
            { role: 'user', content: 'x' },
            { role: 'assistant', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
            { role: 'user', content: 'y' },
          ],
        }),
        (e: unknown) => e instanceof OpenAI.BadRequestError && /did not have response messages: call_1/.test(e.message),
      );
    });
  });

  describe('chat completions errors', () => {
    test('typed errors for scripted statuses, missing key and invalid requests', async () => {
      await assert.rejects(
        c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: SIM({ status: 429, retryAfter: 3 }) }] }),
        (e: unknown) => e instanceof OpenAI.RateLimitError && e.headers.get('retry-after') === '3',
      );
      await assert.rejects(
        d.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: SIM({ status: 500 }) }] }),
        (e: unknown) => e instanceof OpenAI.InternalServerError && e.status === 500,
      );
      const noKey = new OpenAI({ apiKey: 'k', baseURL: sim.urls.provider_c, maxRetries: 0, defaultHeaders: { Authorization: null } });
      await assert.rejects(noKey.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), OpenAI.AuthenticationError);
      await assert.rejects(c.chat.completions.create({ model: 'm', messages: [] }), (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'empty_array');
      await assert.rejects(
        c.chat.completions.create({ model: 'm', messages: [{ role: 'robot', content: 'x' }] } as any),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].role',
      );
      await assert.rejects(
        c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: [{ type: 'input_text', text: 'x' }] }] } as any),
        (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].content[0].type',
      );
    });

    test('mid-stream: error frame and disconnect both throw from the iterator', async () => {
      for (const failMode of ['event', 'disconnect']) {
        let got = '';
        await assert.rejects(async () => {
          const s = await c.chat.completions.create({
            model: 'm',
            messages: [{ role: 'user', content: SIM({ reply: 'a b c d e f', deltas: 6, failAfter: 3, failMode }) }],
            stream: true,
          });
          for await (const ch of s) got += ch.choices[0]?.delta?.content ?? '';
        }, failMode === 'event' ? (e: unknown) => e instanceof OpenAI.APIError && e.status === undefined : Error);
        assert.equal(got, 'a b c', failMode);
      }
    });
  });

  describe('chat completions models and controls', () => {
    test('model lists, and failModels breaks then restores them', async () => {
      const ids: string[] = [];
      for await (const m of d.models.list()) ids.push(m.id);
      assert.deepEqual(ids, ['sim-d-agent', 'sim-d-small']);
      const ctl = (body: object): Promise<Response> => fetch(`http://127.0.0.1:${sim.port}/__control`, { method: 'POST', body: JSON.stringify(body) });
      await ctl({ failModels: ['provider_c'] });
      await assert.rejects(c.models.list(), OpenAI.InternalServerError);
      await ctl({ reset: true });
      assert.equal((await c.models.list()).data.length, 2);
    });
  });
});
