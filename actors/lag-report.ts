// Event-loop delay as a saturation signal. Every thread folds its loop's delay into a last-second
// window every REPORT_MS, and every actor thread reports its own to the main thread (one small
// message per REPORT_MS); the main thread keeps the latest of each (LagBoard) and the admission
// decision reads it. Folding often is what makes it react: a window refreshed every 250 ms told of a
// flood a quarter of a second late, and only at its next fold; a REPORT_MS of 50 ms and a stall
// counted at the moment of the question (a loop that has not folded, or a thread that has not
// reported, for longer than REPORT_MS is late by the excess, even before any sample says so) let a
// start be refused in the very loop turn that runs late.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** How often a thread folds its samples into the last-second window (and a worker reports). */
export const REPORT_MS = 50;
/** The window the p99 is taken over (ARCHITECTURE: "p99 over the last second"). */
export const WINDOW_MS = 1000;
const SLICES = WINDOW_MS / REPORT_MS;

/** What a worker posts to the main thread, beside its batches. */
export interface LagReport {
  t: 'lag';
  p99Ms: number;
}

/**
 * The worst of the last SLICES slices' p99s. (An ELD histogram cannot be merged into another, so
 * slices are kept as their p99; with a handful of samples a slice, that is close to each slice's
 * worst delay, slightly stricter than one p99 of the whole second.)
 */
export class LagWindow {
  private readonly slices = new Float64Array(SLICES);
  private next = 0;
  p99Ms = 0;

  /** One slice's p99 (ms): the window moves on by one slice. */
  fold(sliceP99Ms: number): number {
    this.slices[this.next] = sliceP99Ms;
    this.next = (this.next + 1) % SLICES;
    let worst = 0;
    for (const p of this.slices) if (p > worst) worst = p;
    return (this.p99Ms = worst);
  }
}

/** This thread's event-loop delay over the last second, refreshed every REPORT_MS. */
export class LagSampler {
  private readonly monitor: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly window = new LagWindow();
  private timer: NodeJS.Timeout | null = null;

  get p99Ms(): number {
    return this.window.p99Ms;
  }

  start(onTick?: (p99Ms: number) => void): this {
    this.monitor.enable();
    this.timer = setInterval(() => {
      const p99Ms = this.window.fold(this.monitor.count > 0 ? this.monitor.percentile(99) / 1e6 : 0);
      this.monitor.reset();
      onTick?.(p99Ms);
    }, REPORT_MS).unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.monitor.disable();
  }
}

/** In an actor thread: report this thread's lag to the main thread. `enabled` false (OVERLOAD_LAG_MS=0): nothing runs. */
export function startLagReport(post: (report: LagReport) => void, enabled: boolean): void {
  if (!enabled) return;
  new LagSampler().start((p99Ms) => post({ t: 'lag', p99Ms }));
}

/** How the board tells time (performance.now by default; a test's clock that it advances). */
export type Now = () => number;

/**
 * On the main thread: the worst lag among the main thread and every actor thread. A thread too busy
 * to report is as late as its silence: its lag counts as the time since its report was due. The
 * main thread's own fold is a report too, so a loop turn still running late counts before it ends.
 */
export class LagBoard {
  private readonly sampler = new LagSampler();
  /** By host index; updated in place, so a report allocates nothing. */
  private readonly reports: Array<{ p99Ms: number; at: number } | undefined> = [];
  private readonly now: Now;
  private mainP99Ms = 0;
  private mainAt: number;
  /** The worst thread's p99 (ms) as of the last fold. */
  worstMs = 0;

  constructor(now: Now = () => performance.now()) {
    this.now = now;
    this.mainAt = now();
  }

  start(onTick: (worstMs: number) => void): this {
    // Silence is counted from now: the start-up's own stalls are no overload.
    this.mainAt = this.now();
    this.sampler.start((p99Ms) => onTick(this.fold(p99Ms)));
    return this;
  }

  stop(): void {
    this.sampler.stop();
  }

  /** The main thread's own slice was folded (its sampler's tick; a test calls it with its inputs). */
  fold(mainP99Ms: number): number {
    this.mainP99Ms = mainP99Ms;
    this.mainAt = this.now();
    return (this.worstMs = this.lagNow());
  }

  /** A worker's report (the hosts' message hook). */
  report(host: number, p99Ms: number): void {
    const r = this.reports[host];
    if (r === undefined) this.reports[host] = { p99Ms, at: this.now() };
    else {
      r.p99Ms = p99Ms;
      r.at = this.now();
    }
  }

  /** The worst lag right now: each thread's last p99, or how overdue its next report is, whichever is worse. Allocates nothing. */
  lagNow(): number {
    const now = this.now();
    let worst = Math.max(this.mainP99Ms, now - this.mainAt - REPORT_MS);
    for (let i = 0; i < this.reports.length; i++) {
      const r = this.reports[i];
      if (r !== undefined) worst = Math.max(worst, r.p99Ms, now - r.at - REPORT_MS);
    }
    return worst;
  }
}
