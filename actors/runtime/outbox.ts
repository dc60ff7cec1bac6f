// A host's outbound queue. Frames of one run emitted in the same event-loop turn are concatenated
// into one item, and the whole turn crosses the thread boundary as one message: the cost of the
// boundary is per batch, not per token.
import type { Batch, OutItem, RunResult } from './protocol.ts';

type FramesItem = Extract<OutItem, { t: 'frames' }>;

export class Outbox {
  private items: OutItem[] = [];
  private open = new Map<string, FramesItem>();
  private scheduled = false;
  private readonly send: (batch: Batch) => void;

  constructor(send: (batch: Batch) => void) {
    this.send = send;
  }

  frames(runId: string, data: string): void {
    const item = this.open.get(runId);
    if (item) {
      item.data += data;
      item.events++;
    } else {
      const fresh: FramesItem = { t: 'frames', runId, data, events: 1 };
      this.open.set(runId, fresh);
      this.enqueue(fresh);
    }
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
  log(level: 'warn' | 'error', message: string, err?: unknown): void {
    const error = err === undefined ? null : err instanceof Error ? (err.stack ?? err.message) : String(err);
    this.enqueue({ t: 'log', level, message, error });
  }

  end(runId: string, result: RunResult): void {
    this.open.delete(runId);
    this.enqueue({ t: 'end', runId, result });
  }

  private enqueue(item: OutItem): void {
    this.items.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private flush = (): void => {
    this.scheduled = false;
    const items = this.items;
    this.items = [];
    this.open.clear();
    if (items.length > 0) this.send({ t: 'batch', items });
  };
}
