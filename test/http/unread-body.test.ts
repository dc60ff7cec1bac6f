// A body nobody will read is not kept: a request answered before its body has come (a token that
// names nobody, looked up while the body streams in) closes its connection after the answer, so the
// rest of a large body is neither received nor held. On a real uWS app with the real router.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ADMIN_CALLER } from '../../src/auth/caller.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { BodyPool } from '../../src/http/body-pool.ts';
import { mountRoutes } from '../../src/http/router.ts';
import { listenExclusive, uws, type us_listen_socket } from '../../src/http/uws.ts';
import { waitFor } from '../helpers/wait.ts';

describe('a body nobody will read', () => {
  let listen: us_listen_socket;
  let port: number;
  let handled = 0;

  before(async () => {
    const app = uws.App();
    mountRoutes(
      app,
      [
        // Answers without reading its body (as attach and stop do).
        { method: 'POST', path: '/v1/bodiless', handler: (_req, reply) => reply.json(200, { ok: true }) },
        {
          method: 'POST',
          path: '/v1/start',
          handler: async (req, reply) => {
            handled++;
            reply.json(200, { read: (await req.body()).length });
          },
        },
      ],
      {
        defaultBodyLimit: 32 << 20,
        bodies: new BodyPool(new CpuPool()),
        // As a key-shaped token that names nobody: looked up (a promise), then nobody.
        authenticate: (authorization) => Promise.resolve(authorization === 'Bearer good' ? ADMIN_CALLER : null),
        onError: (err) => err as never,
      },
    );
    listen = await listenExclusive(app, '127.0.0.1', 0);
    port = uws.us_socket_local_port(listen);
  });
  after(() => uws.us_listen_socket_close(listen));

  /** Announces a 16 MB body, sends 1 MB of it, and records what comes back and whether the server closed. */
  const send = (token: string) => {
    const sock = net.connect(port, '127.0.0.1');
    const got = { text: '', closed: false };
    sock.on('data', (b) => (got.text += b.toString('latin1')));
    sock.on('close', () => (got.closed = true));
    sock.on('error', () => {});
    sock.write(`POST /v1/start HTTP/1.1\r\nhost: x\r\nauthorization: ${token}\r\ncontent-type: application/json\r\ncontent-length: ${16 << 20}\r\n\r\n`);
    sock.write(Buffer.alloc(1 << 20, 'x'));
    return { sock, got };
  };

  it('answers 401 and closes the connection instead of taking in the rest', async () => {
    const { sock, got } = send('Bearer css_nobody');
    try {
      await waitFor(() => got.text.startsWith('HTTP/1.1 401'), 10_000, 'the 401');
      // Kept open, the server would go on receiving (and copying) the 15 MB still to come.
      await waitFor(() => got.closed, 5_000, 'the server to close the connection');
      assert.equal(handled, 0);
    } finally {
      sock.destroy();
    }
  });

  it('keeps reading the body of a caller it knows', async () => {
    const { sock, got } = send('Bearer good');
    try {
      sock.write(Buffer.alloc((16 << 20) - (1 << 20), 'x'));
      await waitFor(() => got.text.includes(`{"read":${16 << 20}}`), 20_000, 'the handler to read the whole body');
      assert.equal(got.closed, false, 'a keep-alive connection');
    } finally {
      sock.destroy();
    }
  });

  it('keeps the connection of a request that has no body, answered without reading one', async () => {
    const sock = net.connect(port, '127.0.0.1');
    const got = { text: '', closed: false };
    sock.on('data', (b) => (got.text += b.toString('latin1')));
    sock.on('close', () => (got.closed = true));
    try {
      const request = 'POST /v1/bodiless HTTP/1.1\r\nhost: x\r\nauthorization: Bearer good\r\ncontent-length: 0\r\n\r\n';
      sock.write(request);
      await waitFor(() => got.text.split('HTTP/1.1 200').length === 2, 10_000, 'the first answer');
      sock.write(request);
      await waitFor(() => got.text.split('HTTP/1.1 200').length === 3, 10_000, 'the second answer on the same connection');
      assert.equal(got.closed, false);
    } finally {
      sock.destroy();
    }
  });
});
