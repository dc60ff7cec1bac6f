// Holds a round's text briefly while it is not yet known whether the round ends in tool calls,
// so that tool_call events can precede the answer's deltas (the spec's event order). Past a small
// size or age the text is let through: streaming must not wait for a whole answer. The age is a
// timer message in the run's mailbox, and is also checked as text arrives (a busy loop can delay
// the timer; the next text must not wait for it).
const HOLD_CHARS = 512;
const HOLD_MS = 1000;

/** The gate's timer, as a message of the chat run's mailbox. */
export type HoldExpired = { t: 'hold_expired'; round: number };

/** What the gate needs of the run's io. */
export interface GateIo {
  emitDelta(text: string): void;
  after(ms: number, msg: HoldExpired): unknown;
  cancelTimer(handle: unknown): void;
}

export class TextGate {
  private held = '';
  private holding: boolean;
  private since = 0;
  private timer: unknown = null;

  constructor(
    private readonly io: GateIo,
    hold: boolean,
    private readonly round: number,
  ) {
    this.holding = hold;
  }

  push(text: string): void {
    if (!this.holding) {
      this.io.emitDelta(text);
      return;
    }
    this.held += text;
    if (this.since === 0) {
      this.since = performance.now();
      this.timer = this.io.after(HOLD_MS, { t: 'hold_expired', round: this.round });
    }
    if (this.held.length >= HOLD_CHARS || performance.now() - this.since >= HOLD_MS) this.release();
  }

  /** The hold's timer fired: what is held is an answer's start, shown now. */
  expire(): void {
    if (this.holding) this.release();
  }

  /** The round is an answer: let the held text out and stream the rest directly. */
  release(): void {
    this.holding = false;
    this.stopTimer();
    if (this.held) {
      this.io.emitDelta(this.held);
      this.held = '';
    }
  }

  discard(): void {
    this.held = '';
    this.stopTimer();
  }

  private stopTimer(): void {
    if (this.timer === null) return;
    this.io.cancelTimer(this.timer);
    this.timer = null;
  }
}
