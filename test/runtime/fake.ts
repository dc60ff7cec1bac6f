// A fake world for the runtime's unit tests: subscribers that record what they get, run kinds the
// test drives step by step, and a supervisor on inline hosts the test can kill.
import { defineRun } from '../../actors/runtime/actor.ts';
import { sseFrame } from '../../actors/runtime/frame.ts';
import { createHost, type Runners } from '../../actors/runtime/host.ts';
import type { Batch, ToHost } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { Supervisor, type HostFactory, type SupervisorOptions } from '../../actors/runtime/supervisor.ts';

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

/** The test kinds' terminal error: `{ message }`. */
const errorFrame = (message: string) => sseFrame('error', { message });

type Echo = TestRuns['echo'];
type EchoState = { s: 'idle' | 'running' | 'ended'; req: Echo['request']; next: number };
type Go = { t: 'go'; i: number };

/** `echo` emits meta, then each part as a delta (after its gate opens), then done. */
const echo = defineRun<Echo['request'], Echo['value'], null, EchoState, Go, { c: 'wait'; i: number; gate: Promise<void> | undefined }>({
  initial: (req) => ({ s: 'idle', req, next: 0 }),
  errorFrame,
  receive(state, msg, io) {
    if (msg.t === 'start') io.emit('meta', { type: 'meta' });
    else if (msg.t === 'go') io.emitDelta(state.req.parts[msg.i]!);
    else return state;
    const i = msg.t === 'go' ? msg.i + 1 : 0;
    if (i < state.req.parts.length) {
      io.perform({ c: 'wait', i, gate: state.req.gates?.[i] });
      return { ...state, s: 'running', next: i };
    }
    io.done({ type: 'done', text: io.deltaText }, { text: io.deltaText });
    return { ...state, s: 'ended' };
  },
  crashed(_state, err) {
    throw err;
  },
  async execute(cmd) {
    await cmd.gate;
    return { t: 'go', i: cmd.i };
  },
});

type Hold = TestRuns['hold'];
type HoldState = { s: 'holding' | 'ended'; until: Promise<void> | null };

/** `hold` emits meta and waits for its promise or a stop or cancel, and says which it was. */
const hold = defineRun<Hold['request'], Hold['value'], null, HoldState, { t: 'released' }, { c: 'until'; p: Promise<void> }>({
  initial: (req) => ({ s: 'holding', until: req.until }),
  errorFrame,
  receive(state, msg, io) {
    if (msg.t === 'start') {
      io.emit('meta', { type: 'meta' });
      if (state.until) io.perform({ c: 'until', p: state.until });
      return state;
    }
    const why = io.cancelled;
    if (why === 'stop') io.done({ stopped: true }, { why });
    else io.fail({ ok: false, outcome: 'cancelled', message: String(why) });
    return { ...state, s: 'ended' };
  },
  crashed(_state, err) {
    throw err;
  },
  async execute(cmd) {
    await cmd.p;
    return { t: 'released' };
  },
});

export const runners: Runners<TestRuns, null> = { echo, hold };

/**
 * Inline hosts whose deaths the test controls; `sent` records every message to a host. `held`: the
 * hosts read nothing of their mailboxes (a thread busy elsewhere) until the test calls `deliver`.
 */
export function fakeHosts(held = false) {
  const kill: Array<(err: Error) => void> = [];
  const sent: ToHost[] = [];
  const waiting: Array<() => void> = [];
  const factory: HostFactory = (index, onBatch: (b: Batch) => void, onExit) => {
    const host = createHost(runners, null, onBatch);
    kill[index] = onExit;
    const send = (m: ToHost) => {
      sent.push(m);
      if (held) waiting.push(() => host.receive(m));
      else host.receive(m);
    };
    return { send, terminate: async () => {}, ready: Promise.resolve() };
  };
  /** The held hosts read what waits in their mailboxes (from now on, too). */
  const deliver = () => {
    held = false;
    for (const w of waiting.splice(0)) w();
  };
  /** The hosts read nothing more of their mailboxes until `deliver` (their runs' own work goes on). */
  const pause = () => {
    held = true;
  };
  return { factory, kill, sent, deliver, pause };
}

export function supervisor(opts: { hosts?: number; maxActiveRuns?: number; held?: boolean } & Pick<SupervisorOptions, 'admission' | 'clock' | 'newId'> = {}) {
  const hosts = fakeHosts(opts.held);
  const logs: string[] = [];
  const sup = new Supervisor<TestRuns>({
    hosts: opts.hosts ?? 1,
    factory: hosts.factory,
    errorFrames: { echo: errorFrame, hold: errorFrame },
    maxActiveRuns: opts.maxActiveRuns ?? 100,
    log: (level, message) => logs.push(`${level}: ${message}`),
    ...(opts.admission ? { admission: opts.admission } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.newId ? { newId: opts.newId } : {}),
  });
  return { sup, hosts, logs };
}

/** Lets every setImmediate-scheduled outbox flush run. */
export const turn = () => new Promise<void>((r) => setImmediate(r));
