// A run kind as the runtime sees it: how it behaves (Behavior), the runtime's own messages to it
// (Control) and the abort reason a stop or cancel gives its I/O, where its frames and end go
// (FrameSink), and what a host holds of one (RunDefinition, ActorRef). actor.ts runs it.
import type { CancelWhy, RunResult } from './protocol.ts';
import type { Io, RunHandle, RunWorld, Tell } from './io.ts';

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
