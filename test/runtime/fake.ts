// A fake world for the runtime's unit tests: subscribers that record what they get, run functions the
// test drives step by step, and a supervisor on inline hosts the test can kill.
import type { RunContext } from '../../actors/runtime/actor.ts';
import { createHost, type Runners } from '../../actors/runtime/host.ts';
import type { Batch, ToHost } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { Supervisor, type HostFactory } from '../../actors/runtime/supervisor.ts';

export class FakeSubscriber implements Subscriber {
  data = '';
  ended = false;
  closed = false;
  dropped = false;
  private hooks: Array<() => void> = [];
  write(frames: string): void {
    if (this.ended) throw new Error('write after end');
    this.data += frames;
  }
  end(): void {
    this.ended = true;
    this.close();
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const h of this.hooks.splice(0)) h();
  }
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.hooks.push(fn);
  }
  /** The events received, as [event, data] pairs. */
  events(): Array<[string, unknown]> {
    return [...this.data.matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].map((m) => [m[1]!, JSON.parse(m[2]!)]);
  }
}

/** A step the test releases: the run function awaits it. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

export type TestRuns = {
  echo: { request: { parts: string[]; gates?: Array<Promise<void>> }; value: { text: string } };
  hold: { request: { until: Promise<void> | null }; value: { why: string | null } };
};

/** `echo` emits meta, then each part as a delta (awaiting its gate first), then done. */
export const runners: Runners<TestRuns, null> = {
  async echo(ctx: RunContext<{ text: string }>, req) {
    ctx.emit('meta', { type: 'meta' });
    for (let i = 0; i < req.parts.length; i++) {
      await req.gates?.[i];
      ctx.emitDelta(req.parts[i]!);
    }
    ctx.finish('done', { type: 'done', text: ctx.deltaText }, { ok: true, value: { text: ctx.deltaText } });
  },
  async hold(ctx, req) {
    ctx.emit('meta', { type: 'meta' });
    await Promise.race([req.until, new Promise((r) => ctx.signal.addEventListener('abort', r))]);
    const why = ctx.cancelled;
    if (ctx.stopRequested) ctx.finish('done', { stopped: true }, { ok: true, value: { why } });
    else ctx.finish('error', { message: 'cancelled' }, { ok: false, outcome: 'cancelled', message: String(why) });
  },
};

/** Inline hosts whose deaths the test controls; `sent` records every message to a host. */
export function fakeHosts() {
  const kill: Array<(err: Error) => void> = [];
  const sent: ToHost[] = [];
  const factory: HostFactory = (index, onBatch: (b: Batch) => void, onExit) => {
    const host = createHost(runners, null, onBatch);
    kill[index] = onExit;
    return { send: (m) => (sent.push(m), host.receive(m)), terminate: async () => {}, ready: Promise.resolve() };
  };
  return { factory, kill, sent };
}

export function supervisor(opts: { hosts?: number; maxActiveRuns?: number } = {}) {
  const hosts = fakeHosts();
  const logs: string[] = [];
  const sup = new Supervisor<TestRuns>({
    hosts: opts.hosts ?? 1,
    factory: hosts.factory,
    maxActiveRuns: opts.maxActiveRuns ?? 100,
    log: (level, message) => logs.push(`${level}: ${message}`),
  });
  return { sup, hosts, logs };
}

/** Lets every setImmediate-scheduled outbox flush run. */
export const turn = () => new Promise<void>((r) => setImmediate(r));
