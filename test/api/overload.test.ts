// Adaptive admission with a real service process and its defaults: a burst of starts sent at once to
// an idle instance is all taken (the starts past the limit wait their turn) and every stream ends
// `done`; and a freeze of every thread (SIGSTOP: each event loop comes back a long time late) is no
// flood: the running stream goes on, a start right after is taken, nothing is refused. (A flood that
// lasts, refused at once and fairly between users: test/api/admission.test.ts.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { LIMIT_DEFAULTS } from '../../src/admission/limit.ts';
import { startSimulator } from '../../src/sim/server.ts';
import { simCompletion } from '../helpers/process.ts';
import { deltaText, follow, metric, openChatStream, startDrainService } from '../helpers/drain.ts';
import { sim, simEnv, waitFor, type SseEvent } from '../helpers/server.ts';

const start = (url: string, deltas = 3) =>
  fetch(`${url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: simCompletion(sim({ deltas })) });

/** The state letter of /proc/<pid>/stat (`T`: stopped by a signal). */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

/**
 * Bytes that the service's connections to the simulator on `simPort` hold unread: the kernel's receive
 * queues (/proc/net/tcp's rx_queue) of every socket whose remote end is that port. Only the service
 * connects to it, and a stopped service reads nothing, so this grows by one chunk per delta sent.
 */
function unreadFromSimulator(simPort: number): number {
  let bytes = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || parseInt(f[2]!.split(':')[1]!, 16) !== simPort) continue;
    bytes += parseInt(f[4]!.split(':')[1]!, 16);
  }
  return bytes;
}

const RATE = 20;
/** The freeze lasts until this many deltas of the running stream wait unread: 4 × the limit's lag target at RATE a second. */
const FREEZE_DELTAS = Math.ceil((4 * LIMIT_DEFAULTS.lagTargetMs * RATE) / 1000);
const BURST = 200;

describe('adaptive admission (a service process, the defaults)', () => {
  it(`takes a burst of ${BURST} starts sent at once, and every stream ends done`, async () => {
    const { service, stop } = await startDrainService({});
    try {
      const { url } = service;
      const answers = await Promise.all(Array.from({ length: BURST }, () => start(url)));
      const statuses = answers.map((r) => r.status);
      assert.deepEqual(statuses, statuses.map(() => 200), JSON.stringify(await Promise.all(answers.filter((r) => r.status !== 200).slice(0, 3).map((r) => r.text()))));
      const ends = await Promise.all(answers.map((r) => follow(r).events.then((evs) => evs.at(-1)?.event)));
      assert.deepEqual(ends, ends.map(() => 'done'));
      assert.equal(await metric(url, 'css_runs_refused_total{reason="overload"}'), 0);
      assert.equal(await metric(url, 'css_starts_waiting'), 0);
    } finally {
      await stop();
    }
  });

  it('takes a start right after a freeze of every thread, and the running stream goes on', async () => {
    // The simulator runs here, not in the service, so it goes on sending while the service is stopped.
    const simulator = await startSimulator({ defaultReply: { mode: 'echo' } });
    const { service, stop } = await startDrainService({ ...simEnv(simulator), SHUTDOWN_GRACE_MS: '0' });
    try {
      const { url } = service;
      const seen: SseEvent[] = [];
      const running = await openChatStream(url, 100_000, RATE);
      void running.events.catch(() => {});
      const chatId = (await running.meta).data.chatId as string;
      // An attached reader shows the run's text as it arrives.
      const attached = follow(await fetch(`${url}/v1/chats/${chatId}/stream/attach`, { method: 'POST' }), (ev) => seen.push(ev));
      void attached.events.catch(() => {});
      await running.firstDelta;

      // The freeze ends on an event, not on the clock: the service stays stopped until FREEZE_DELTAS of
      // the running stream's deltas wait unread in its sockets (a loaded machine only lengthens it).
      const unreadBefore = unreadFromSimulator(simulator.port);
      service.child.kill('SIGSTOP');
      await waitFor(() => processState(service.child.pid!) === 'T', 10_000, 'the service to be stopped');
      let chunk = 0;
      await waitFor(() => {
        const unread = unreadFromSimulator(simulator.port) - unreadBefore;
        if (chunk === 0 && unread > 0) chunk = unread;
        return chunk > 0 && unread >= (FREEZE_DELTAS + 1) * chunk;
      }, 60_000, `${FREEZE_DELTAS + 1} deltas to wait unread in the stopped service`);
      service.child.kill('SIGCONT');
      await waitFor(async () => (await metric(url, 'css_event_loop_lag_p99_ms')) > LIMIT_DEFAULTS.lagTargetMs, 10_000, 'the lag to show');

      const after = await start(url);
      assert.equal(after.status, 200);
      assert.equal((await follow(after).events).at(-1)?.event, 'done');
      assert.equal(await metric(url, 'css_runs_refused_total{reason="overload"}'), 0);

      const before = deltaText(seen).length;
      await waitFor(() => deltaText(seen).length > before, 30_000, 'the running stream to go on');
      assert.equal((await fetch(`${url}/v1/chats/${chatId}/stream/stop`, { method: 'POST' })).status, 200);
      const end = (await running.events).at(-1)!;
      assert.equal(end.event, 'done', JSON.stringify(end));
    } finally {
      service.child.kill('SIGCONT');
      await stop();
      await simulator.close();
    }
  });
});
