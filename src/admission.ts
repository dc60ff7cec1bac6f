// Whether this instance takes a new run: the one decision behind every start (the supervisor asks
// it synchronously, with its active count). Three reasons to refuse, checked in this order:
// draining (a SIGTERM came: the runs here finish, new ones go elsewhere), capacity (MAX_ACTIVE_RUNS)
// and overload (an event loop running late, so every stream here is already slowing down; more
// starts unfinished than the actor threads and the database keep up with, or a thread's loop nearly
// full, so they are about to). The refusals are built once: the accept path allocates nothing and reads a
// few numbers. The router asks it too, before a start's body is read (`shedding`): none of the three
// needs anything from the request, so a flood is refused for the price of its headers
// (src/http/early-refusal.ts).
import type { StartRefusal } from '../actors/runtime/registry.ts';

export const DRAINING_MESSAGE = 'server is draining';
export const OVERLOADED_MESSAGE = 'server is overloaded, retry later';

export type RefusalReason = 'capacity' | 'overload' | 'draining' | 'user_runs' | 'user_tokens' | 'user_cost';

/** The threads' saturation as of the question (LagBoard). */
export interface LagSignal {
  /** The worst lag, a stall still going on included. */
  lagNow(): number;
  /** The busiest thread's share of its last moments, 0–1. */
  busyNow(): number;
}

/** What the supervisor counts: its runs (Supervisor.activeCount) and the starts not yet finished by the actor threads (Supervisor.startBacklog). */
export interface RunCounts {
  readonly activeCount: number;
  readonly startBacklog: number;
}

export interface AdmissionOptions {
  maxActiveRuns: number;
  /** Refuse while the worst thread's event-loop delay p99 exceeds this; 0: never. */
  overloadLagMs: number;
  /** Refuse while this many starts are unfinished (Supervisor.startBacklog; OVERLOAD_START_BACKLOG); 0 or absent: never. */
  overloadStartBacklog?: number;
  /** Refuse while a thread's loop was busy more than this percentage of its last BUSY_WINDOW_MS (OVERLOAD_BUSY_PERCENT); 0 or absent: never. */
  overloadBusyPercent?: number;
}

export class Admission {
  private readonly maxActiveRuns: number;
  private readonly overloadLagMs: number;
  private readonly overloadStartBacklog: number;
  /** OVERLOAD_BUSY_PERCENT as a share (0: never). */
  private readonly overloadBusy: number;
  private readonly refusals: Record<'capacity' | 'overload' | 'draining', StartRefusal>;
  /** Refusals so far, by reason (css_runs_refused_total). */
  readonly refused: Record<RefusalReason, number> = { capacity: 0, overload: 0, draining: 0, user_runs: 0, user_tokens: 0, user_cost: 0 };
  private drainingNow = false;
  /** The worst thread's event-loop delay p99 in ms as of the last fold (LagBoard keeps it current; the gauge shows it). */
  lagMs = 0;
  /** Read at each decision, so a loop running late now counts before its next fold; null: lagMs alone. */
  private signal: LagSignal | null = null;
  private runs: RunCounts | null = null;

  constructor(opts: AdmissionOptions) {
    this.maxActiveRuns = opts.maxActiveRuns;
    this.overloadLagMs = opts.overloadLagMs;
    this.overloadStartBacklog = opts.overloadStartBacklog ?? 0;
    this.overloadBusy = (opts.overloadBusyPercent ?? 0) / 100;
    this.refusals = {
      draining: { ok: false, outcome: 'draining', message: DRAINING_MESSAGE },
      capacity: { ok: false, outcome: 'capacity', message: `server is at capacity (${opts.maxActiveRuns} active runs); retry shortly` },
      overload: { ok: false, outcome: 'overloaded', message: OVERLOADED_MESSAGE },
    };
  }

  get draining(): boolean {
    return this.drainingNow;
  }

  /** From now on every new run is refused; runs already going are not touched. */
  drain(): void {
    this.drainingNow = true;
  }

  /** From now on overload is judged by `signal` at each decision (its lag and its busy share). */
  watch(signal: LagSignal): void {
    this.signal = signal;
  }

  /** From now on the supervisor's counts are read at each question: the unfinished starts, and the runs (for `shedding`). */
  watchRuns(runs: RunCounts): void {
    this.runs = runs;
  }

  get overloaded(): boolean {
    return this.lagging || this.backlogged || this.busy;
  }

  /** An event loop is late: the running streams are already slowed. */
  private get lagging(): boolean {
    if (this.overloadLagMs <= 0) return false;
    return this.lagMs > this.overloadLagMs || (this.signal !== null && this.signal.lagNow() > this.overloadLagMs);
  }

  /**
   * The actor threads or the database are behind the starts: the flood is ahead of them, and the work
   * it queues would delay the running streams' deltas behind it. A chat start counts until its first
   * statement answers, and that statement slows with everything that shares the machine (Postgres is
   * one more process on its cores), which the loops' own signals cannot see. Read at each decision; it
   * needs no clock or window, so it refuses in the very turn the starts outrun them, and takes starts
   * again the turn they catch up. It also bounds the starts a thread takes up in one turn.
   */
  private get backlogged(): boolean {
    return this.overloadStartBacklog > 0 && this.runs !== null && this.runs.startBacklog >= this.overloadStartBacklog;
  }

  /** The busiest thread's share of its last BUSY_WINDOW_MS, 0–1 (0 while nothing reports it: the gauge shows it). */
  busyNow(): number {
    return this.signal === null ? 0 : this.signal.busyNow();
  }

  /**
   * A thread's loop was nearly full over its last BUSY_WINDOW_MS: on time still, but each start taken
   * now would queue the running streams' deltas behind its work.
   */
  private get busy(): boolean {
    return this.overloadBusy > 0 && this.signal !== null && this.signal.busyNow() > this.overloadBusy;
  }

  /**
   * Why a new run would be refused now whatever the request says (draining, capacity once the
   * supervisor's runs are watched, overload), or null. Not counted: the caller counts it (`count`)
   * once it has answered with it.
   */
  shedding(): 'draining' | 'capacity' | 'overload' | null {
    if (this.drainingNow) return 'draining';
    if (this.runs !== null && this.runs.activeCount >= this.maxActiveRuns) return 'capacity';
    return this.overloaded ? 'overload' : null;
  }

  /** The capacity refusal's message, which names MAX_ACTIVE_RUNS (the early refusal answers with it). */
  get capacityMessage(): string {
    return this.refusals.capacity.message;
  }

  /** A refusal answered without asking `admit` (the router's early refusal). */
  count(reason: RefusalReason): void {
    this.refused[reason]++;
  }

  /** Null: start it. Otherwise the refusal to answer with. */
  admit(active: number): StartRefusal | null {
    if (this.drainingNow) return this.refuse('draining');
    if (active >= this.maxActiveRuns) return this.refuse('capacity');
    if (this.overloaded) return this.refuse('overload');
    return null;
  }

  /** A user's own limit refused a start (src/user-limits.ts): counted beside the instance's refusals. */
  refusedForUser(reason: 'user_runs' | 'user_tokens' | 'user_cost'): void {
    this.refused[reason]++;
  }

  private refuse(reason: 'capacity' | 'overload' | 'draining'): StartRefusal {
    this.refused[reason]++;
    return this.refusals[reason];
  }
}
