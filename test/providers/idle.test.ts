// A stream's no-progress deadline (eachFrame, PROVIDER_TIMEOUT_MS): a provider that keeps its connection
// alive with SSE comments or pings but sends no data fails at the deadline, whichever body the transport
// gives (a PushBody on HTTP/1.1, a Node Readable on HTTP/2, a web stream); a stream that keeps sending
// data outlives the deadline. The adapters run on the official SDKs against a local server.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createProviders } from '../../src/providers/index.ts';
import { eachFrame } from '../../src/providers/session.ts';
import { idleLimit, openaiFrames, SseFrames } from '../../src/providers/sse.ts';
import { ProviderError, type ProviderAdapter, type ProviderName } from '../../src/providers/types.ts';
import { waitFor } from '../helpers/wait.ts';
import { collect, failure, request } from './helpers.ts';

const IDLE_MS = 500;
/** Keep-alives and data come this often: far inside the deadline, so only what they carry decides. */
const EVERY_MS = 100;
/** Each test's own deadline: a stream the deadline never ends would otherwise hold the file for ever. */
const WITHIN = { timeout: 20 * IDLE_MS };

const data = (frame: unknown, event?: string) => (event ? `event: ${event}\n` : '') + `data: ${JSON.stringify(frame)}\n\n`;
const chunk = (delta: unknown, finish: string | null = null) => data({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
const textDelta = (delta: string) => ({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'm', output_index: 0, content_index: 0, delta });
const messageStart = { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 1, output_tokens: 1 } } };
const blockDelta = { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hal' } };

/** What each stream sends: `first` at once, then `repeat` every EVERY_MS (the i-th time `repeat(i)`), ending when that gives null. */
interface Plan {
  first: string;
  repeat: (i: number) => string | null;
}

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('providers/idle', () => {
  let server: Server;
  let providers: Map<ProviderName, ProviderAdapter>;
  let plan: Plan;
  /** Responses the client closed before their end. */
  let closedEarly = 0;

  before(async () => {
    server = createServer((req, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(plan.first);
        let i = 0;
        const timer = setInterval(() => {
          const next = plan.repeat(i++);
          if (next === null) res.end();
          else res.write(next);
        }, EVERY_MS);
        res.on('close', () => {
          clearInterval(timer);
          if (!res.writableFinished) closedEarly++;
        });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    providers = createProviders({
      PROVIDER_TIMEOUT_MS: IDLE_MS,
      PROVIDER_A_API_KEY: 'k', PROVIDER_A_BASE_URL: `${base}/v1`,
      PROVIDER_B_API_KEY: 'k', PROVIDER_B_BASE_URL: base,
      PROVIDER_C_API_KEY: 'k', PROVIDER_C_BASE_URL: `${base}/v1`,
      AGENT_PROVIDER_API_KEY: 'k', AGENT_PROVIDER_API_BASE_URL: `${base}/v1`,
    });
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });

  const KEEP_ALIVES: Record<ProviderName, Plan> = {
    provider_a: { first: data(textDelta('Hal'), 'response.output_text.delta'), repeat: () => ': keep-alive\n\n' },
    provider_b: { first: data(messageStart, 'message_start') + data(blockDelta, 'content_block_delta'), repeat: () => data({ type: 'ping' }, 'ping') },
    provider_c: { first: chunk({ role: 'assistant', content: 'Hal' }), repeat: () => ': keep-alive\n\n' },
    // An agent endpoint's own frames that carry no text are no progress either.
    provider_d: { first: chunk({ content: 'Hal' }), repeat: () => data({ type: 'agent.heartbeat' }, 'agent.heartbeat') },
  };

  for (const [name, keepAlive] of Object.entries(KEEP_ALIVES) as [ProviderName, Plan][]) {
    test(`${name}: a stream that only keeps its connection alive fails at the deadline and is closed`, WITHIN, async () => {
      plan = keepAlive;
      const closed = closedEarly;
      let texts = 0;
      const e = await failure(providers.get(name)!.startSession(request({})), (n) => (texts = n));
      assert.equal(texts, 1, 'the text before the keep-alives came through');
      assert.ok(e instanceof ProviderError);
      assert.equal(e.message, `${name} sent no data for ${IDLE_MS} ms`);
      assert.equal(e.timedOut, true);
      await waitFor(() => closedEarly > closed, 5_000, 'the provider connection to be closed');
    });
  }

  test('a stream that sends data more often than the deadline outlives it', WITHIN, async () => {
    const deltas = Math.ceil((3 * IDLE_MS) / EVERY_MS);
    plan = { first: chunk({ role: 'assistant', content: '0' }), repeat: (i) => (i < deltas ? chunk({ content: ` ${i + 1}` }) : i === deltas ? chunk({}, 'stop') + 'data: [DONE]\n\n' : null) };
    const r = await collect(providers.get('provider_c')!.startSession(request({})));
    assert.equal(r.deltas, deltas + 1);
    assert.equal(r.end.finishReason, 'stop');
  });

  // The bodies the HTTP/2 transport and a client on the global fetch give, read by eachFrame itself.
  const sse = () => new SseFrames(new Headers(), openaiFrames, idleLimit('provider_c', IDLE_MS));
  const expired = (err: unknown) => err instanceof ProviderError && err.message === `provider_c sent no data for ${IDLE_MS} ms`;

  test('eachFrame over a node Readable: keep-alives alone fail at the deadline and destroy the stream', WITHIN, async () => {
    const body = new PassThrough();
    const frames: unknown[] = [];
    const done = eachFrame({ body } as unknown as Response, sse(), new AbortController().signal, (f) => frames.push(f));
    body.write(chunk({ content: 'Hal' }));
    const timer = setInterval(() => body.write(': keep-alive\n\n'), EVERY_MS);
    try {
      await assert.rejects(done, expired);
    } finally {
      clearInterval(timer);
    }
    assert.equal(frames.length, 1);
    assert.equal(body.destroyed, true);
  });

  test('eachFrame over a web stream: keep-alives alone fail at the deadline and cancel the stream', WITHIN, async () => {
    let cancelled: unknown;
    let timer: NodeJS.Timeout | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(chunk({ content: 'Hal' })));
        timer = setInterval(() => controller.enqueue(new TextEncoder().encode(': keep-alive\n\n')), EVERY_MS);
      },
      cancel(reason) {
        clearInterval(timer);
        cancelled = reason;
      },
    });
    const frames: unknown[] = [];
    await assert.rejects(eachFrame({ body } as unknown as Response, sse(), new AbortController().signal, (f) => frames.push(f)), expired);
    assert.equal(frames.length, 1);
    assert.ok(expired(cancelled), 'the stream was cancelled with the deadline’s error');
  });
});
