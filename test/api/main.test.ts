// `make run` as a user meets it: the real entry point in its own process, with no configuration but
// a data directory and a port. It logs its address, serves, stops cleanly on SIGTERM, and what it
// stored is there after a restart. A bad variable stops the start with a message naming it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startService as start, stopService as stop } from '../helpers/process.ts';

describe('the service process', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'main-test-'));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('starts on the embedded database with the simulator, stops on SIGTERM, and keeps its data', async () => {
    const env = { DATA_DIR: dataDir, PORT: '0', ACTOR_THREADS: '1' };
    const first = await start(env);
    assert.match(first.output(), /offline simulator/, 'says which upstreams are simulated');
    const created = await fetch(`${first.url}/v1/chats`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'survives restarts' }),
    }).then((r) => r.json());
    const completion = await fetch(`${first.url}/v1/chat-completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: created.chat.id, provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(completion.status, 200, 'a completion is served end to end from the simulator');
    assert.equal(await stop(first), 0);
    assert.match(first.output(), /stopped/);

    const second = await start(env);
    try {
      const chat = await fetch(`${second.url}/v1/chats/${created.chat.id}`).then((r) => r.json());
      assert.equal(chat.chat.title, 'survives restarts');
      assert.deepEqual(chat.chat.messages.map((m: { role: string }) => m.role), ['user', 'assistant']);
    } finally {
      assert.equal(await stop(second), 0);
    }
  });

  it('refuses to start on a bad variable, naming it', async () => {
    await assert.rejects(start({ DATA_DIR: dataDir, PORT: 'eighty' }), (err: { code: number; out: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.out, /PORT: must be a whole number/);
      return true;
    });
  });
});
