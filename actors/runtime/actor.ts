// A run actor: one active run. It owns the run's event buffer and the abort signal of its work, and
// guarantees exactly one terminal event.
//
// There is no mailbox: each input is handled where it arrives, and ordering still holds because an
// actor lives on one thread and every handler is synchronous. The host calls `receive` for control
// messages (attach, cancel) one at a time, in the order the supervisor sent them; the run's own
// inputs (provider text, round ends, tool results) resume its async function, which emits
// synchronously, between two control messages, never during one. So an attach's replay is a snapshot
// taken between two emits: every frame before it is in the replay, every frame after it goes out in a
// later outbox item (the outbox closes the run's open item at a replay), and none is in both.
import { EventBuffer } from './event-buffer.ts';
import { deltaFrame, sseFrame } from './frame.ts';
import type { Outbox } from './outbox.ts';
import type { CancelWhy, RunResult, ToHost } from './protocol.ts';

/** The abort reason of a run asked to end early; `why` tells a user's stop from the runtime's cancel. */
export class RunCancelled extends Error {
  constructor(
    readonly why: CancelWhy,
    message: string,
  ) {
    super(message);
    this.name = 'RunCancelled';
  }
}

/** What a run function sees of its actor. `V` is the run's value type. */
export interface RunContext<V = unknown> {
  readonly runId: string;
  /** Aborted (with a RunCancelled reason) when the run is asked to end early. */
  readonly signal: AbortSignal;
  /** Why the run was asked to end early, or null. */
  readonly cancelled: CancelWhy | null;
  /** A user asked to stop: end with what the run has (the caller decides what that means). */
  readonly stopRequested: boolean;
  emit(event: string, data: unknown): void;
  /** An event whose later states replace earlier ones on replay (tool calls, search events). */
  emitKeyed(key: string, event: string, data: unknown): void;
  emitDelta(text: string): void;
  /** Every delta's text so far, concatenated (kept once, by the replay buffer). */
  readonly deltaText: string;
  /** The terminal event; the first call wins, later ones are ignored. */
  finish(event: 'done' | 'error', data: unknown, result: RunResult<V>): void;
  readonly finished: boolean;
  /** A failure the run handled but someone should see (e.g. a write that could not be recorded). */
  log(level: 'warn' | 'error', message: string, err?: unknown): void;
}

export type RunFunction<Req, V, D> = (ctx: RunContext<V>, request: Req, deps: D) => Promise<void>;

type ControlMessage = Extract<ToHost, { t: 'attach' } | { t: 'cancel' }>;

export class Actor implements RunContext<unknown> {
  readonly runId: string;
  private readonly buffer = new EventBuffer();
  private readonly controller = new AbortController();
  private readonly outbox: Outbox;
  finished = false;
  cancelled: CancelWhy | null = null;

  constructor(runId: string, outbox: Outbox) {
    this.runId = runId;
    this.outbox = outbox;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopRequested(): boolean {
    return this.cancelled === 'stop';
  }

  get deltaText(): string {
    return this.buffer.deltaText;
  }

  /** A control message; a failure is logged and, for an attach, ends that subscriber with an error. */
  receive(msg: ControlMessage): void {
    try {
      if (msg.t === 'attach') this.outbox.replay(this.runId, msg.subId, this.buffer.replay(), this.finished);
      else this.cancel(msg.why, msg.message);
    } catch (err) {
      this.log('error', `run ${this.runId}: ${msg.t} failed`, err);
      if (msg.t === 'attach') this.outbox.replayFailed(this.runId, msg.subId, `replay failed: ${messageOf(err)}`);
    }
  }

  private cancel(why: CancelWhy, message: string): void {
    if (this.finished || this.cancelled) return;
    this.cancelled = why;
    this.controller.abort(new RunCancelled(why, message));
  }

  /** Starts the run function; any escape from it becomes the terminal `error` event, and is logged. */
  run<D>(fn: RunFunction<unknown, unknown, D>, request: unknown, deps: D): void {
    let started: Promise<void>;
    try {
      started = fn(this, request, deps);
    } catch (err) {
      started = Promise.reject(err);
    }
    started.then(
      () => {
        if (!this.finished) this.fail('run ended without a result');
      },
      (err: unknown) => {
        this.log('error', `run ${this.runId} threw`, err);
        this.fail(messageOf(err));
      },
    );
  }

  emit(event: string, data: unknown): void {
    if (this.finished) return;
    const frame = sseFrame(event, data);
    this.buffer.push(frame);
    this.outbox.frames(this.runId, frame);
  }

  emitKeyed(key: string, event: string, data: unknown): void {
    if (this.finished) return;
    const frame = sseFrame(event, data);
    this.buffer.upsert(key, frame);
    this.outbox.frames(this.runId, frame);
  }

  emitDelta(text: string): void {
    if (this.finished || text.length === 0) return;
    this.buffer.appendText(text);
    this.outbox.frames(this.runId, deltaFrame(text));
  }

  finish(event: 'done' | 'error', data: unknown, result: RunResult): void {
    if (this.finished) return;
    this.finished = true;
    const frame = sseFrame(event, data);
    this.buffer.end(frame);
    this.outbox.frames(this.runId, frame);
    this.outbox.end(this.runId, result);
  }

  log(level: 'warn' | 'error', message: string, err?: unknown): void {
    this.outbox.log(level, message, err);
  }

  private fail(message: string): void {
    this.finish('error', { type: 'error', message }, { ok: false, outcome: 'internal', message });
  }
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
