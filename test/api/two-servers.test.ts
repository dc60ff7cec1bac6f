// Two servers in one process (as tests run them) share no state: a stream open on one is counted by
// its own /metrics only. And a server's stop closes everything it opened, last opened first (its
// 'closed' debug lines), with a stream still open, while the other server goes on serving.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startServer, type Server } from '../../src/app/app.ts';
import { loadConfig } from '../../src/base/config.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { migratedEmbeddedDataDir } from '../helpers/db.ts';
import { sim, simEnv, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';

const STREAM_BODY = JSON.stringify({ provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: sim({ deltas: 400, rate: 20 }) }] });

/** css_open_sse_streams as `url`'s /metrics reports it. */
async function openStreams(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^css_open_sse_streams (\d+)$/m.exec(text);
  assert.ok(m, 'css_open_sse_streams is reported');
  return Number(m[1]);
}

/** Starts a long stream on `url` and resolves once its first delta has arrived; the stream stays open. */
async function openLongStream(url: string): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const res = await fetch(`${url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: STREAM_BODY });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('event: delta')) {
    const { value, done } = await reader.read();
    assert.ok(!done, `the stream ended before its first delta: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
  return reader;
}

describe('two servers in one process', () => {
  let simulator: SimHandle;
  let a: Server;
  let b: TestServer;
  let cleanup: () => Promise<void>;
  const lines: string[] = [];

  before(async () => {
    simulator = await startSimulator({ defaultReply: { mode: 'echo' } });
    const dir = await migratedEmbeddedDataDir();
    cleanup = dir.cleanup;
    const config = loadConfig({ ...simEnv(simulator), PORT: '0', HOST: '127.0.0.1', ACTOR_THREADS: '1', DATA_DIR: dir.dataDir });
    a = await startServer(config, { log: pino({ level: 'debug' }, { write: (line: string) => lines.push(line) }) });
    b = await startTestServer({ sim: simulator });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await cleanup?.();
    await simulator?.close();
  });

  it('count only their own streams, and one stops in reverse order while the other serves on', { timeout: 120_000 }, async () => {
    const reader = await openLongStream(a.url);
    await waitFor(async () => (await openStreams(a.url)) === 1, 20_000, "the first server's open stream in its metrics");
    assert.equal(await openStreams(b.url), 0, "the other server's metrics do not count it");

    await a.close();
    await reader.cancel().catch(() => {});
    const closed = lines.map((l) => JSON.parse(l) as { msg: string; resource?: string }).filter((l) => l.msg === 'closed').map((l) => l.resource);
    assert.deepEqual(closed, [
      'listener',
      'models',
      'overload lag',
      'callers',
      'supervisor',
      'sse streams',
      'provider resilience',
      'cluster',
      'write retries',
      'heartbeat',
      'control database',
      'database',
      'cpu pool',
      'upstreams',
    ]);
    assert.ok(!lines.some((l) => l.includes('closing failed')), lines.join(''));

    const reply = await b.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: 'still here' }] });
    assert.deepEqual([reply.status, reply.events.at(-1)?.event], [200, 'done'], 'the other server still streams');
    assert.equal(await openStreams(b.url), 0);
  });
});
