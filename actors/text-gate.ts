// Holds a round's text briefly while it is not yet known whether the round ends in tool calls,
// so that tool_call events can precede the answer's deltas (the spec's event order). Past a small
// size or age the text is let through: streaming must not wait for a whole answer.
import type { RunContext } from './runtime/actor.ts';

const HOLD_CHARS = 512;
const HOLD_MS = 1000;

export class TextGate {
  private held = '';
  private holding: boolean;
  private since = 0;
  private readonly ctx: RunContext;

  constructor(ctx: RunContext, hold: boolean) {
    this.ctx = ctx;
    this.holding = hold;
  }

  /** Bound, so it can be handed to a provider session as its text callback. */
  push = (text: string): void => {
    if (!this.holding) {
      this.ctx.emitDelta(text);
      return;
    }
    this.held += text;
    if (this.since === 0) this.since = performance.now();
    if (this.held.length >= HOLD_CHARS || performance.now() - this.since >= HOLD_MS) this.release();
  };

  /** The round is an answer: let the held text out and stream the rest directly. */
  release(): void {
    this.holding = false;
    if (this.held) {
      this.ctx.emitDelta(this.held);
      this.held = '';
    }
  }

  discard(): void {
    this.held = '';
  }
}
