// A keyed stream whose run was cut by a crash (SIGKILL of the real process, mid-stream): the restart
// records the LlmCall as failed, and a retry with the same Idempotency-Key after it replays that outcome
// as a stream: the first request's `meta` (the spec's shape: chatId, callId, provider, model), then
// `error`. Its own file: two process starts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { createScratchPostgres } from '../helpers/db.ts';
import { keyed } from '../helpers/idempotency.ts';
import { startService, stopService } from '../helpers/process.ts';
import { NEEDS_POSTGRES, readSse, sim, waitFor, type SseEvent } from '../helpers/server.ts';

describe('a keyed stream retried after a crash', { skip: NEEDS_POSTGRES }, () => {
  it('replays the first meta, provider and model included, then the recorded error', async () => {
    const scratch = await createScratchPostgres();
    const env: Record<string, string> = { DATABASE_URL: scratch.url, PORT: '0', ACTOR_THREADS: '0', INSTANCE_ID: 'keyed-crash' };
    const key = randomUUID();
    const body = JSON.stringify({ provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: sim({ deltas: 400, rate: 20 }) }] });
    const post = (url: string, signal?: AbortSignal) =>
      fetch(`${url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json', ...keyed(key) }, body, signal });
    try {
      let meta: SseEvent['data'];
      const first = await startService(env);
      try {
        const controller = new AbortController();
        const events = await readSse(await post(first.url, controller.signal), controller, (ev) => ev.event === 'delta');
        meta = events[0]!.data;
        assert.equal(events[0]!.event, 'meta');
        await waitFor(async () => (await fetch(`${first.url}/v1/chats/${meta.chatId}`).then((r) => r.json())).chat?.lastRun?.status === 'running', 10_000, 'the run to be recorded');
      } finally {
        await stopService(first, 'SIGKILL');
      }
      const second = await startService(env);
      try {
        const res = await post(second.url);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('idempotent-replayed'), 'true');
        const replay = await readSse(res, new AbortController());
        assert.deepEqual(replay.map((e) => e.event), ['meta', 'error']);
        assert.deepEqual(replay[0]!.data, meta, 'the first request\'s meta');
        assert.match(replay[1]!.data.message, /restarted/);
      } finally {
        await stopService(second);
      }
    } finally {
      await scratch.drop();
    }
  });
});
