// A run cut by a crash (SIGKILL of the real process, mid-stream) reads `failed` in chat.lastRun after
// the restart, with an error saying the service restarted: never `running` forever.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createScratchPostgres, migratedEmbeddedDataDir } from '../helpers/db.ts';
import { startService, stopService } from '../helpers/process.ts';
import { apiDatabases, variantTag, readSse, sim, waitFor } from '../helpers/server.ts';

describe('chat lastRun after a crash', () => {
  // One database is enough (the sweep is the same SQL on both) and keeps two process starts off `make test`'s clock.
  for (const db of apiDatabases().slice(-1)) {
    it(`reads failed, saying the service restarted ${variantTag(db)}`, async () => {
      // A copy of a migrated cluster: the child skips initdb and the migrations.
      const dir = await migratedEmbeddedDataDir();
      const scratch = db === 'postgres' ? await createScratchPostgres() : null;
      const env: Record<string, string> = { DATA_DIR: dir.dataDir, PORT: '0', ACTOR_THREADS: '0', INSTANCE_ID: 'crash-test' };
      if (scratch) env.DATABASE_URL = scratch.url;
      try {
        const first = await startService(env);
        const controller = new AbortController();
        let chatId = '';
        try {
          const res = await fetch(`${first.url}/v1/chat-completions/stream`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: sim({ deltas: 400, rate: 20 }) }] }),
            signal: controller.signal,
          });
          const events = await readSse(res, controller, (ev) => ev.event === 'delta');
          chatId = events[0]!.data.chatId;
          await waitFor(async () => {
            const chat = await fetch(`${first.url}/v1/chats/${chatId}`).then((r) => r.json());
            return chat.chat?.lastRun?.status === 'running';
          }, 10_000, 'the run to be recorded');
        } finally {
          await stopService(first, 'SIGKILL');
        }
        const second = await startService(env);
        try {
          const chat = await fetch(`${second.url}/v1/chats/${chatId}`).then((r) => r.json());
          assert.equal(chat.chat.lastRun.status, 'failed');
          assert.match(chat.chat.lastRun.error, /restarted/);
          assert.ok(chat.chat.lastRun.finishedAt);
        } finally {
          await stopService(second);
        }
      } finally {
        await dir.cleanup();
        await scratch?.drop();
      }
    });
  }
});
