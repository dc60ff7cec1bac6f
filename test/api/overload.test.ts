// Overload shedding with a real saturated process: the service is frozen (SIGSTOP), so every
// thread's event loop comes back a long time late. A start right after is refused with 503, the
// message and Retry-After, counted; the stream already running goes on; and once the loops are on
// time again starts are taken again.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { startSimulator } from '../../src/sim/server.ts';
import { simCompletion } from '../helpers/process.ts';
import { deltaText, follow, metric, openChatStream, startDrainService } from '../helpers/drain.ts';
import { sim, simEnv, waitFor, type SseEvent } from '../helpers/server.ts';

const start = (url: string) =>
  fetch(`${url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: simCompletion(sim({ deltas: 3 })) });

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

const LAG_MS = 200;
const RATE = 20;
/** The freeze lasts until this many deltas of the running stream wait unread: 4 × LAG_MS at RATE a second. */
const FREEZE_DELTAS = (4 * LAG_MS * RATE) / 1000;

describe('overload shedding (OVERLOAD_LAG_MS)', () => {
  it('refuses new runs while an event loop runs late, and never cuts a running stream', async () => {
    // The simulator runs here, not in the service, so it goes on sending while the service is stopped.
    const simulator = await startSimulator({ defaultReply: { mode: 'echo' } });
    const { service, stop } = await startDrainService({ ...simEnv(simulator), OVERLOAD_LAG_MS: String(LAG_MS), SHUTDOWN_GRACE_MS: '0' });
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

      // The stimulus is a freeze that ends on an event, not on the clock: the service stays stopped until
      // FREEZE_DELTAS of the running stream's deltas wait unread in its sockets, so every thread's loop
      // stands still for at least four times the threshold (a loaded machine only lengthens it). The
      // verdict follows the service's own reading of it: once its lag gauge is over the threshold, a
      // start must be refused. The lag is the worst of the last second, so the gauge can fall back
      // before the start is read: then the freeze is made again.
      let refused: Response | null = null;
      for (let attempt = 0; attempt < 5 && !refused; attempt++) {
        const unreadBefore = unreadFromSimulator(simulator.port);
        service.child.kill('SIGSTOP');
        await waitFor(() => processState(service.child.pid!) === 'T', 10_000, 'the service to be stopped');
        // The first growth is one delta's chunk (deltas come 1 / RATE s apart, the poll every 20 ms)
        // and starts the count: FREEZE_DELTAS more are FREEZE_DELTAS intervals of the simulator's
        // pacing. Were the first growth two chunks, the freeze only gets longer.
        let chunk = 0;
        await waitFor(() => {
          const unread = unreadFromSimulator(simulator.port) - unreadBefore;
          if (chunk === 0 && unread > 0) chunk = unread;
          return chunk > 0 && unread >= (FREEZE_DELTAS + 1) * chunk;
        }, 60_000, `${FREEZE_DELTAS + 1} deltas to wait unread in the stopped service`);
        service.child.kill('SIGCONT');
        const lagSeen = await waitFor(async () => (await metric(url, 'css_event_loop_lag_p99_ms')) > LAG_MS, 10_000, 'the lag').then(() => true, () => false);
        if (!lagSeen) continue;
        const res = await start(url);
        if (res.status === 503) refused = res;
        else await res.body?.cancel();
      }
      assert.ok(refused, 'a start right after the freeze is refused');
      assert.deepEqual(await refused.json(), { message: 'server is overloaded, retry later' });
      assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After');
      assert.ok((await metric(url, 'css_runs_refused_total{reason="overload"}')) >= 1);

      // The running stream goes on, and once the loops are on time again a start is taken.
      const before = deltaText(seen).length;
      await waitFor(() => deltaText(seen).length > before, 30_000, 'the running stream to go on');
      await waitFor(async () => {
        const res = await start(url);
        await res.body?.cancel();
        return res.status === 200;
      }, 30_000, 'a start to be taken again');
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
