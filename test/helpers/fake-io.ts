// A fake world for one run kind's machine: the real actor and mailbox, with every command recorded
// instead of carried out, frames and the end recorded by a sink, and timers the test fires. The test
// answers a command by telling the run the message its executor would have sent. No network,
// database or thread. A message a run did not expect in its state fails the test that sent it.
import { afterEach } from 'node:test';
import { Actor, type Behavior, type Control, type FrameSink, type Timers } from '../../actors/runtime/actor.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { RunSnapshot } from '../../actors/runtime/run-snapshot.ts';
import type { RunDeps } from '../../src/domain/run-deps.ts';

export { abortError, call, chatRequest, fakeDeps, fakeTool, roundEnd, roundUsage } from './fake-deps.ts';

export class RecordingSink implements FrameSink {
  data = '';
  result: RunResult | null = null;
  ends = 0;
  readonly replays: Array<{ subId: number; data: string; ended: boolean; at: number }> = [];
  readonly logs: string[] = [];
  /** Each frame's `hold` flag, in order. */
  readonly held: boolean[] = [];
  frames(_runId: string, data: string, hold = false): void {
    if (this.result) throw new Error('a frame after the end');
    this.data += data;
    this.held.push(hold);
  }
  replay(_runId: string, subId: number, data: string, ended: boolean): void {
    this.replays.push({ subId, data, ended, at: this.data.length });
  }
  replayFailed(): void {
    throw new Error('unexpected replay failure');
  }
  end(_runId: string, result: RunResult): void {
    this.ends++;
    this.result = result;
  }
  log(level: 'warn' | 'error', message: string): void {
    this.logs.push(`${level}: ${message}`);
  }
  /** Times the run said its start was settled. */
  startsSettled = 0;
  started(): void {
    this.startsSettled++;
  }
  /** The frames as [event, data] pairs. */
  events(data = this.data): Array<[string, Record<string, unknown>]> {
    return [...data.matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].map((m) => [m[1]!, JSON.parse(m[2]!)]);
  }
  names(): string[] {
    return this.events().map(([e]) => e);
  }
}

export class FakeTimers implements Timers {
  readonly pending = new Map<number, { ms: number; fn: () => void }>();
  private next = 1;
  /** The clock the run reads; a test moves it. */
  time = 0;
  now(): number {
    return this.time;
  }
  set(ms: number, fn: () => void): unknown {
    const id = this.next++;
    this.pending.set(id, { ms, fn });
    return id;
  }
  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  /** Fires every pending timer of `ms`. */
  fire(ms: number): number {
    let n = 0;
    for (const [id, t] of [...this.pending]) {
      if (t.ms !== ms) continue;
      this.pending.delete(id);
      t.fn();
      n++;
    }
    return n;
  }
}

/** The machines of the running test: each one's unexpected messages fail it (below). */
const machines = new Set<{ unexpected: string[] }>();

// The service logs an unexpected message and goes on; a test must not: it names a state the kind
// does not handle, or a test that plays its I/O out of order. A test expecting one takes it out of
// `unexpected` itself. A root hook, so in a process running several files (test/run.mjs) it follows
// every test there, and finds nothing where no machine ran.
afterEach(() => {
  const seen = [...machines].flatMap((m) => m.unexpected);
  machines.clear();
  if (seen.length > 0) throw new Error(`unexpected messages: ${seen.join('; ')}`);
});

/** A run of `behavior` whose commands are recorded, never carried out. */
export function machine<Req, V, S extends { s: string }, M extends { t: string }, C extends object>(behavior: Behavior<Req, V, RunDeps, S, M, C>, request: Req, deps: RunDeps) {
  const commands: C[] = [];
  const sink = new RecordingSink();
  const timers = new FakeTimers();
  let ids = 0;
  const unexpected: string[] = [];
  const recorded: Behavior<Req, V, RunDeps, S, M, C> = {
    ...behavior,
    execute: (cmd) => {
      commands.push(cmd);
      return new Promise<M>(() => {});
    },
  };
  // Time and ids from the test: the run has neither real timers nor randomness.
  const world = {
    timers,
    newId: () => `id-${++ids}`,
    unhandled: (_runId: string, state: string, msg: string) => unexpected.push(`'${msg}' in state '${state}'`),
  };
  let actor = new Actor('run-1', recorded, request, deps, sink, world);
  machines.add({ unexpected });
  const tell = (msg: M | Control | { t: 'attach'; subId: number }) => actor.tell(msg);
  /**
   * The run moves through JSON: handed over as its snapshot, stringified and parsed, and restored in a
   * new actor (with the same sink, clock and ids), which takes every later message. Its live objects are
   * not handed along: a move to another process would not have them either. Returns the snapshot.
   */
  const move = (): RunSnapshot<S, M> => {
    const snapshot = actor.handOver();
    actor = Actor.restore(JSON.parse(JSON.stringify(snapshot)) as RunSnapshot<S, M>, recorded, deps, sink, world);
    return snapshot;
  };
  /** The commands of one kind so far (`c` is the kind's command tag). */
  const sent = <K extends string>(c: K) => commands.filter((x): x is Extract<C, { c: K }> => (x as { c?: string }).c === c);
  return {
    get actor() {
      return actor;
    },
    commands,
    sent,
    sink,
    timers,
    tell,
    unexpected,
    move,
  };
}
