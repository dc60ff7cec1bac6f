// Event-loop delay as a saturation signal. Every thread folds its loop's delay into a last-second
// window every REPORT_MS, and every actor thread reports its own to the main thread (one small
// message per REPORT_MS); the main thread keeps the latest of each (LagBoard) and the admission
// decision reads it. Folding often is what makes it react: a window refreshed every 250 ms told of a
// flood a quarter of a second late, and only at its next fold; a REPORT_MS of 50 ms and a stall
// counted at the moment of the question (a loop that has not folded, or a thread that has not
// reported, for longer than REPORT_MS is late by the excess, even before any sample says so) let a
// start be refused in the very loop turn that runs late.
//
// Beside the delay, each thread folds how busy its loop was (event-loop utilisation: the share of the
// time it was not waiting for I/O) over a shorter window, BUSY_WINDOW_MS. A delay shows only once the
// loop is late; a thread can keep its loop on time while it is nearly full, and the next starts then
// fill it: the running streams' deltas queue behind their work. Busy shows that before the delay does.
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';

/** How often a thread folds its samples into the last-second window (and a worker reports). */
export const REPORT_MS = 50;
/** The window the p99 is taken over (docs/operations.md, "Overload: refuse new runs, keep the running ones on time": "p99 over the last second"). */
export const WINDOW_MS = 1000;
const SLICES = WINDOW_MS / REPORT_MS;
/** The window a thread's busy share is taken over: a few slices, so it reacts within a few hundred ms. */
export const BUSY_WINDOW_MS = 200;
const BUSY_SLICES = BUSY_WINDOW_MS / REPORT_MS;

/** What a worker posts to the main thread, beside its batches. */
export interface LagReport {
  t: 'lag';
  p99Ms: number;
  /** The share of the last BUSY_WINDOW_MS the thread's loop was busy, 0–1. */
  busy: number;
}

/** The share of the last BUSY_SLICES slices a loop was busy: their active time over their whole time. */
export class BusyWindow {
  private readonly active = new Float64Array(BUSY_SLICES);
  private readonly total = new Float64Array(BUSY_SLICES);
  private next = 0;
  busy = 0;

  /** One slice: the loop was active `activeMs` of `totalMs`. */
  fold(activeMs: number, totalMs: number): number {
    this.active[this.next] = activeMs;
    this.total[this.next] = totalMs;
    this.next = (this.next + 1) % BUSY_SLICES;
    let a = 0;
    let t = 0;
    for (let i = 0; i < BUSY_SLICES; i++) {
      a += this.active[i]!;
      t += this.total[i]!;
    }
    return (this.busy = t > 0 ? a / t : 0);
  }
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

/** This thread's event-loop delay over the last second and its busy share over BUSY_WINDOW_MS, refreshed every REPORT_MS. */
export class LagSampler {
  private readonly monitor: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly window = new LagWindow();
  private readonly busyWindow = new BusyWindow();
  private elu: EventLoopUtilization | null = null;
  private timer: NodeJS.Timeout | null = null;

  get p99Ms(): number {
    return this.window.p99Ms;
  }

  start(onTick?: (p99Ms: number, busy: number) => void): this {
    this.monitor.enable();
    this.elu = performance.eventLoopUtilization();
    this.timer = setInterval(() => {
      const p99Ms = this.window.fold(this.monitor.count > 0 ? this.monitor.percentile(99) / 1e6 : 0);
      this.monitor.reset();
      const elu = performance.eventLoopUtilization();
      const prev = this.elu!;
      this.elu = elu;
      const active = elu.active - prev.active;
      const busy = this.busyWindow.fold(active, active + elu.idle - prev.idle);
      onTick?.(p99Ms, busy);
    }, REPORT_MS).unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.monitor.disable();
  }
}

/** In an actor thread: report this thread's lag and busy share to the main thread. `enabled` false (both signals off): nothing runs. */
export function startLagReport(post: (report: LagReport) => void, enabled: boolean): void {
  if (!enabled) return;
  new LagSampler().start((p99Ms, busy) => post({ t: 'lag', p99Ms, busy }));
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
  private readonly reports: Array<{ p99Ms: number; busy: number; at: number } | undefined> = [];
  private readonly now: Now;
  private mainP99Ms = 0;
  private mainBusy = 0;
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
    this.sampler.start((p99Ms, busy) => onTick(this.fold(p99Ms, busy)));
    return this;
  }

  stop(): void {
    this.sampler.stop();
  }

  /** The main thread's own slice was folded (its sampler's tick; a test calls it with its inputs). */
  fold(mainP99Ms: number, mainBusy = 0): number {
    this.mainP99Ms = mainP99Ms;
    this.mainBusy = mainBusy;
    this.mainAt = this.now();
    return (this.worstMs = this.lagNow());
  }

  /** A worker's report (the hosts' message hook). */
  report(host: number, p99Ms: number, busy = 0): void {
    const r = this.reports[host];
    if (r === undefined) this.reports[host] = { p99Ms, busy, at: this.now() };
    else {
      r.p99Ms = p99Ms;
      r.busy = busy;
      r.at = this.now();
    }
  }

  /**
   * The busiest thread's share of the last BUSY_WINDOW_MS, as last folded or reported. A thread whose
   * report is overdue by a whole window has not reached its loop's timers for that long: it counts as
   * busy all of it, so the busy signal refuses for a stall even with the lag signal off.
   */
  busyNow(): number {
    const stalledAt = this.now() - REPORT_MS - BUSY_WINDOW_MS;
    let worst = this.mainAt < stalledAt ? 1 : this.mainBusy;
    for (let i = 0; i < this.reports.length; i++) {
      const r = this.reports[i];
      if (r === undefined) continue;
      const busy = r.at < stalledAt ? 1 : r.busy;
      if (busy > worst) worst = busy;
    }
    return worst;
  }

  /**
   * The worst lag among the threads that run the runs: the actor threads, as `lagNow` reads them; the
   * main thread only while none reports (runs on the main thread, ACTOR_THREADS=0). The starts' work
   * lands there, so the admission's limit reads it: the main thread's own lag comes from what it is
   * asked (a burst's requests), which no limit on starts in flight takes away.
   */
  hostsLagNow(): number {
    const now = this.now();
    const hosts = this.reportedLag(now);
    return hosts < 0 ? this.mainLag(now) : hosts;
  }

  /** The worst lag right now: each thread's last p99, or how overdue its next report is, whichever is worse. Allocates nothing. */
  lagNow(): number {
    const now = this.now();
    return Math.max(this.mainLag(now), this.reportedLag(now));
  }

  /** The main thread's last p99, or how overdue its next fold is. */
  private mainLag(now: number): number {
    return Math.max(this.mainP99Ms, now - this.mainAt - REPORT_MS);
  }

  /** The worst actor thread's last p99, or how overdue its next report is; -1 while none has reported. */
  private reportedLag(now: number): number {
    let worst = -1;
    for (let i = 0; i < this.reports.length; i++) {
      const r = this.reports[i];
      if (r !== undefined) worst = Math.max(worst, r.p99Ms, now - r.at - REPORT_MS);
    }
    return worst;
  }
}
