// Whether this instance takes a new run, and when its start goes to the actor threads: the one
// decision behind every start (the supervisor asks it synchronously, with its active count and the
// run's user). Three reasons to refuse, checked in this order: draining (a SIGTERM came: the runs here
// finish, new ones go elsewhere), capacity (MAX_ACTIVE_RUNS) and overload (a flood that lasts: the
// start queue judges it, start-queue.ts). A start that is taken goes to the threads at once while
// fewer than the limit are in flight (limit.ts, moved by their latency and the threads' event-loop
// lag), else it waits its turn in the queue: a burst waits a moment instead of being refused, and the
// threads serve the running streams' frames between the starts they are given. The refusals are
// built once: the accept path allocates nothing and reads a few numbers. The router asks it too,
// before a start's body is read (`shedding`): none of the three needs more than the caller's user, so
// a flood is refused for the price of its headers (src/http/early-refusal.ts).
import type { StartRefusal } from '../../actors/runtime/registry.ts';
import type { StartPacer } from '../../actors/runtime/supervisor.ts';
import { StartLimit, type LimitTuning, type Now } from './limit.ts';
import { StartQueue, type QueueTuning } from './start-queue.ts';

export const DRAINING_MESSAGE = 'server is draining';
export const OVERLOADED_MESSAGE = 'server is overloaded, retry later';

export type RefusalReason = 'capacity' | 'overload' | 'draining' | 'user_runs' | 'user_tokens' | 'user_cost';

/** The threads' saturation as of the question (LagBoard). */
export interface LagSignal {
  /** The worst lag among the threads that run the runs, a stall still going on included (the limit reads it). */
  hostsLagNow(): number;
  /** The busiest thread's share of its last moments, 0–1 (shown, not judged). */
  busyNow(): number;
}

/**
 * What the supervisor counts: its runs (Supervisor.activeCount) and the starts in flight, handed to
 * the actor threads and not yet settled (Supervisor.startBacklog): the one count the limit bounds.
 */
export interface RunCounts {
  readonly activeCount: number;
  readonly startBacklog: number;
}

export interface AdmissionOptions {
  maxActiveRuns: number;
  /** False (ADMISSION=off): nothing is refused for overload and no start waits: each goes to the threads at once. */
  adaptive: boolean;
  /** The clock of the limit and the queue (performance.now by default; a test's own). */
  now?: Now;
  limit?: Partial<LimitTuning>;
  queue?: Partial<QueueTuning>;
}

/** The user a start without one counts as (a title run, a test's). */
const NOBODY = '';

export class Admission implements StartPacer {
  private readonly maxActiveRuns: number;
  readonly adaptive: boolean;
  private readonly now: Now;
  readonly limit: StartLimit;
  private readonly queue: StartQueue<unknown>;
  private readonly refusals: Record<'capacity' | 'overload' | 'draining', StartRefusal>;
  /** Refusals so far, by reason (css_runs_refused_total). */
  readonly refused: Record<RefusalReason, number> = { capacity: 0, overload: 0, draining: 0, user_runs: 0, user_tokens: 0, user_cost: 0 };
  private drainingNow = false;
  /** The worst thread's event-loop delay p99 in ms as of the last fold (LagBoard keeps it current; the gauge shows it). */
  lagMs = 0;
  private signal: LagSignal | null = null;
  private runs: RunCounts | null = null;

  constructor(opts: AdmissionOptions) {
    this.maxActiveRuns = opts.maxActiveRuns;
    this.adaptive = opts.adaptive;
    this.now = opts.now ?? (() => performance.now());
    this.limit = new StartLimit(this.now, () => (this.signal === null ? this.lagMs : this.signal.hostsLagNow()), opts.limit);
    this.queue = new StartQueue(opts.queue);
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

  /** From now on the threads' lag moves the limit as of each window (and the gauges read it). */
  watch(signal: LagSignal): void {
    this.signal = signal;
  }

  /**
   * From now on the supervisor's counts are read (it hands itself over when it is made): its runs at
   * each question from the router (`shedding`), its starts in flight at each start (before: none).
   */
  watchRuns(runs: RunCounts): void {
    this.runs = runs;
  }

  /** The busiest thread's share of its last moments, 0–1 (0 while nothing reports it: the gauge shows it). */
  busyNow(): number {
    return this.signal === null ? 0 : this.signal.busyNow();
  }

  /** Starts in flight (handed to the threads, not yet settled): the supervisor's count. */
  get inFlight(): number {
    return this.runs === null ? 0 : this.runs.startBacklog;
  }

  /** Starts waiting for their turn. */
  get waiting(): number {
    return this.queue.length;
  }

  private overloaded(owner: string): boolean {
    return this.adaptive && this.queue.refuses(owner, this.now(), this.limit.ratePerMs);
  }

  /**
   * False when no new run would be refused now, whoever asks: not draining, below MAX_ACTIVE_RUNS (when
   * watched) and no start waiting (an empty queue refuses nothing). Read by the router on every
   * request, so a few reads and no clock.
   */
  mayShed(): boolean {
    return this.drainingNow || (this.runs !== null && this.runs.activeCount >= this.maxActiveRuns) || (this.adaptive && this.queue.length > 0);
  }

  /**
   * Why a new run of `owner` would be refused now whatever the request says (draining, capacity once
   * the supervisor's runs are watched, overload), or null. Not counted: the caller counts it (`count`)
   * once it has answered with it.
   */
  shedding(owner: string = NOBODY): 'draining' | 'capacity' | 'overload' | null {
    if (this.drainingNow) return 'draining';
    if (this.runs !== null && this.runs.activeCount >= this.maxActiveRuns) return 'capacity';
    return this.overloaded(owner) ? 'overload' : null;
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
  admit(active: number, owner: string = NOBODY): StartRefusal | null {
    if (this.drainingNow) return this.refuse('draining');
    if (active >= this.maxActiveRuns) return this.refuse('capacity');
    if (this.overloaded(owner)) return this.refuse('overload');
    return null;
  }

  /** A user's own limit refused a start (src/service/users.ts, src/service/runs.ts): counted beside the instance's refusals. */
  refusedForUser(reason: 'user_runs' | 'user_tokens' | 'user_cost'): void {
    this.refused[reason]++;
  }

  // The pacing of starts (the supervisor's StartPacer).

  take(start: unknown, owner: string = NOBODY): boolean {
    if (!this.adaptive || (this.queue.length === 0 && this.inFlight < this.limit.value)) return true;
    this.queue.push(start, owner, this.now());
    return false;
  }

  next(): unknown {
    if (this.queue.length === 0 || this.inFlight >= this.limit.value) return undefined;
    return this.queue.shift(this.now());
  }

  drop(): { start: unknown; refusal: StartRefusal } | undefined {
    const start = this.queue.drop(this.now());
    return start === undefined ? undefined : { start, refusal: this.refuse('overload') };
  }

  withdraw(start: unknown, owner: string = NOBODY): boolean {
    return this.queue.withdraw(start, owner);
  }

  settled(ms: number): void {
    // The supervisor has counted it out already: it was in flight with the ones still are.
    if (this.adaptive) this.limit.sample(ms, this.inFlight + 1);
  }

  private refuse(reason: 'capacity' | 'overload' | 'draining'): StartRefusal {
    this.refused[reason]++;
    return this.refusals[reason];
  }
}
