// The concurrency limit on starts in flight (handed to the actor threads, not yet settled), moved by
// the starts' own latency as a gradient limit does (Netflix's concurrency-limits, Gradient2; Envoy's
// adaptive concurrency): each window of settled starts compares their mean latency, as their host
// measured it, with a baseline (the lowest seen, which creeps up over about a minute so that it
// follows a machine whose floor moved). While the starts settle within TOLERANCE × the baseline, the
// limit grows by a fifth of its square root per window; beyond it, it shrinks by half the ratio (a
// quarter at most per window). A late actor thread is congestion too: the limit does not grow, and
// loses a twentieth per window, whatever the latency says. Pure: time and the lag are handed in.

/** Milliseconds, monotonic (performance.now in the service; a test's counter). */
export type Now = () => number;

export interface LimitTuning {
  initial: number;
  min: number;
  max: number;
  /** The settled starts of this long make one sample of the latency. */
  windowMs: number;
  /** Starts settling within this multiple of the baseline latency are on time. */
  tolerance: number;
  /** The share of each window's new limit taken into the limit (smoothing). */
  smoothing: number;
  /** How many windows the baseline takes to follow a latency that rose for good. */
  baselineWindows: number;
  /** The worst thread's event-loop delay beyond which the limit shrinks whatever the latency. */
  lagTargetMs: number;
}

export const LIMIT_DEFAULTS: Readonly<LimitTuning> = Object.freeze({
  initial: 32,
  min: 16,
  max: 1000,
  windowMs: 100,
  tolerance: 2,
  smoothing: 0.2,
  baselineWindows: 600,
  lagTargetMs: 50,
});

export class StartLimit {
  private readonly t: LimitTuning;
  private readonly now: Now;
  private readonly lag: () => number;
  /** The limit as a real number; `value` is what is applied. */
  private limit: number;
  private windowStart: number;
  private sum = 0;
  private count = 0;
  /** The most starts in flight seen this window: a limit nobody reaches is not raised. */
  private peak = 0;
  /** The baseline latency (ms): the lowest window mean, rising by 1/baselineWindows of the gap per window. */
  baselineMs = 0;
  /** The last window's mean latency (ms); 0 before the first. */
  latencyMs = 0;

  constructor(now: Now, lag: () => number = () => 0, tuning: Partial<LimitTuning> = {}) {
    this.t = { ...LIMIT_DEFAULTS, ...tuning };
    this.now = now;
    this.lag = lag;
    this.limit = this.t.initial;
    this.windowStart = now();
  }

  /** Starts that may be in flight at once. */
  get value(): number {
    return Math.floor(this.limit);
  }

  /** Starts per millisecond the limit lets through at the last latency (Little's law); 0 before any. */
  get ratePerMs(): number {
    return this.latencyMs > 0 ? this.value / this.latencyMs : 0;
  }

  /** A start settled `ms` after it went, `inFlight` starts being in flight when it went. */
  sample(ms: number, inFlight: number): void {
    const now = this.now();
    // A window begins with its first start: time without any is not measured.
    if (this.count === 0) this.windowStart = now;
    this.sum += ms;
    this.count++;
    if (inFlight > this.peak) this.peak = inFlight;
    if (now - this.windowStart >= this.t.windowMs) this.update(now);
  }

  private update(now: number): void {
    const { t } = this;
    const latency = Math.max(this.sum / this.count, 1e-3);
    this.latencyMs = latency;
    if (this.baselineMs === 0 || latency < this.baselineMs) this.baselineMs = latency;
    else this.baselineMs += (latency - this.baselineMs) / t.baselineWindows;
    const gradient = Math.min(1, Math.max(0.5, (t.tolerance * this.baselineMs) / latency));
    // A late thread holds the limit from growing and takes a tenth off: the lag may be the running
    // streams' own (a burst's), which fewer starts in flight would not take away, only slow the burst.
    let next = this.lag() > t.lagTargetMs ? this.limit * Math.min(gradient, 0.9) : this.limit * gradient + Math.sqrt(this.limit);
    // Nothing shows that more would be carried while fewer than half the limit are used.
    if (next > this.limit && this.peak < this.limit / 2) next = this.limit;
    // Down faster than up: a limit past what the threads keep up with costs the running streams now.
    const smoothing = next < this.limit ? Math.max(t.smoothing, 0.5) : t.smoothing;
    this.limit = Math.min(t.max, Math.max(t.min, this.limit * (1 - smoothing) + next * smoothing));
    this.windowStart = now;
    this.sum = 0;
    this.count = 0;
    this.peak = 0;
  }
}
