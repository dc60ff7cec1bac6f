// The refusal of a start before its body is read (src/http/early-refusal.ts), on a real uWS app with
// the real router and admission: while draining, or shedding a flood the caller is part of, a start
// route answers from the headers alone (a body that never finishes still gets its 503, and the
// handler never runs); another user's start is taken; a start carrying an Idempotency-Key, which may
// be the retry of a running run, goes the ordinary way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Admission } from '../../src/admission/admission.ts';
import { QUEUE_DEFAULTS } from '../../src/admission/start-queue.ts';
import { ADMIN_CALLER } from '../../src/auth/caller.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { BodyPool } from '../../src/http/body-pool.ts';
import { startShedding, withoutIdempotencyKey } from '../../src/http/early-refusal.ts';
import { mountRoutes } from '../../src/http/router.ts';
import { listenExclusive, uws, type us_listen_socket } from '../../src/http/uws.ts';
import net from 'node:net';
import { rawExchange } from '../helpers/raw-http.ts';
import { waitFor } from '../helpers/server.ts';

/** Headers of a start whose body is announced at 100,000 bytes, followed by only a few of them. */
const unfinished = (headers = '') =>
  `POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n${headers}\r\n{"messages":`;
const whole = (headers = '') => `POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n${headers}\r\n{}`;

describe('early refusal of starts', () => {
  let listen: us_listen_socket;
  let port: number;
  const clock = { t: 0 };
  const admission = new Admission({ maxActiveRuns: 100, adaptive: true, now: () => clock.t, limit: { initial: 1, min: 1, max: 1 } });
  /** The supervisor's counts, moved here as it would move them. */
  const counts = { activeCount: 0, startBacklog: 0 };
  admission.watchRuns(counts);
  /** `Bearer other` is another user than the admin. */
  /** `Bearer slow` is the admin's token looked up (a promise), as an API key not yet cached is. */
  const authenticate = (authorization: string) =>
    authorization === 'Bearer other' ? { ...ADMIN_CALLER, userId: 'other', admin: false } : authorization === 'Bearer slow' ? new Promise<typeof ADMIN_CALLER>((r) => setImmediate(() => r(ADMIN_CALLER))) : ADMIN_CALLER;
  /** Bodies the start handler has read to the end. */
  const handled: number[] = [];

  before(async () => {
    const app = uws.App();
    mountRoutes(
      app,
      [
        {
          method: 'POST',
          path: '/v1/start',
          headers: ['idempotency-key'],
          startsRun: withoutIdempotencyKey,
          handler: async (req, reply) => {
            const body = await req.body();
            handled.push(body.length);
            reply.json(200, { read: body.length });
          },
        },
        // A start at a path with a parameter: refused by the ordinary path, after routing (before its body).
        {
          method: 'POST',
          path: '/v1/start/:id',
          startsRun: () => true,
          handler: async (req, reply) => {
            const body = await req.body();
            handled.push(body.length);
            reply.json(200, { read: body.length });
          },
        },
        { method: 'GET', path: '/v1/other', handler: (_req, reply) => reply.json(200, { other: true }) },
      ],
      { defaultBodyLimit: 1 << 20, bodies: new BodyPool(new CpuPool()), authenticate, onError: (err) => err as never, shed: startShedding(admission) },
    );
    listen = await listenExclusive(app, '127.0.0.1', 0);
    port = uws.us_socket_local_port(listen);
  });
  after(() => uws.us_listen_socket_close(listen));

  it('takes starts the ordinary way while no flood is judged to last', async () => {
    const res = await rawExchange(port, whole());
    assert.equal(res.status, 200, res.head);
    assert.deepEqual(handled, [2]);
  });

  it('answers a start of the flooding user at once, without its body, and takes another user\'s', async () => {
    // One start in flight (the limit), one waiting: once it has waited longer than the interval the
    // starts come faster than they go.
    assert.equal(admission.take('in flight', 'admin'), true);
    counts.startBacklog++;
    assert.equal(admission.take('waiting', 'admin'), false);
    clock.t += QUEUE_DEFAULTS.intervalMs + 1;
    const res = await rawExchange(port, unfinished());
    assert.equal(res.status, 503, res.head);
    assert.equal(res.complete, true);
    assert.deepEqual(JSON.parse(res.body), { message: 'server is overloaded, retry later' });
    assert.match(res.head, /\r\nretry-after: 1\r\n/i);
    assert.deepEqual(handled, [2], 'the handler never ran');
    assert.equal(admission.refused.overload, 1);
    // The answer at the door (no parameter in the path) is byte for byte the ordinary path's, after routing.
    const routed = await rawExchange(port, unfinished().replace('/v1/start ', '/v1/start/x '));
    const headers = (r: { head: string }) => r.head.split('\r\n').slice(0, -1).filter((h) => !/^date:/i.test(h)).sort();
    assert.deepEqual([routed.status, routed.body, headers(routed)], [res.status, res.body, headers(res)]);
    // A caller whose token is looked up is refused once it is known, still without its body.
    const looked = await rawExchange(port, unfinished('authorization: Bearer slow\r\n'));
    assert.equal(looked.status, 503, looked.head);
    assert.deepEqual(JSON.parse(looked.body), { message: 'server is overloaded, retry later' });
    assert.deepEqual(handled, [2], 'no handler ran');
    assert.equal(admission.refused.overload, 3);
    // Another user holds no share of the queue: taken.
    assert.equal((await rawExchange(port, whole('authorization: Bearer other\r\n'))).status, 200);
    // The queue drains (the start in flight settles, the waiting one goes, and it settles): taken again.
    counts.startBacklog--;
    admission.settled(1);
    assert.equal(admission.next(), 'waiting');
    counts.startBacklog++;
    counts.startBacklog--;
    admission.settled(1);
    assert.equal((await rawExchange(port, whole())).status, 200);
    assert.deepEqual(handled, [2, 2, 2]);
  });

  it('refuses while draining, but lets an Idempotency-Key start through to the ordinary path', async () => {
    admission.drain();
    const res = await rawExchange(port, unfinished());
    assert.equal(res.status, 503, res.head);
    assert.deepEqual(JSON.parse(res.body), { message: 'server is draining' });
    assert.match(res.head, /\r\nretry-after: 5\r\n/i);
    assert.equal(admission.refused.draining, 1);

    const keyed = await rawExchange(port, whole('idempotency-key: retry-1\r\n'));
    assert.equal(keyed.status, 200, 'read and handled: the ordinary path decides');
    assert.deepEqual(handled, [2, 2, 2, 2]);
    assert.equal(admission.refused.draining, 1, 'not counted as refused');
  });

  it('keeps the connection usable: the rest of a refused body is skipped and the next request served', async () => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    sock.on('data', (d) => (got += d.toString('latin1')));
    try {
      sock.write('POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{"a":');
      await waitFor(() => got.includes('{"message":"server is draining"}'), 10_000, 'the refusal before the body ends');
      got = '';
      sock.write('"bc"}GET /v1/other HTTP/1.1\r\nhost: x\r\n\r\n');
      await waitFor(() => got.includes('{"other":true}'), 10_000, 'the next request on the same connection');
      assert.match(got, /^HTTP\/1\.1 200 /);
    } finally {
      sock.destroy();
    }
  });
});
