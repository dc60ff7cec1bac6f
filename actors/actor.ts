// A run actor: one active chat or search run. It owns the run's event buffer and the abort signal
// of its provider/tool loop, and guarantees exactly one terminal event.
import { EventBuffer } from './event-buffer.ts';
import { deltaFrame, sseFrame } from './frame.ts';
import { Mailbox } from './mailbox.ts';
import type { Outbox } from './outbox.ts';
import type { RunResult, ToHost } from './protocol.ts';

/** What a run function sees of its actor. */
export interface RunContext {
  readonly runId: string;
  readonly signal: AbortSignal;
  emit(event: string, data: unknown): void;
  /** An event whose later states replace earlier ones on replay (tool calls, search events). */
  emitKeyed(key: string, event: string, data: unknown): void;
  emitDelta(text: string): void;
  /** Every delta's text so far, concatenated (kept once, by the replay buffer). */
  readonly deltaText: string;
  /** The terminal event; the first call wins, later ones are ignored. */
  finish(event: 'done' | 'error', data: unknown, result: RunResult): void;
  readonly finished: boolean;
}

export type RunFunction<Deps> = (ctx: RunContext, request: any, deps: Deps) => Promise<void>;

type ActorMessage = Exclude<ToHost, { t: 'start' } | { t: 'release' }>;

export class Actor implements RunContext {
  readonly runId: string;
  private readonly buffer = new EventBuffer();
  private readonly controller = new AbortController();
  private readonly outbox: Outbox;
  private readonly mailbox: Mailbox<ActorMessage>;
  finished = false;

  constructor(runId: string, outbox: Outbox) {
    this.runId = runId;
    this.outbox = outbox;
    this.mailbox = new Mailbox<ActorMessage>(
      (msg) => this.receive(msg),
      () => {},
    );
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get deltaText(): string {
    return this.buffer.deltaText;
  }

  post(msg: ActorMessage): void {
    this.mailbox.post(msg);
  }

  private receive(msg: ActorMessage): void {
    if (msg.t === 'attach') {
      this.outbox.replay(this.runId, msg.subId, this.buffer.replay(), this.finished);
    } else if (msg.t === 'cancel') {
      this.controller.abort(new Error(msg.reason));
    }
  }

  /** Starts the run function; any escape from it becomes the terminal `error` event. */
  run<D>(fn: RunFunction<D>, request: unknown, deps: D): void {
    fn(this, request, deps).then(
      () => {
        if (!this.finished) this.fail('run ended without a result');
      },
      (err: unknown) => this.fail(err instanceof Error ? err.message : String(err)),
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

  private fail(message: string): void {
    this.finish('error', { type: 'error', message }, { ok: false, status: 500, message });
  }
}
