// A second instance on a port already in use must not listen beside the first (uWS shares ports
// by default): it exits non-zero with a message naming the port. Its own file: a child process
// start is slow on a loaded machine, and each file has its own time budget.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { uws, type us_listen_socket } from '../../src/http/uws.ts';
import { startService as start } from '../helpers/process.ts';

describe('a port already in use', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'port-test-'));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('exits non-zero naming the port when the port is taken, instead of sharing it', async () => {
    // The occupant listens as uWS does by default (SO_REUSEPORT): a service that did the same would
    // start beside it and silently take half its connections.
    const occupant = await new Promise<us_listen_socket>((resolve, reject) =>
      uws.App().listen('127.0.0.1', 0, (socket) => (socket ? resolve(socket) : reject(new Error('occupant could not listen')))),
    );
    const port = uws.us_socket_local_port(occupant);
    try {
      await assert.rejects(start({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', ACTOR_THREADS: '1' }), (err: { code: number; out: string }) => {
        assert.equal(err.code, 1);
        assert.match(err.out, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: port ${port} is already in use`));
        return true;
      });
    } finally {
      uws.us_listen_socket_close(occupant);
    }
  });
});
