// Holds a round's text briefly while it is not yet known whether the round ends in tool calls, so
// that tool_call events can precede the answer's deltas (the spec's event order, chat streaming rule
// 7). "Briefly" is TOOL_TEXT_HOLD_MS or TOOL_TEXT_HOLD_CHARS, whichever comes first: streaming must
// not wait for a whole answer. The wire often tells sooner: a provider that begins a tool call makes
// the round's text commentary (dropped at the round's end), and one whose text item is known complete
// without a call makes it the answer (let out at once).
//
// The gate is plain data in the run's streaming state; these functions are its only transitions.
// Its age is a timer message in the run's mailbox, and is also checked as text arrives (a busy loop
// can delay the timer; the next text must not wait for it).
import type { Config } from '../src/base/config.ts';
import type { RoundHint } from '../src/providers/types.ts';
import type { Handle } from './runtime/actor.ts';

/** The gate's timer, as a message of the chat run's mailbox. */
export type HoldExpired = { t: 'hold_expired'; round: number };

export type Gate =
  /** Text goes out as it comes: no tools were offered, or the round is known to be an answer. */
  | { g: 'open' }
  /** Not yet known: text is held since `since` (null: nothing held yet), `timer` ends the hold. */
  | { g: 'holding'; held: string; since: number | null; timer: Handle | null }
  /**
   * The provider began a tool call: the text is commentary, kept out of the stream until the round
   * ends (dropped then, or let out should the round end without calls after all).
   */
  | { g: 'calls'; held: string };

/** What the gate needs of the run's io. */
export interface GateIo {
  readonly deps: { readonly config: Pick<Config, 'TOOL_TEXT_HOLD_MS' | 'TOOL_TEXT_HOLD_CHARS'> };
  emitDelta(text: string): void;
  after(ms: number, msg: HoldExpired): Handle;
  cancelTimer(handle: Handle): void;
  now(): number;
}

const OPEN: Gate = { g: 'open' };

/** A round's gate: held only while tools are offered (the round may then end in tool calls). */
export function newGate(hold: boolean): Gate {
  return hold ? { g: 'holding', held: '', since: null, timer: null } : OPEN;
}

/** A piece of the round's text. */
export function gateText(gate: Gate, text: string, round: number, io: GateIo): Gate {
  if (gate.g === 'open') {
    io.emitDelta(text);
    return gate;
  }
  const held = gate.held + text;
  if (gate.g === 'calls') return { g: 'calls', held };
  const { TOOL_TEXT_HOLD_MS: ms, TOOL_TEXT_HOLD_CHARS: chars } = io.deps.config;
  const now = io.now();
  const since = gate.since ?? now;
  const next: Gate = { g: 'holding', held, since, timer: gate.timer };
  if (held.length >= chars || now - since >= ms) return gateRelease(next, io);
  if (gate.since === null) next.timer = io.after(ms, { t: 'hold_expired', round });
  return next;
}

/** The hold's timer fired: what is held is an answer's start, shown now. */
export function gateExpired(gate: Gate, io: GateIo): Gate {
  return gate.g === 'holding' ? gateRelease(gate, io) : gate;
}

/** What the wire told before the round's end. */
export function gateHint(gate: Gate, hint: RoundHint, io: GateIo): Gate {
  if (gate.g === 'open') return gate;
  if (hint === 'text_end') return gate.g === 'holding' ? gateRelease(gate, io) : gate;
  stopTimer(gate, io);
  return { g: 'calls', held: gate.held };
}

/** The round is an answer: the held text goes out and the rest streams directly. */
export function gateRelease(gate: Gate, io: GateIo): Gate {
  if (gate.g === 'open') return gate;
  stopTimer(gate, io);
  if (gate.held) io.emitDelta(gate.held);
  return OPEN;
}

/** The round ended in tool calls (or failed): what is held is dropped. */
export function gateDiscard(gate: Gate, io: GateIo): Gate {
  stopTimer(gate, io);
  return OPEN;
}

function stopTimer(gate: Gate, io: GateIo): void {
  if (gate.g === 'holding' && gate.timer !== null) io.cancelTimer(gate.timer);
}
