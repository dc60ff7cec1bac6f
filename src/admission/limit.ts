// The concurrency limit on starts in flight (handed to the actor threads, not yet settled), moved by
// the starts' own latency as a gradient limit does (Netflix's concurrency-limits, Gradient2; Envoy's
// adaptive concurrency): each window of settled starts compares their mean latency with a baseline
// (the lowest seen, which creeps up slowly so that it follows a machine whose floor moved). While the
// starts settle within TOLERANCE × the baseline, the limit grows by a fifth of its square root per
// window; beyond it, the limit shrinks by half the ratio (at most by a quarter a window). A late event loop on the main
// or an actor thread is congestion too, whatever the starts' latency says: the running streams are
// already late, so the limit is halved that window. Pure: time and the lag are handed in.

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
  initial: 16,
  min: 4,
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
    this.sum += ms;
    this.count++;
    if (inFlight > this.peak) this.peak = inFlight;
    const now = this.now();
    if (now - this.windowStart >= this.t.windowMs) this.update(now);
  }

  private update(now: number): void {
    const { t } = this;
    const latency = Math.max(this.sum / this.count, 1e-3);
    this.latencyMs = latency;
    if (this.baselineMs === 0 || latency < this.baselineMs) this.baselineMs = latency;
    else this.baselineMs += (latency - this.baselineMs) / t.baselineWindows;
    let gradient = Math.min(1, Math.max(0.5, (t.tolerance * this.baselineMs) / latency));
    if (this.lag() > t.lagTargetMs) gradient = 0.5;
    let next = this.limit * gradient + Math.sqrt(this.limit);
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
