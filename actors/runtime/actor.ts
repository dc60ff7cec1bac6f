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
//
// A run is data: its state names its live resources (controllers, timers, a provider session) by
// handle only, the runtime keeps them (resources.ts), so `snapshot()` is plain JSON and
// `Actor.restore` goes on from it (run-snapshot.ts).
import { EventBuffer } from './event-buffer.ts';
import { deltaFrame, sseFrame } from './frame.ts';
import type { CancelWhy, RunFailure, RunResult } from './protocol.ts';
import { RunResources } from './resources.ts';
import type { RunSnapshot } from './run-snapshot.ts';
import { realWorld, type Handle, type Io, type RunHandle, type RunWorld } from './io.ts';
import { RunCancelled, type ActorRef, type Behavior, type Control, type FrameSink, type RunDefinition } from './run-kind.ts';

export type { Handle } from './io.ts';
export { clockNow } from './io.ts';
export type { Cancellation, Io, RunHandle, RunWorld, Tell, Timers } from './io.ts';
export { isControl, RunCancelled } from './run-kind.ts';
export type { ActorRef, Behavior, Control, FrameSink, RunDefinition } from './run-kind.ts';

/** Messages the runtime handles itself, in mailbox order with the kind's. */
type RuntimeMessage = { t: 'attach'; subId: number } | { t: 'fault'; error: unknown };

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
  /** The message of the first stop or cancel (with `cancelled`), for a snapshot. */
  private cancelMessage = '';
  /** The run's controllers, timers and live objects, by handle (resources.ts). */
  private readonly resources: RunResources<M>;
  private startSaid = false;
  /** When the host made it (its world's clock): its start's latency is counted from here. */
  private readonly bornAt: number;

  /** `from`: a snapshot the run goes on from (Actor.restore); `request` is then not read. */
  constructor(
    runId: string,
    private readonly behavior: Behavior<Req, V, D, S, M, C>,
    request: Req,
    deps: D,
    private readonly sink: FrameSink,
    private readonly world: RunWorld = realWorld,
    from?: { snapshot: RunSnapshot<S, M>; live?: ReadonlyMap<Handle, unknown> },
  ) {
    this.runId = runId;
    this.deps = deps;
    if (from === undefined) {
      this.buffer = new EventBuffer(behavior.keepsDeltas?.(request) === true);
      this.state = behavior.initial(request);
      this.bornAt = world.timers.now();
      this.resources = new RunResources<M>(world.timers, this.tell);
      return;
    }
    const snap = from.snapshot;
    this.buffer = EventBuffer.from(snap.replay);
    this.state = snap.state;
    this.bornAt = snap.bornAt;
    this.finished = snap.finished;
    this.startSaid = snap.startSettled;
    if (snap.cancel) {
      this.cancelled = snap.cancel.why;
      this.cancelMessage = snap.cancel.message;
      (this.controller = new AbortController()).abort(new RunCancelled(snap.cancel.why, snap.cancel.message));
    }
    this.resources = RunResources.restore<M>(snap.resources, world.timers, this.tell, from.live);
  }

  /**
   * A run made from a snapshot (`snapshot()`, through JSON or not): it goes on as the original would
   * have. `live`: the original's live objects (`liveResources()`), when it is restored in the same process.
   */
  static restore<Req, V, D, S extends { s: string }, M extends { t: string }, C>(
    snapshot: RunSnapshot<S, M>,
    behavior: Behavior<Req, V, D, S, M, C>,
    deps: D,
    sink: FrameSink,
    world: RunWorld = realWorld,
    live?: ReadonlyMap<Handle, unknown>,
  ): Actor<Req, V, D, S, M, C> {
    return new Actor(snapshot.runId, behavior, undefined as Req, deps, sink, world, { snapshot, live });
  }

  /** The run as plain data, between two messages (never while one is being handled). */
  snapshot(): RunSnapshot<S, M> {
    if (this.draining) throw new Error(`run ${this.runId}: a snapshot is taken between messages`);
    return {
      runId: this.runId,
      state: this.state,
      replay: this.buffer.snapshot(),
      cancel: this.cancelled && { why: this.cancelled, message: this.cancelMessage },
      finished: this.finished,
      startSettled: this.startSaid,
      bornAt: this.bornAt,
      resources: this.resources.snapshot(),
    };
  }

  /**
   * The run leaves this actor (a move): its snapshot, its timers cleared, and every later message but
   * an attach dropped; its restore goes on in its place.
   */
  handOver(): RunSnapshot<S, M> {
    const snap = this.snapshot();
    this.resources.clearTimers();
    this.finished = true;
    return snap;
  }

  /** The run's live objects (Io.open) and controllers, for a restore in the same process. */
  liveResources(): ReadonlyMap<Handle, unknown> {
    return this.resources.live();
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
      this.cancelMessage = c.message;
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

  after(ms: number, msg: M): Handle {
    return this.resources.after(ms, msg);
  }

  cancelTimer(handle: Handle): void {
    this.resources.cancelTimer(handle);
  }

  newController(): Handle {
    return this.resources.controller();
  }

  signalOf(handle: Handle): AbortSignal {
    return this.resources.signalOf(handle);
  }

  abort(handle: Handle, reason: unknown): void {
    this.resources.abort(handle, reason);
  }

  open(resource: unknown): Handle {
    return this.resources.open(resource);
  }

  resource<T>(handle: Handle): T {
    return this.resources.resource<T>(handle);
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
    this.resources.clearTimers();
    this.buffer.end(frame);
    this.sink.frames(this.runId, frame);
    this.sink.end(this.runId, result);
  }

  log(level: 'warn' | 'error', message: string, err?: unknown): void {
    this.sink.log(level, message, err, this.runId);
  }
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
