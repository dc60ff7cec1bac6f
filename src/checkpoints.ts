// The checkpoint timer of one actor host: every CHECKPOINT_MS it reads the text each of the host's
// running persisted chat runs has streamed (the replay buffer keeps it anyway) and writes what is new
// since the last checkpoint, for all runs in one statement (store/checkpoints.ts). One timer per
// host, never one per run, and nothing on the delta path: a delta costs the same with checkpoints on.
import type { Queryable } from './db/types.ts';
import { cleanText } from './store/values.ts';
import { writeCheckpoints, type CheckpointWrite } from './store/checkpoints.ts';

/** What the timer reads of a run: its streamed text so far, and whether it has ended. */
export interface StreamedText {
  readonly deltaText: string;
  readonly finished: boolean;
}

export interface CheckpointedRun {
  callId: string;
  chatId: string;
  runToken: number;
  /** The run's traceparent (tracing on), stored with its first checkpoint for a takeover to link to. */
  trace?: string;
}

interface Entry extends CheckpointedRun {
  run: StreamedText;
  /** UTF-16 units of the run's text already written, and the code points they are in Postgres. */
  units: number;
  chars: number;
}

/** Code points, as Postgres's left() and length() count them. */
function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++;
  }
  return n;
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

export class Checkpoints {
  private readonly entries = new Set<Entry>();
  private timer: NodeJS.Timeout | null = null;
  private writing = false;

  constructor(
    private readonly db: Queryable,
    readonly intervalMs: number,
    private readonly onError: (err: unknown) => void = () => undefined,
    /** Called once per checkpoint statement that succeeded (css_checkpoints_total). */
    private readonly onWritten: () => void = () => undefined,
  ) {}

  /** Starts checkpointing `run` (its call and chat are stored, its fencing token known) until it ends. */
  track(run: StreamedText, ids: CheckpointedRun): void {
    if (!(this.intervalMs > 0)) return;
    this.entries.add({ ...ids, run, units: 0, chars: 0 });
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

  private readonly tick = (): void => {
    // Before the write check: a statement that hangs must not keep every run this host ends meanwhile.
    for (const entry of this.entries) if (entry.run.finished) this.entries.delete(entry);
    // A write slower than the interval: this tick's text goes with the next one instead of piling up.
    if (this.writing) return;
    const batch: Array<{ entry: Entry; units: number; write: CheckpointWrite }> = [];
    for (const entry of this.entries) {
      const text = entry.run.deltaText;
      let units = text.length;
      // Never split a surrogate pair between two checkpoints: each half alone would become U+FFFD.
      if (units > entry.units && isHighSurrogate(text.charCodeAt(units - 1))) units--;
      if (units <= entry.units) continue;
      const added = cleanText(text.slice(entry.units, units));
      const trace = entry.chars === 0 ? (entry.trace ?? null) : null;
      batch.push({ entry, units, write: { callId: entry.callId, chatId: entry.chatId, runToken: entry.runToken, from: entry.chars, text: added, trace } });
    }
    if (this.entries.size === 0) this.stop();
    if (batch.length === 0) return;
    this.writing = true;
    writeCheckpoints(this.db, batch.map((b) => b.write))
      .then((written) => {
        this.onWritten();
        for (const { entry, units, write } of batch) {
          if (!written.has(entry.callId)) {
            // Ended meanwhile, or fenced off by a later run: nothing of it may be written any more.
            this.entries.delete(entry);
            continue;
          }
          entry.units = units;
          entry.chars += codePoints(write.text);
        }
      }, this.onError)
      .finally(() => {
        this.writing = false;
      });
  };
}
