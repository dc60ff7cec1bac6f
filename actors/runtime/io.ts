// What a run's `receive` and its executors see of the runtime (actor.ts): its effects (frames, the
// end, I/O, timers, resources by handle), its time and ids, and its cancellation. Actor implements it.
import { randomUUID } from 'node:crypto';
import type { CancelWhy, RunFailure } from './protocol.ts';

/** A resource's name in a run's state and commands (resources.ts): unique within the run, never reused. */
export type Handle = number;

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

export const realWorld: RunWorld = { timers: realTimers, newId: randomUUID };

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
  after(ms: number, msg: M): Handle;
  cancelTimer(handle: Handle): void;
  /** A new AbortController, kept by the runtime: the state holds its handle (resources.ts). */
  newController(): Handle;
  signalOf(handle: Handle): AbortSignal;
  /** Aborts a controller of the run's: its calls end (the first reason wins). */
  abort(handle: Handle, reason: unknown): void;
  /** Keeps a live object the run opened (a provider session): the state holds its handle. */
  open(resource: unknown): Handle;
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
  /** A live object the run opened (Io.open), by its handle. */
  resource<T>(handle: Handle): T;
  /** A controller's signal (Io.controller), by its handle. */
  signalOf(handle: Handle): AbortSignal;
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
