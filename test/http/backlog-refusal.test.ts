// Refusals that the supervisor's counts decide, on a real uWS app with the real router, early refusal,
// admission and supervisor.
// - Overload, a flood that lasts: the actor host reads nothing of its mailbox until the test lets it (a
//   thread busy elsewhere), so the starts handed to it stay in flight at a known point. Starts past the
//   limit are taken and wait their turn; once the oldest waiting has waited longer than the queue's
//   interval (the test's clock), a start is answered 503 with the contract's message and Retry-After,
//   from its headers or, for one whose body was already on its way, after it; once the host takes them
//   up and the queue drains, starts are taken.
// - Capacity (MAX_ACTIVE_RUNS): at the limit a start is answered from its headers too, with the
//   capacity message; once a run ends, starts are taken.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Admission } from '../../src/admission/admission.ts';
import { QUEUE_DEFAULTS } from '../../src/admission/start-queue.ts';
import { ADMIN_CALLER } from '../../src/auth/caller.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { BodyPool } from '../../src/http/body-pool.ts';
import { startShedding } from '../../src/http/early-refusal.ts';
import { outcomeError } from '../../src/http/outcomes.ts';
import { mountRoutes, type Route } from '../../src/http/router.ts';
import { listenExclusive, uws, type us_listen_socket } from '../../src/http/uws.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { waitFor } from '../helpers/wait.ts';
import { supervisor } from '../runtime/fake.ts';

const BOUND = 2;
const start = `POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`;
/** A route that starts a `hold` run (keyed `hold-<n>`, so the test can end it) once it has read the body. */
function holdRoute(sup: ReturnType<typeof supervisor>['sup'], onHandled: () => void): Route {
  let n = 0;
  return {
    method: 'POST',
    path: '/v1/start',
    startsRun: () => true,
    handler: async (req, reply) => {
      await req.body();
      onHandled();
      const started = sup.start({ kind: 'hold', key: `hold-${++n}`, request: { until: null }, ifRunning: 'reject', owner: req.caller.userId });
      if (!started.ok) throw outcomeError(started);
      reply.json(200, { runId: started.handle.runId });
    },
  };
}

/**
 * Serves the hold route with `admission` deciding (the suite's before/after): `port` once listening,
 * `handled` the starts whose handler read the body to the end.
 */
function serving(admission: Admission, sup: ReturnType<typeof supervisor>['sup']): { port: number; handled: number } {
  const state = { port: 0, handled: 0 };
  let socket: us_listen_socket;
  before(async () => {
    const app = uws.App();
    mountRoutes(app, [holdRoute(sup, () => state.handled++)], {
      defaultBodyLimit: 1 << 20,
      bodies: new BodyPool(new CpuPool()),
      authenticate: () => ADMIN_CALLER,
      onError: (err) => err as never,
      shed: startShedding(admission),
    });
    socket = await listenExclusive(app, '127.0.0.1', 0);
    state.port = uws.us_socket_local_port(socket);
  });
  after(async () => {
    uws.us_listen_socket_close(socket);
    await sup.shutdown();
  });
  return state;
}

/** Headers and the first byte of a start's body; the rest follows when the test sends it. */
const startHead = `POST /v1/start HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{`;

describe('refusal of a flood that lasts while starts wait for the actor threads', () => {
  const clock = { t: 0 };
  const admission = new Admission({ maxActiveRuns: 100, adaptive: true, now: () => clock.t, limit: { initial: BOUND, min: BOUND, max: BOUND } });
  const { sup, hosts } = supervisor({ held: true, admission });
  admission.watchRuns(sup);
  const served = serving(admission, sup);
  const WAITING = 3;

  it('takes a burst past the limit, refuses once its oldest start has waited the interval, and takes starts again once the queue drained', async () => {
    // A start whose body is still coming passes the early check while nothing waits.
    const late = net.connect(served.port, '127.0.0.1');
    let lateAnswer = '';
    late.on('data', (d) => (lateAnswer += d.toString('latin1')));
    late.write(startHead);

    for (let i = 0; i < BOUND + WAITING; i++) assert.equal((await rawExchange(served.port, start)).status, 200, `start ${i + 1}`);
    assert.equal(sup.startBacklog, BOUND, 'the limit\'s worth in the host\'s mailbox');
    assert.equal(admission.waiting, WAITING, 'the rest wait their turn');

    clock.t += QUEUE_DEFAULTS.intervalMs + 1;
    const refused = await rawExchange(served.port, start);
    assert.equal(refused.status, 503, refused.head);
    assert.deepEqual(JSON.parse(refused.body), { message: 'server is overloaded, retry later' });
    assert.match(refused.head, /\r\nretry-after: 1\r\n/i);
    assert.equal(served.handled, BOUND + WAITING, 'refused from its headers: the handler never ran');
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
    await waitFor(() => sup.startBacklog === 0 && admission.waiting === 0, 10_000, 'the host to take every start up');
    assert.equal((await rawExchange(served.port, start)).status, 200, 'taken again');
    assert.equal(sup.activeCount, BOUND + WAITING + 1);
  });
});

describe('refusal at MAX_ACTIVE_RUNS', () => {
  const LIMIT = 2;
  const admission = new Admission({ maxActiveRuns: LIMIT, adaptive: true });
  const { sup } = supervisor({ maxActiveRuns: LIMIT, admission });
  admission.watchRuns(sup);
  const served = serving(admission, sup);

  it('answers a start from its headers while the instance holds MAX_ACTIVE_RUNS runs, and takes one again once a run ends', async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await rawExchange(served.port, start)).status, 200, `start ${i + 1} of the limit`);
    assert.equal(sup.activeCount, LIMIT);

    // Headers alone, the body announced and never sent: only a refusal from the headers can answer it.
    const refused = await rawExchange(served.port, startHead);
    assert.equal(refused.status, 503, refused.head);
    assert.deepEqual(JSON.parse(refused.body), { message: `server is at capacity (${LIMIT} active runs); retry shortly` });
    assert.match(refused.head, /\r\nretry-after: 1\r\n/i);
    assert.equal(served.handled, LIMIT, 'the handler never ran');
    assert.deepEqual(admission.refused, { capacity: 1, overload: 0, draining: 0, user_runs: 0, user_tokens: 0, user_cost: 0 });

    assert.ok(sup.stopNow('hold', 'hold-1'), 'the first run is stopped');
    await waitFor(() => sup.activeCount < LIMIT, 10_000, 'the cancelled run to end');
    assert.equal((await rawExchange(served.port, start)).status, 200, 'taken again');
  });
});
