// The checkpoint timer of one actor host: every CHECKPOINT_MS it takes the text each of the host's
// running persisted chat runs has streamed since the last tick and writes it, for all runs in one
// statement, as a chunk per run (store/checkpoints.ts). One timer per host, never one per run, and no
// I/O on the delta path (a tracked run's buffer keeps its new deltas in a list for the timer to join).
//
// A tick costs what the runs added, never what they hold: it joins only the new pieces (never slices
// or reads the whole answer, which would flatten it), and the statement carries only them. However
// fast the answers stream, one statement carries at most MAX_UNITS_PER_WRITE, shared fairly between
// the runs; what does not fit goes in the next statement, right after this one. And a tick gives its
// turn to callers waiting for a connection of the host's pool (a burst of starts), for at most
// MAX_YIELDS ticks in a row.
import type { Queryable } from '../db/types.ts';
import { cleanText } from '../store/values.ts';
import { writeCheckpoints, type CheckpointWrite } from '../store/checkpoints.ts';

/** What the timer reads of a run: its new streamed text, and whether it has ended. */
export interface StreamedText {
  /** The text streamed since the previous call; the first call answers all of it so far. */
  newText(): string;
  /** The lengths of the deltas newText() answered, for a run that keeps them (keepDeltas); else null. */
  newDeltaLengths?(): number[] | null;
  readonly finished: boolean;
}

export interface CheckpointedRun {
  callId: string;
  chatId: string;
  runToken: number;
  /** UTF-16 units at the start of the run's text that its call already holds (a takeover's resumed text). */
  stored?: number;
  /** The run's traceparent (tracing on), stored with its first chunk for a takeover to link to. */
  trace?: string;
}

/**
 * UTF-16 units (256 KB of UTF-8 for ASCII text) one statement carries at most, over all its runs: 10 to
 * 15 ms here on Postgres or PGlite (bench/ledger/checkpoint-growth.ts, CKPT_STEP=65536), so a start
 * queued behind it on the pool waits no longer than that.
 * A host whose runs stream more per interval writes it in successive statements (each as bounded).
 */
export const MAX_UNITS_PER_WRITE = 1 << 18;

/** Ticks in a row a checkpoint waits for callers queued on the pool before it goes anyway. */
export const MAX_YIELDS = 3;

interface Entry {
  ids: CheckpointedRun;
  run: StreamedText;
  /** Units of the run's text still to skip: held by the call before this host streamed anything. */
  skip: number;
  /** Where the next chunk starts in the run's text (UTF-16 units): everything before it is written. */
  at: number;
  /** Text taken from the run and not yet written, in the pieces it came in. */
  unwritten: string[];
  /** Its length in UTF-16 units. */
  size: number;
  /**
   * The lengths of the deltas the unwritten text came in, for a run that keeps them (null: it does not),
   * the first one less the `cut` units of it already written: each chunk stores its deltas, so that a
   * takeover streams the checkpointed text in the very deltas (the OpenAI-compatible API numbers them).
   */
  lengths: number[] | null;
  cut: number;
}

/** Callers waiting for a connection of `db` (a pg.Pool counts them; anything else: none). */
const waitingOn = (db: Queryable): number => (db as { waitingCount?: number }).waitingCount ?? 0;

/**
 * Each run's share of `budget` units: everything while the total fits; else the smaller backlogs whole
 * and what is left split evenly between the larger ones (water-filling), so one huge answer never holds
 * back the checkpoints of the others.
 */
export function shares(sizes: readonly number[], budget: number): number[] {
  let total = 0;
  for (const s of sizes) total += s;
  if (total <= budget) return [...sizes];
  const order = sizes.map((_, i) => i).sort((a, b) => sizes[a]! - sizes[b]!);
  const out = new Array<number>(sizes.length);
  let left = budget;
  order.forEach((i, k) => {
    out[i] = Math.min(sizes[i]!, Math.floor(left / (sizes.length - k)));
    left -= out[i]!;
  });
  return out;
}

/**
 * The first `max` units of the entry's unwritten text, never ending inside a surrogate pair (either
 * half alone would be stored as U+FFFD): a high surrogate at the end waits for the next chunk.
 */
function head(entry: Entry, max: number): string {
  let text = '';
  for (const piece of entry.unwritten) {
    const room = max - text.length;
    if (piece.length >= room) {
      text += piece.slice(0, room);
      break;
    }
    text += piece;
  }
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}

/**
 * The deltas of the entry's next `units` as a Postgres array literal: their lengths in order, the first
 * one negative when it continues a delta the previous chunk began (recovery joins them again).
 */
function chunkDeltas(entry: Entry, units: number): string | null {
  const { lengths } = entry;
  if (lengths === null) return null;
  const out: number[] = [];
  for (let i = 0, left = units; left > 0 && i < lengths.length; i++) {
    const piece = Math.min(left, lengths[i]! - (i === 0 ? entry.cut : 0));
    out.push(i === 0 && entry.cut > 0 ? -piece : piece);
    left -= piece;
  }
  return `{${out.join(',')}}`;
}

/** Drops the first `units` of the entry's delta lengths: written (or skipped). */
function dropLengths(entry: Entry, units: number): void {
  const { lengths } = entry;
  if (lengths === null) return;
  let n = 0;
  while (units > 0 && n < lengths.length) {
    const rest = lengths[n]! - entry.cut;
    if (rest > units) {
      entry.cut += units;
      break;
    }
    units -= rest;
    entry.cut = 0;
    n++;
  }
  lengths.splice(0, n);
}

/** Drops the first `units` of the entry's unwritten text: they are written. */
function drop(entry: Entry, units: number): void {
  entry.at += units;
  entry.size -= units;
  let n = 0;
  while (units > 0) {
    const piece = entry.unwritten[n]!;
    if (piece.length > units) {
      entry.unwritten[n] = piece.slice(units);
      break;
    }
    units -= piece.length;
    n++;
  }
  entry.unwritten.splice(0, n);
}

export class Checkpoints {
  private readonly entries = new Set<Entry>();
  private timer: NodeJS.Timeout | null = null;
  private writing = false;
  private yields = 0;
  /** Ticks that gave their turn to callers queued on the pool (tests read it). */
  yielded = 0;

  constructor(
    private readonly db: Queryable,
    readonly intervalMs: number,
    private readonly onError: (err: unknown) => void = () => undefined,
    /** Called once per checkpoint statement that succeeded (css_checkpoints_total). */
    private readonly onWritten: () => void = () => undefined,
    private readonly maxUnits = MAX_UNITS_PER_WRITE,
  ) {}

  /** Starts checkpointing `run` (its call and chat are stored, its fencing token known) until it ends. */
  track(run: StreamedText, ids: CheckpointedRun): void {
    if (!(this.intervalMs > 0)) return;
    const stored = ids.stored ?? 0;
    this.entries.add({ ids, run, skip: stored, at: stored, unwritten: [], size: 0, lengths: null, cut: 0 });
    if (this.timer) return;
    this.timer = setInterval(this.tick, this.intervalMs);
    // Checkpoints never keep a stopping process alive.
    this.timer.unref();
  }

  /** Runs being checkpointed (ended ones leave at the next tick). */
  get size(): number {
    return this.entries.size;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.entries.clear();
  }

  /** Takes what the run streamed since the last tick into its unwritten text. */
  private take(entry: Entry): void {
    let text = entry.run.newText();
    const lengths = entry.run.newDeltaLengths?.() ?? null;
    if (lengths !== null) {
      entry.lengths ??= [];
      for (const n of lengths) entry.lengths.push(n);
    }
    if (entry.skip > 0) {
      const skipped = Math.min(entry.skip, text.length);
      text = text.slice(skipped);
      entry.skip -= skipped;
      dropLengths(entry, skipped);
    }
    if (text.length === 0) return;
    entry.unwritten.push(text);
    entry.size += text.length;
  }

  private readonly tick = (): void => {
    // Before the write check: a statement that hangs must not keep every run this host ends meanwhile.
    this.prune();
    // A write slower than the interval: this tick's text goes with the next one instead of piling up.
    if (this.writing) return;
    // Starts queued for a connection go first: this tick's text goes with a later one.
    if (waitingOn(this.db) > 0 && this.yields < MAX_YIELDS) {
      this.yields++;
      this.yielded++;
      return;
    }
    this.yields = 0;
    this.write();
  };

  /** Text left behind by a statement the budget cut: the next one follows it, unless callers queue for the pool. */
  private readonly more = (): void => {
    this.prune();
    if (!this.writing && this.timer !== null && waitingOn(this.db) === 0) this.write();
  };

  private prune(): void {
    for (const entry of this.entries) if (entry.run.finished) this.entries.delete(entry);
    if (this.entries.size === 0) this.stop();
  }

  /** One statement: every run's new text, at most the budget of it. */
  private write(): void {
    const entries = [...this.entries];
    for (const entry of entries) this.take(entry);
    const sizes = entries.map((e) => e.size);
    const allowed = shares(sizes, this.maxUnits);
    const cut = allowed.some((a, i) => a < sizes[i]!);
    const batch: Array<{ entry: Entry; units: number; write: CheckpointWrite }> = [];
    entries.forEach((entry, i) => {
      const text = allowed[i]! > 0 ? head(entry, allowed[i]!) : '';
      if (text === '') return;
      const { callId, chatId, runToken, stored, trace } = entry.ids;
      // The run's first chunk carries its traceparent (a takeover's span links to it).
      const first = entry.at === (stored ?? 0);
      const kept = cleanText(text);
      // Text the database cannot hold (U+0000) is stored shorter: its cuts would no longer fit it, so none are kept.
      const deltas = kept.length === text.length ? chunkDeltas(entry, text.length) : null;
      batch.push({ entry, units: text.length, write: { callId, chatId, runToken, at: entry.at, text: kept, deltas, trace: first ? (trace ?? null) : null } });
    });
    if (batch.length === 0) return;
    this.writing = true;
    writeCheckpoints(this.db, batch.map((b) => b.write))
      .then(
        (written) => {
          this.onWritten();
          for (const { entry, units } of batch) {
            // Ended meanwhile, or fenced off by a later run: nothing of it may be written any more.
            if (!written.has(entry.ids.callId)) this.entries.delete(entry);
            else {
              drop(entry, units);
              dropLengths(entry, units);
            }
          }
          this.writing = false;
          // Each such statement writes a budget's worth: the backlog drains, in statements of bounded cost.
          if (cut) setImmediate(this.more);
        },
        (err: unknown) => {
          this.writing = false;
          this.onError(err);
        },
      );
  }
}
