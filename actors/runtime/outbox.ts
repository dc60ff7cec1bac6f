// A host's outbound queue. Frames of one run emitted in the same event-loop turn are concatenated
// into one item, and the whole turn crosses the thread boundary as one message: the cost of the
// boundary is per batch, not per token.
//
// Batches are at least `gapMs` apart (1 ms by default): a batch whose turn comes sooner waits on a
// timer for the rest of the gap, collecting what later turns emit. A lone frame after a quiet spell
// still goes out at the end of its turn, unless it is a run's first (held, below); under load one
// thread crossing (a structured clone and a wake-up of the main thread, ~5 µs of a delta's ~40 when
// every turn sent its own) carries the frames of a millisecond, for at most a millisecond of added
// latency.
import type { Batch, BatchEntry, RunResult } from './protocol.ts';

export const DEFAULT_GAP_MS = 1;
/**
 * How long a run's first frames (a start's `meta`, which carries no text) may wait for something else
 * to cross with: a start whose first text follows within it crosses once, not twice, and its text never
 * waits, since anything that is not held takes the held frames along at once.
 */
export const DEFAULT_HOLD_MS = 5;

export class Outbox {
  private items: BatchEntry[] = [];
  /** Where each run's frames item of this batch starts in `items` (runId, data, events). */
  private open = new Map<string, number>();
  /** A flush is due (at the turn's end, or when the gap allows). */
  private due = false;
  /** Only held frames wait: their flush is on this timer. */
  private holdTimer: NodeJS.Timeout | null = null;
  private lastFlush = -Infinity;
  /** Starts taken up since the last batch (Batch.started), and their latencies' sum (Batch.startedMs). */
  private taken = 0;
  private takenMs = 0;
  private readonly send: (batch: Batch) => void;
  private readonly gapMs: number;
  private readonly holdMs: number;

  constructor(send: (batch: Batch) => void, options: { gapMs?: number; holdMs?: number } = {}) {
    this.send = send;
    this.gapMs = options.gapMs ?? DEFAULT_GAP_MS;
    this.holdMs = options.holdMs ?? DEFAULT_HOLD_MS;
  }

  /**
   * A run's frames. `hold`: they may wait up to holdMs for anything else to cross (a run's first
   * frames); whatever comes next, of any run, takes them along.
   */
  frames(runId: string, data: string, hold = false): void {
    const at = this.open.get(runId);
    if (at !== undefined) {
      const items = this.items;
      items[at + 1] = (items[at + 1] as string) + data;
      items[at + 2] = (items[at + 2] as number) + 1;
    } else {
      this.open.set(runId, this.items.length);
      this.items.push(runId, data, 1);
    }
    if (hold) this.hold();
    else this.schedule();
  }

  /**
   * A start is settled (taken up, or its run said so: RunHandle.startSettled). Said as a count on the
   * next batch, held as a run's first frames are (a frame that follows soon carries it); with nothing
   * else to send it is still said within holdMs.
   */
  started(ms: number): void {
    this.taken++;
    this.takenMs += ms;
    this.hold();
  }

  replay(runId: string, subId: number, data: string, ended: boolean): void {
    this.open.delete(runId);
    this.enqueue({ t: 'replay', runId, subId, data, ended });
  }

  replayFailed(runId: string, subId: number, message: string): void {
    this.enqueue({ t: 'replay_failed', runId, subId, message });
  }

  gone(runId: string, subId: number): void {
    this.enqueue({ t: 'gone', runId, subId });
  }

  /** A host's failure, logged on the main thread. */
  log(level: 'warn' | 'error', message: string, err?: unknown, runId?: string): void {
    const error = err === undefined ? null : err instanceof Error ? (err.stack ?? err.message) : String(err);
    this.enqueue(runId === undefined ? { t: 'log', level, message, error } : { t: 'log', level, message, error, runId });
  }

  end(runId: string, result: RunResult): void {
    this.open.delete(runId);
    this.enqueue({ t: 'end', runId, result });
  }

  private enqueue(item: Exclude<BatchEntry, string | number>): void {
    this.items.push(item);
    this.schedule();
  }

  private schedule(): void {
    if (this.due) return;
    if (this.holdTimer) {
      clearTimeout(this.holdTimer);
      this.holdTimer = null;
    }
    this.due = true;
    const wait = this.lastFlush + this.gapMs - performance.now();
    if (wait > 0) setTimeout(this.flush, wait);
    else setImmediate(this.flush);
  }

  private hold(): void {
    if (this.due || this.holdTimer) return;
    this.holdTimer = setTimeout(this.flush, this.holdMs);
  }

  private flush = (): void => {
    this.due = false;
    this.holdTimer = null;
    this.lastFlush = performance.now();
    const items = this.items;
    const started = this.taken;
    const startedMs = this.takenMs;
    this.items = [];
    this.taken = 0;
    this.takenMs = 0;
    this.open.clear();
    if (started > 0) this.send({ t: 'batch', items, started, startedMs });
    else if (items.length > 0) this.send({ t: 'batch', items });
  };
}
