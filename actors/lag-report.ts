// Event-loop delay as a saturation signal: p99 over the last second of one thread's loop. Every actor
// thread reports its own to the main thread (one small message per REPORT_MS); the main thread keeps
// the latest of each (LagBoard) and the admission decision reads one number from it.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** How often a thread folds its samples into the last-second window (and a worker reports). */
export const REPORT_MS = 250;
const WINDOWS = 1000 / REPORT_MS;

/** What a worker posts to the main thread, beside its batches. */
export interface LagReport {
  t: 'lag';
  p99Ms: number;
}

/**
 * This thread's event-loop delay over the last second, refreshed every REPORT_MS: the p99 of each
 * REPORT_MS slice, the worst slice of the last second. (An ELD histogram cannot be merged into
 * another, so slices are kept as their p99; with ~25 samples a slice, that is slightly stricter than
 * one p99 of the whole second.)
 */
export class LagSampler {
  private readonly monitor: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly slices = new Float64Array(WINDOWS);
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  p99Ms = 0;

  start(onTick?: (p99Ms: number) => void): this {
    this.monitor.enable();
    this.timer = setInterval(() => {
      this.fold();
      onTick?.(this.p99Ms);
    }, REPORT_MS).unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.monitor.disable();
  }

  private fold(): void {
    this.slices[this.next] = this.monitor.count > 0 ? this.monitor.percentile(99) / 1e6 : 0;
    this.next = (this.next + 1) % WINDOWS;
    this.monitor.reset();
    let worst = 0;
    for (const p of this.slices) if (p > worst) worst = p;
    this.p99Ms = worst;
  }
}

/** In an actor thread: report this thread's lag to the main thread. `enabled` false (OVERLOAD_LAG_MS=0): nothing runs. */
export function startLagReport(post: (report: LagReport) => void, enabled: boolean): void {
  if (!enabled) return;
  new LagSampler().start((p99Ms) => post({ t: 'lag', p99Ms }));
}

/**
 * On the main thread: the worst lag among the main thread and every actor thread. A thread too busy
 * to report is as late as its silence: its lag counts as the time since its report was due.
 */
export class LagBoard {
  private readonly main = new LagSampler();
  private readonly reports = new Map<number, { p99Ms: number; at: number }>();
  /** The worst thread's p99 (ms), refreshed every REPORT_MS. */
  worstMs = 0;

  start(onTick: (worstMs: number) => void): this {
    this.main.start(() => {
      this.worstMs = this.worst(performance.now());
      onTick(this.worstMs);
    });
    return this;
  }

  stop(): void {
    this.main.stop();
  }

  /** A worker's report (the hosts' message hook). */
  report(host: number, p99Ms: number): void {
    this.reports.set(host, { p99Ms, at: performance.now() });
  }

  private worst(now: number): number {
    let worst = this.main.p99Ms;
    for (const r of this.reports.values()) worst = Math.max(worst, r.p99Ms, now - r.at - REPORT_MS);
    return worst;
  }
}
