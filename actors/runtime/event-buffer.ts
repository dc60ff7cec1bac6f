// A run's replay buffer, bounded by coalescing rather than by dropping: consecutive deltas merge
// into one text (the spec lets replayed deltas carry earlier text), and keyed events (a tool call
// by toolCallId, a search event by name) keep only their latest frame. Its size follows the
// answer's length and the number of distinct tool calls, never the number of tokens.
import { deltaFrame } from './frame.ts';

/** A buffer as plain data (a run's snapshot): its frames, its text and, when kept, each delta's length. */
export interface BufferSnapshot {
  readonly head: string;
  readonly keyed: ReadonlyArray<readonly [string, string]>;
  readonly text: string;
  readonly tail: string;
  readonly lengths: readonly number[] | null;
}

export class EventBuffer {
  private head = '';
  private readonly keyed = new Map<string, string>();
  private text = '';
  private tail = '';
  /**
   * Each delta's length, when the run's readers number its deltas (the OpenAI-compatible API's resume by
   * sequence number): its replay then sends the deltas as they were, not merged. Null: merged.
   */
  private readonly lengths: number[] | null;
  /**
   * The delta text appended since the last newText(), as appended: null until a reader first asks, so
   * a run nobody checkpoints keeps nothing twice. The pieces are the same strings `text` holds.
   */
  private unread: string[] | null = null;
  /** How many of `lengths` newDeltaLengths() has answered. */
  private lengthsRead = 0;

  constructor(keepDeltas = false) {
    this.lengths = keepDeltas ? [] : null;
  }

  /** A frame kept as is, in order (e.g. `meta`). */
  push(frame: string): void {
    this.head += frame;
  }

  /** A frame that replaces the earlier one with the same key. */
  upsert(key: string, frame: string): void {
    this.keyed.set(key, frame);
  }

  appendText(text: string): void {
    this.text += text;
    this.lengths?.push(text.length);
    if (this.unread !== null) this.unread.push(text);
  }

  /** The terminal frame (`done` or `error`). */
  end(frame: string): void {
    this.tail = frame;
  }

  /** Nothing emitted yet: the next frame is the run's first. */
  get empty(): boolean {
    return this.head === '' && this.keyed.size === 0 && this.text === '' && this.tail === '';
  }

  /** All delta text so far: for a chat, the answer as streamed. */
  get deltaText(): string {
    return this.text;
  }

  /** Each delta's length, when kept (the constructor's keepDeltas); else null. */
  get deltaLengths(): readonly number[] | null {
    return this.lengths;
  }

  /**
   * The delta text appended since the previous call (the first call: all of it so far), for the one
   * reader that follows a run's text as it grows (the host's checkpoint timer). Only the new pieces are
   * joined: reading or slicing `deltaText` instead would flatten the whole answer, an O(answer) copy on
   * every read.
   */
  newText(): string {
    const unread = this.unread;
    if (unread === null) {
      this.unread = [];
      return this.text;
    }
    if (unread.length === 0) return '';
    const text = unread.length === 1 ? unread[0]! : unread.join('');
    unread.length = 0;
    return text;
  }

  /**
   * The lengths of the deltas appended since the previous call (the first call: all so far), when kept;
   * read beside newText() by the same reader, so both answer the same deltas.
   */
  newDeltaLengths(): number[] | null {
    const lengths = this.lengths;
    if (lengths === null) return null;
    const from = this.lengthsRead;
    this.lengthsRead = lengths.length;
    return lengths.slice(from);
  }

  /** Its frames and text; a reader's place (newText) is the reader's, not kept. */
  snapshot(): BufferSnapshot {
    return { head: this.head, keyed: [...this.keyed], text: this.text, tail: this.tail, lengths: this.lengths && [...this.lengths] };
  }

  static from(snap: BufferSnapshot): EventBuffer {
    const b = new EventBuffer(snap.lengths !== null);
    b.head = snap.head;
    for (const [k, v] of snap.keyed) b.keyed.set(k, v);
    b.text = snap.text;
    b.tail = snap.tail;
    if (snap.lengths) b.lengths!.push(...snap.lengths);
    return b;
  }

  replay(): string {
    let out = this.head;
    for (const frame of this.keyed.values()) out += frame;
    if (this.lengths) {
      let at = 0;
      for (const n of this.lengths) out += deltaFrame(this.text.slice(at, (at += n)));
    } else if (this.text) out += deltaFrame(this.text);
    return out + this.tail;
  }
}
