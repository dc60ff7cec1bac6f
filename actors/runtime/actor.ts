// A run actor: one active run with a mailbox. Every input of the run (its start, provider text,
// round ends, storage and tool outcomes, timers, attach, stop, cancel) is a plain message, handled
// in the same turn by the run kind's synchronous `receive(state, msg, io)`, one at a time: a message
// that arrives while another is being handled waits its turn in the mailbox (an array), so handlers
// never interleave. `receive` never awaits: it starts I/O through `io.perform(command)`, and the outcome
// comes back as a later message.
//
// Replay then live is a property of mailbox order: an attach is handled between two messages, so its
// replay holds every frame emitted before it and none emitted after it; the outbox closes the run's
// open item at a replay, so the frames after it go out after it. No promise, timer or closure is
// made per message: a message is the only allocation on the delta path.
import { randomUUID } from 'node:crypto';
import { EventBuffer } from './event-buffer.ts';
import { deltaFrame, sseFrame } from './frame.ts';
import type { CancelWhy, RunFailure, RunResult } from './protocol.ts';

/** The abort reason of a run asked to end early; `why` tells a user's stop from the runtime's cancel. */
export class RunCancelled extends Error {
  /** Its stable code, as the service's errors carry one (src/base/errors.ts lists it; the runtime imports nothing of the service). */
  readonly code = 'CSS_ERR_RUN_CANCELLED';
  constructor(
    readonly why: CancelWhy,
    message: string,
  ) {
    super(message);
    this.name = 'RunCancelled';
  }
}

/** The messages every run kind receives from the runtime. */
export type Control =
  | { t: 'start' }
  /** A user's stop: end with what the run has. */
  | { t: 'stop'; message: string }
  /** The runtime's cancel: nobody can use the result (`message` ends the run for shutdown and fencing). */
  | { t: 'cancel'; why: Exclude<CancelWhy, 'stop'>; message: string };

/** True for the runtime's messages (a kind's own never use these names). */
export function isControl<M extends { t: string }>(msg: M | Control): msg is Control {
  return msg.t === 'start' || msg.t === 'stop' || msg.t === 'cancel';
}

/** Messages the runtime handles itself, in mailbox order with the kind's. */
type RuntimeMessage = { t: 'attach'; subId: number } | { t: 'fault'; error: unknown };

/** Where an actor's frames and end go: the host's outbox, or a test's recorder. */
export interface FrameSink {
  /** `hold`: the run's first frames, which may wait briefly for its next to cross with them (outbox.ts). */
  frames(runId: string, data: string, hold?: boolean): void;
  replay(runId: string, subId: number, data: string, ended: boolean): void;
  replayFailed(runId: string, subId: number, message: string): void;
  end(runId: string, result: RunResult): void;
  /** `runId`: the run the line is about (its trace id joins the line on the main thread). */
  log(level: 'warn' | 'error', message: string, err?: unknown, runId?: string): void;
  /**
   * The run's start is settled, `ms` after the actor was made: it is no longer in flight (outbox.ts),
   * and its latency here, free of the main thread's own delays, is what the admission's limit reads.
   */
  started(ms: number): void;
}

/** The run's time, given by the runtime: a test gives its own and fires the timers itself. */
export interface Timers {
  set(ms: number, fn: () => void): unknown;
  clear(handle: unknown): void;
  /** Milliseconds since the epoch, on a clock that never goes back (a run's timestamps and durations). */
  now(): number;
}

/** The process's clock as Timers.now reads it: wall time at the start, monotonic after. */
export const clockNow = (): number => performance.timeOrigin + performance.now();

const realTimers: Timers = {
  set: (ms, fn) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  now: clockNow,
};

/**
 * What a run takes from its surroundings besides its messages, given by the runtime: its time, its
 * fresh ids, and who hears of a message the run did not expect in its state. A test gives its own,
 * so a machine test runs without timers or randomness, and fails on an unexpected message.
 */
export interface RunWorld {
  timers: Timers;
  newId(): string;
  /** Without it, an unexpected message is logged as a warning (the service's case). */
  unhandled?(runId: string, state: string, msg: string): void;
}

const realWorld: RunWorld = { timers: realTimers, newId: randomUUID };

/** What `receive` may do: emit frames, end the run, start I/O and timers. All synchronous. */
export interface Io<M, V, C, D> {
  readonly runId: string;
  /** Read-only resources (config, tools, provider adapters); I/O with them goes through `perform`. */
  readonly deps: D;
  /** Aborted (with a RunCancelled reason) when the run is asked to end early. */
  readonly signal: AbortSignal;
  /** Why the run was asked to end early, or null. */
  readonly cancelled: CancelWhy | null;
  emit(event: string, data: unknown): void;
  /** An event whose later states replace earlier ones on replay (tool calls, search events). */
  emitKeyed(key: string, event: string, data: unknown): void;
  emitDelta(text: string): void;
  /** Every delta's text so far, concatenated (kept once, by the replay buffer). */
  readonly deltaText: string;
  /** Each delta's length, when the kind keeps them (Behavior.keepsDeltas); else null or absent. */
  readonly deltaLengths?: readonly number[] | null;
  /** The terminal `done` event and the run's value; the first end wins, later ones are ignored. */
  done(data: unknown, value: V): void;
  /** The terminal `error` event in the kind's shape (Behavior.errorFrame), and the failure. */
  fail(failure: RunFailure): void;
  readonly finished: boolean;
  /** Starts a command's I/O; its outcome comes back as the message its executor answers with. */
  perform(command: C): void;
  /** `msg` arrives after `ms` (unless the run ends first); the handle cancels it. */
  after(ms: number, msg: M): unknown;
  cancelTimer(handle: unknown): void;
  /** The runtime's clock (Timers.now). */
  now(): number;
  /** A fresh unique id (a tool call's), from the runtime. */
  newId(): string;
  /**
   * A message `receive` did not expect in `state` (a bug, or a protocol the kind does not keep): it
   * is dropped, and the runtime says so. Returns `state`, for `return io.unhandled(state, msg)`.
   */
  unhandled<St extends { s: string }>(state: St, msg: { t: string }): St;
  /** A failure the run handled but someone should see (e.g. a write that could not be recorded). */
  log(level: 'warn' | 'error', message: string, err?: unknown): void;
}

/**
 * The run's cancellation as an executor sees it. The signal is made when first read: most commands
 * (the database's, the provider round's, which has its own) never read it, and an AbortSignal costs
 * ~15 µs of a start in Node 20.
 */
export interface Cancellation {
  readonly signal: AbortSignal;
}

/**
 * The run as an executor sees it: its cancellation, and what a reader beside the mailbox may look at
 * without a message (the host's checkpoint timer reads the text streamed so far, until the run ends).
 */
export interface RunHandle extends Cancellation {
  readonly deltaText: string;
  /** The delta text streamed since the previous call (the first: all of it); for one reader only. */
  newText(): string;
  /** The lengths of the deltas newText() answered, when the run keeps them (keepDeltas); else null. */
  newDeltaLengths(): number[] | null;
  readonly finished: boolean;
  /**
   * The run's start's work is done (a chat run: its first statement answered): it leaves the host's
   * count of unfinished starts. Once per run, whoever says it first: this, the run's spawn (a kind
   * defined without `settlesOwnStart`) or its end.
   */
  startSettled(): void;
}

/** The mailbox as I/O sees it: callbacks (provider text) only ever push messages. */
export type Tell<M> = (msg: M) => void;

/**
 * One run kind: its state and message unions (`S`, `M`), its commands (`C`), and how it behaves.
 * `receive` is the only place the run's state changes and its frames are emitted.
 */
export interface Behavior<Req, V, D, S extends { s: string }, M extends { t: string }, C> {
  initial(request: Req): S;
  receive(state: S, msg: M | Control, io: Io<M, V, C, D>): S;
  /** `receive` threw: the state in which the run goes on to record its failure and end. */
  crashed(state: S, err: unknown, io: Io<M, V, C, D>): S;
  /** Carries out a command; resolves with the message that reports its outcome, failures included. */
  execute(command: C, deps: D, tell: Tell<M>, run: RunHandle): Promise<M>;
  /**
   * The kind's terminal `error` event, encoded, in the spec's shape for the kind: the run's own
   * failures and the ones the runtime ends it with (a crash, a dead host) look the same to a client.
   */
  errorFrame(message: string): string;
  /** The run's replay keeps each delta as it was (EventBuffer), for readers that number them. */
  keepsDeltas?(request: Req): boolean;
}

/** What a host holds of an actor: it hands it the runtime's messages. */
export interface ActorRef {
  tell(msg: Control | { t: 'attach'; subId: number }): void;
}

/** A run kind as a host sees it: its types beyond request and value are the kind's own. */
export interface RunDefinition<Req, V, D> {
  spawn(runId: string, request: Req, deps: D, sink: FrameSink, world?: RunWorld): ActorRef;
  /** Behavior.errorFrame, for the supervisor's ends of a run (its host died, its replay failed). */
  errorFrame(message: string): string;
}

/**
 * `settlesOwnStart`: the kind says when its start's work is done (RunHandle.startSettled, or its end);
 * otherwise its start is settled as it is spawned, i.e. taken up by its host.
 */
export function defineRun<Req, V, D, S extends { s: string }, M extends { t: string }, C>(
  behavior: Behavior<Req, V, D, S, M, C>,
  opts: { settlesOwnStart?: boolean } = {},
): RunDefinition<Req, V, D> {
  const settlesOwnStart = opts.settlesOwnStart === true;
  return {
    spawn: (runId, request, deps, sink, world) => {
      const actor = new Actor(runId, behavior, request, deps, sink, world);
      if (!settlesOwnStart) actor.startSettled();
      return actor;
    },
    errorFrame: behavior.errorFrame,
  };
}

export class Actor<Req, V, D, S extends { s: string }, M extends { t: string }, C> implements Io<M, V, C, D>, ActorRef, RunHandle {
  readonly runId: string;
  readonly deps: D;
  finished = false;
  cancelled: CancelWhy | null = null;
  private state: S;
  private readonly mailbox: Array<M | Control | RuntimeMessage> = [];
  private draining = false;
  private readonly buffer: EventBuffer;
  private controller: AbortController | null = null;
  private readonly timers = new Set<unknown>();
  private startSaid = false;
  /** When the host made it (its world's clock): its start's latency is counted from here. */
  private readonly bornAt: number;

  constructor(
    runId: string,
    private readonly behavior: Behavior<Req, V, D, S, M, C>,
    request: Req,
    deps: D,
    private readonly sink: FrameSink,
    private readonly world: RunWorld = realWorld,
  ) {
    this.runId = runId;
    this.deps = deps;
    this.buffer = new EventBuffer(behavior.keepsDeltas?.(request) === true);
    this.state = behavior.initial(request);
    this.bornAt = world.timers.now();
  }

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  get deltaText(): string {
    return this.buffer.deltaText;
  }

  get deltaLengths(): readonly number[] | null {
    return this.buffer.deltaLengths;
  }

  newText(): string {
    return this.buffer.newText();
  }

  newDeltaLengths(): number[] | null {
    return this.buffer.newDeltaLengths();
  }

  /**
   * The one way in: bound once per actor, so a provider callback can push without a closure per
   * message. A message that finds the mailbox idle is handled at once (the common case: no array
   * write at all); one that arrives while a message is being handled waits its turn in the array.
   */
  readonly tell = (msg: M | Control | RuntimeMessage): void => {
    if (this.draining) {
      this.mailbox.push(msg);
      return;
    }
    this.draining = true;
    try {
      this.handle(msg);
      const box = this.mailbox;
      if (box.length > 0) {
        for (let i = 0; i < box.length; i++) this.handle(box[i]!);
        box.length = 0;
      }
    } finally {
      this.draining = false;
    }
  };

  private readonly fault = (error: unknown): void => this.tell({ t: 'fault', error });

  private handle(msg: M | Control | RuntimeMessage): void {
    if (msg.t === 'attach') return this.attach((msg as { subId: number }).subId);
    if (this.finished) return;
    if (msg.t === 'fault') return this.crash((msg as { error: unknown }).error);
    if (msg.t === 'stop' || msg.t === 'cancel') {
      // The first request to end early wins; the run's I/O sees it through the signal at once.
      if (this.cancelled) return;
      const c = msg as Extract<Control, { t: 'stop' | 'cancel' }>;
      this.cancelled = c.t === 'stop' ? 'stop' : c.why;
      (this.controller ??= new AbortController()).abort(new RunCancelled(this.cancelled, c.message));
    }
    try {
      this.state = this.behavior.receive(this.state, msg as M | Control, this);
    } catch (err) {
      this.crash(err);
    }
  }

  private attach(subId: number): void {
    try {
      this.sink.replay(this.runId, subId, this.buffer.replay(), this.finished);
    } catch (err) {
      this.log('error', `run ${this.runId}: attach failed`, err);
      this.sink.replayFailed(this.runId, subId, `replay failed: ${messageOf(err)}`);
    }
  }

  /** A throw inside `receive` (or an executor that rejected): logged, then the kind records its failure. */
  private crash(err: unknown): void {
    this.log('error', `run ${this.runId} threw`, err);
    try {
      this.state = this.behavior.crashed(this.state, err, this);
    } catch (again) {
      this.log('error', `run ${this.runId} could not record its failure`, again);
      this.fail({ ok: false, outcome: 'internal', message: messageOf(err) });
    }
  }

  perform(command: C): void {
    let started: Promise<M>;
    try {
      started = this.behavior.execute(command, this.deps, this.tell, this);
    } catch (err) {
      started = Promise.reject(err);
    }
    started.then(this.tell, this.fault);
  }

  after(ms: number, msg: M): unknown {
    const handle = this.world.timers.set(ms, () => {
      this.timers.delete(handle);
      this.tell(msg);
    });
    this.timers.add(handle);
    return handle;
  }

  cancelTimer(handle: unknown): void {
    if (this.timers.delete(handle)) this.world.timers.clear(handle);
  }

  now(): number {
    return this.world.timers.now();
  }

  newId(): string {
    return this.world.newId();
  }

  unhandled<St extends { s: string }>(state: St, msg: { t: string }): St {
    if (this.world.unhandled) this.world.unhandled(this.runId, state.s, msg.t);
    else this.log('warn', `run ${this.runId}: a '${msg.t}' message in state '${state.s}' was not expected; dropped`);
    return state;
  }

  emit(event: string, data: unknown): void {
    if (this.finished) return;
    const frame = sseFrame(event, data);
    // Only a run's first frame may wait to cross with its next (FrameSink.frames).
    const first = this.buffer.empty;
    this.buffer.push(frame);
    this.sink.frames(this.runId, frame, first);
  }

  emitKeyed(key: string, event: string, data: unknown): void {
    if (this.finished) return;
    const frame = sseFrame(event, data);
    this.buffer.upsert(key, frame);
    this.sink.frames(this.runId, frame);
  }

  emitDelta(text: string): void {
    if (this.finished || text.length === 0) return;
    this.buffer.appendText(text);
    this.sink.frames(this.runId, deltaFrame(text));
  }

  done(data: unknown, value: V): void {
    if (!this.finished) this.end(sseFrame('done', data), { ok: true, value });
  }

  fail(failure: RunFailure): void {
    if (!this.finished) this.end(this.behavior.errorFrame(failure.message), failure);
  }

  startSettled(): void {
    if (this.startSaid) return;
    this.startSaid = true;
    this.sink.started(this.world.timers.now() - this.bornAt);
  }

  private end(frame: string, result: RunResult<V>): void {
    // A run that ends before its start's work answered (cancelled, failed) settles it here: every
    // start handed to a host leaves the count once, whatever its path.
    this.startSettled();
    this.finished = true;
    for (const h of this.timers) this.world.timers.clear(h);
    this.timers.clear();
    this.buffer.end(frame);
    this.sink.frames(this.runId, frame);
    this.sink.end(this.runId, result);
  }

  log(level: 'warn' | 'error', message: string, err?: unknown): void {
    this.sink.log(level, message, err, this.runId);
  }
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
