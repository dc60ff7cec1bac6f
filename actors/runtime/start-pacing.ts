// The supervisor's way to its hosts, paced: a start goes at once or waits its turn (StartPacer), and
// every message meant for a run whose start waits is held behind that start, so its host hears them
// in the order they were sent. The supervisor counts each host's starts in flight (`unheard`) here,
// and the waiting starts whose turn has come go after a batch's frames went out.
import type { Batch, RunOutcome, ToHost } from './protocol.ts';
import type { StartRefusal } from './registry.ts';

/**
 * Decides whether a new run starts, and when its start goes to its host: a start beyond what the
 * hosts keep up with waits its turn (the service's adaptive admission, src/admission/). The
 * supervisor reports each start its host settled, with its latency; the frames of running runs are
 * handled before the starts that were waiting are sent.
 */
export interface StartPacer {
  /** Handed the supervisor when it is made: its run count and its starts in flight are the ones the pacer reads. */
  watchRuns(runs: { readonly activeCount: number; readonly startBacklog: number }): void;
  /** Null: the run may start; otherwise why not. */
  admit(active: number, owner?: string): StartRefusal | null;
  /**
   * The run `start` may go to its host now (true), or waits its turn (false): `next` hands it back.
   * The starts in flight are the supervisor's own count (`startBacklog`), which the pacer reads.
   */
  take(start: unknown, owner?: string): boolean;
  /** The waiting start whose turn has come, or undefined. */
  next(): unknown;
  /** A waiting start dropped (a flood that lasts, and it waited too long), to be ended with `refusal`; or undefined. */
  drop(): { start: unknown; refusal: StartRefusal } | undefined;
  /** Takes a waiting start out (its run is ended before it went): false when it is not waiting. */
  withdraw(start: unknown, owner?: string): boolean;
  /** A start sent to a host was settled, `ms` after its host made its run; `startBacklog` no longer counts it. */
  settled(ms: number): void;
}

/** A host as the pacing sees it. */
export interface PacedHost {
  readonly port: { send(msg: ToHost): void };
  /** Starts sent to this host that it has not yet said it took up (Batch.started). */
  unheard: number;
}

/** A run as the pacing sees it. */
export interface PacedRun {
  readonly owner?: string;
  readonly host: PacedHost;
  readonly ended: boolean;
  /** While its start waits its turn (StartPacer): that start, then what else was meant for its host, in order. */
  held: ToHost[] | null;
}

export class PacedStarts<R extends PacedRun> {
  /**
   * `pacer` absent: every start goes at once. `end` ends a run whose start never went (dropped while
   * it waited), as the supervisor ends runs their host cannot end.
   */
  constructor(
    private readonly pacer: StartPacer | undefined,
    private readonly end: (run: R, message: string, outcome: RunOutcome) => void,
  ) {}

  /** A new run's start: to its host now, or held until its turn comes. */
  start(run: R, start: ToHost): void {
    if (this.pacer === undefined || this.pacer.take(run, run.owner)) this.sendStart(run.host, start);
    else run.held = [start];
  }

  /** A message for a run's host; held behind its start while that waits its turn. */
  send(run: R, msg: ToHost): void {
    if (run.held === null) run.host.port.send(msg);
    else run.held.push(msg);
  }

  /** Takes a start still waiting its turn out: true when it was waiting (its host will never hear of it). */
  withdraw(run: R): boolean {
    if (run.held === null || !this.pacer?.withdraw(run, run.owner)) return false;
    run.held = null;
    return true;
  }

  /** A batch from `host`: handled by `handle`, then its settled starts counted out and the waiting ones whose turn came sent. */
  onBatch(host: PacedHost, batch: Batch, handle: (batch: Batch) => void): void {
    const settled = batch.started === undefined ? 0 : Math.min(batch.started, host.unheard);
    const pacer = this.pacer;
    if (pacer === undefined) host.unheard -= settled;
    handle(batch);
    if (settled === 0 || pacer === undefined) return;
    // Each at the batch's mean: the host's own measure, without the time this thread took to read it;
    // counted out one by one, so that each sample sees what was in flight beside it.
    const ms = (batch.startedMs ?? 0) / batch.started!;
    for (let i = 0; i < settled; i++) {
      host.unheard--;
      pacer.settled(ms);
    }
    this.sendWaiting();
  }

  /** A host died: its unsettled starts will never settle, so their places free (the waiting ones ended go when their turn comes). */
  hostLost(host: PacedHost): void {
    host.unheard = 0;
    if (this.pacer) this.sendWaiting();
  }

  private sendStart(host: PacedHost, start: ToHost): void {
    host.unheard++;
    host.port.send(start);
  }

  /** Sends the waiting starts whose turn has come (after a batch's frames went out). */
  private sendWaiting(): void {
    const pacer = this.pacer!;
    // Dropped while they waited (adaptive LIFO under a flood that lasts): ended with the refusal, never sent.
    for (let d = pacer.drop(); d !== undefined; d = pacer.drop()) {
      const gone = d.start as R;
      gone.held = null;
      if (!gone.ended) this.end(gone, d.refusal.message, d.refusal.outcome);
    }
    for (let next = pacer.next() as R | undefined; next !== undefined; next = pacer.next() as R | undefined) {
      const held = next.held!;
      next.held = null;
      // Ended while it waited (its host died, a shutdown gave up on it): nothing goes.
      if (next.ended) continue;
      this.sendStart(next.host, held[0]!);
      for (let i = 1; i < held.length; i++) next.host.port.send(held[i]!);
    }
  }
}
