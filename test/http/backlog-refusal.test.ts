// Overload by backlog (OVERLOAD_START_BACKLOG), on a real uWS app with the real router, early refusal,
// admission and supervisor: the actor host reads nothing of its mailbox until the test lets it (a
// thread busy elsewhere), so the starts handed to it wait at a known point. While as many wait as the
// bound, a start is answered 503 with the contract's message and Retry-After, from its headers or,
// for one whose body was already on its way, after it; once the host takes them up, starts are taken.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Admission } from '../../src/admission.ts';
import { ADMIN_CALLER } from '../../src/auth/caller.ts';
import { CpuPool } from '../../src/cpu-pool.ts';
import { BodyPool } from '../../src/http/body-pool.ts';
import { alwaysStartsRun, startShedding } from '../../src/http/early-refusal.ts';
import { outcomeError } from '../../src/http/outcomes.ts';
import { mountRoutes, type Route } from '../../src/http/router.ts';
import { listenExclusive, uws, type us_listen_socket } from '../../src/http/uws.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { waitFor } from '../helpers/wait.ts';
import { supervisor } from '../runtime/fake.ts';

const BOUND = 2;
const start = `POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`;
/** Headers and the first byte of a start's body; the rest follows when the test sends it. */
const startHead = `POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{`;

describe('refusal while starts wait for the actor threads', () => {
  let listen: us_listen_socket;
  let port: number;
  const admission = new Admission({ maxActiveRuns: 100, overloadLagMs: 100, overloadStartBacklog: BOUND });
  const { sup, hosts } = supervisor({ held: true, admission });
  admission.watchBacklog(sup);
  /** Starts whose handler read the body to the end. */
  let handled = 0;

  before(async () => {
    const app = uws.App();
    const route: Route = {
      method: 'POST',
      path: '/v1/start',
      startsRun: alwaysStartsRun,
      handler: async (req, reply) => {
        await req.body();
        handled++;
        const started = sup.start({ kind: 'hold', key: null, request: { until: null }, ifRunning: 'reject' });
        if (!started.ok) throw outcomeError(started);
        reply.json(200, { runId: started.handle.runId });
      },
    };
    mountRoutes(app, [route], {
      defaultBodyLimit: 1 << 20,
      bodies: new BodyPool(new CpuPool()),
      authenticate: () => ADMIN_CALLER,
      onError: (err) => err as never,
      shed: startShedding(admission),
    });
    listen = await listenExclusive(app, '127.0.0.1', 0);
    port = uws.us_socket_local_port(listen);
  });
  after(async () => {
    uws.us_listen_socket_close(listen);
    await sup.shutdown();
  });

  it('refuses at the bound, from the headers and after a body, and takes starts again once the host has taken them up', async () => {
    // A start whose body is still coming passes the early check while nothing waits.
    const late = net.connect(port, '127.0.0.1');
    let lateAnswer = '';
    late.on('data', (d) => (lateAnswer += d.toString('latin1')));
    late.write(startHead);

    for (let i = 0; i < BOUND; i++) assert.equal((await rawExchange(port, start)).status, 200, `start ${i + 1} of the bound`);
    assert.equal(sup.startBacklog, BOUND, 'both wait in the host\'s mailbox');

    const refused = await rawExchange(port, start);
    assert.equal(refused.status, 503, refused.head);
    assert.deepEqual(JSON.parse(refused.body), { message: 'server is overloaded, retry later' });
    assert.match(refused.head, /\r\nretry-after: 1\r\n/i);
    assert.equal(handled, BOUND, 'refused from its headers: the handler never ran');
    assert.equal(admission.refused.overload, 1);

    // The body of the start that came before the bound was reached: the supervisor's own decision refuses it.
    late.write('}');
    await waitFor(() => lateAnswer.includes('\r\n\r\n{'), 10_000, 'the answer to the start whose body came late');
    late.destroy();
    assert.match(lateAnswer, /^HTTP\/1\.1 503 /);
    assert.match(lateAnswer, /\r\nretry-after: 1\r\n/i);
    assert.ok(lateAnswer.endsWith('{"message":"server is overloaded, retry later"}'), lateAnswer);
    assert.equal(admission.refused.overload, 2);

    hosts.deliver();
    await waitFor(() => sup.startBacklog === 0, 10_000, 'the host to take the starts up');
    assert.equal((await rawExchange(port, start)).status, 200, 'taken again');
    assert.equal(sup.activeCount, BOUND + 1);
  });
});
