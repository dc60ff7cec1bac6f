// The streaming engine shared by all providers. A provider describes a stream as: frames before
// the first delta, a frame builder per delta, frames after the last delta (built from the final
// text), and what to send when the script breaks the stream. The pump then writes it.
//
// Cost matters here: the load test runs thousands of concurrent streams. Unlimited streams are
// written in large batches; rate-limited streams are driven by ONE shared ticker that wakes at the
// earliest due delta of all streams and writes every due delta of a stream in one write, instead
// of one timer per delta per stream.
import type { ServerResponse } from 'node:http';
import type { FailMode } from './directives.ts';
import { deltaText, type Deltas, type Plan } from './script.ts';
import type { Ctx } from './state.ts';

// No `connection` header: Node answers keep-alive or close as the client asked, and forcing
// keep-alive would hold `Connection: close` clients open after the stream ended.
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
};

export function frame(event: string | null, data: unknown): string {
  const json = typeof data === 'string' ? data : JSON.stringify(data);
  return event === null ? `data: ${json}\n\n` : `event: ${event}\ndata: ${json}\n\n`;
}

export interface StreamSpec {
  res: ServerResponse;
  deltas: Deltas;
  /** Deltas per second; 0 or undefined: as fast as the socket takes them. */
  rate?: number;
  failAfter?: number;
  failMode?: FailMode;
  /**
   * Send `after` deltas, then wait for `pass(1)` (a test's gate) before the rest, or with `every`
   * before the next `every` deltas, and so on (`pass(k)` at the k-th hold); false: the client left.
   */
  hold?: { after: number; every?: number; pass(k: number): Promise<boolean> };
  head: string;
  /** The SSE frame carrying delta `i` with text `text`. */
  delta(i: number, text: string): string;
  /** Frames after the last delta; `text` is the full answer as actually sent. */
  tail(text: string): string;
  /** In-stream failure frames for `mode` after `sent` deltas ('disconnect' never reaches here). */
  failure(mode: Exclude<FailMode, 'disconnect'>, sent: number, text: string): string;
  /** Runs once the stream completed normally (e.g. to store the response). */
  onComplete?(text: string): void;
}

/** Deltas per write for unlimited streams: large enough to amortize syscalls, small enough to interleave. */
const BURST = 64;

class Job {
  sent = 0;
  done = false;
  nextAt = 0;
  readonly interval: number;
  /** Deltas that may go out now: all of them, or those before a hold. */
  limit: number;
  private readonly total: number;
  /** Only kept for stamped text, where the final text is not known in advance. */
  acc = '';
  /** Holds passed or waited at so far. */
  private holds = 0;

  constructor(readonly spec: StreamSpec) {
    const r = spec.rate ?? 0;
    this.interval = r > 0 ? 1000 / r : 0;
    const fa = spec.failAfter;
    this.total = fa !== undefined ? Math.min(fa, spec.deltas.count) : spec.deltas.count;
    this.limit = spec.hold ? Math.min(spec.hold.after, this.total) : this.total;
  }

  /** All that may go out is out: wait at the hold and then `resume`, or write the ending. */
  settle(resume: (job: Job) => void): void {
    const hold = this.spec.hold;
    if (!hold || this.limit >= this.total) return this.finish();
    this.limit = hold.every === undefined ? this.total : Math.min(this.limit + hold.every, this.total);
    this.done = true;
    void hold.pass(++this.holds).then((ok) => {
      if (!ok) return;
      this.done = false;
      resume(this);
    });
  }

  /** Builds up to `max` next delta frames into one string. */
  take(max: number): string {
    const { spec } = this;
    const d = spec.deltas;
    let out = '';
    const end = Math.min(this.limit, this.sent + max);
    for (let i = this.sent; i < end; i++) {
      const t = deltaText(d, i);
      if (d.stamped) this.acc += t;
      out += spec.delta(i, t);
    }
    this.sent = end;
    return out;
  }

  text(): string {
    return this.spec.deltas.stamped ? this.acc : partialText(this.spec.deltas, this.sent);
  }

  /** Writes the ending (normal or scripted failure) once all allowed deltas are out. */
  finish(): void {
    this.done = true;
    const { spec } = this;
    const res = spec.res;
    if (res.destroyed) return;
    if (spec.failAfter !== undefined) {
      const mode = spec.failMode ?? 'event';
      if (mode === 'disconnect') {
        // Flush what was written, then close the connection without the terminating chunk, as a
        // dying upstream does; destroy() alone could drop frames still queued in user space.
        const socket = res.socket;
        if (socket) {
          socket.end();
          setTimeout(() => socket.destroy(), 2000).unref();
        }
        return;
      }
      res.end(spec.failure(mode, this.sent, this.text()));
      return;
    }
    const text = this.text();
    res.end(spec.tail(text));
    spec.onComplete?.(text);
  }
}

function partialText(d: Deltas, n: number): string {
  if (n >= d.count) return d.text;
  let s = '';
  for (let i = 0; i < n; i++) s += d.pieces[i];
  return s;
}

/** The part of a StreamSpec that comes straight from the response and the plan. */
export function planned({ res, state }: Ctx, p: Plan): Pick<StreamSpec, 'res' | 'deltas' | 'rate' | 'failAfter' | 'failMode' | 'hold'> {
  const d = p.directive;
  const hold =
    d.gateEvery !== undefined
      ? { after: d.gateEvery, every: d.gateEvery, pass: (k: number) => state.gates.pass(res, `${d.gate}-${k}`) }
      : d.gateAfter !== undefined
        ? { after: d.gateAfter, pass: () => state.gates.pass(res, d.gate) }
        : undefined;
  return { res, deltas: p.deltas, rate: d.rate, failAfter: d.failAfter, failMode: d.failMode, hold };
}

export function startStream(spec: StreamSpec, extraHeaders: Record<string, string> = {}): void {
  const { res } = spec;
  if (res.destroyed) return;
  res.writeHead(200, { ...SSE_HEADERS, ...extraHeaders });
  const job = new Job(spec);
  res.on('close', () => {
    job.done = true;
  });
  if (job.interval > 0 && job.limit > 0) {
    res.write(spec.head);
    paced(job);
    return;
  }
  // Small streams (the common case in tests) go out in a single write.
  const first = job.take(BURST);
  res.write(spec.head + first);
  if (job.sent >= job.limit) job.settle(job.interval > 0 ? paced : burst);
  else burst(job);
}

function paced(job: Job): void {
  job.nextAt = performance.now();
  ticker.add(job);
}

function burst(job: Job): void {
  const res = job.spec.res;
  const step = (): void => {
    if (job.done || res.destroyed) return;
    const ok = res.write(job.take(BURST));
    if (job.sent >= job.limit) return job.settle(burst);
    // Yield between batches so one huge stream cannot starve the others.
    if (ok) setImmediate(step);
    else res.once('drain', step);
  };
  setImmediate(step);
}

/** One timer for all rate-limited streams. */
class Ticker {
  private jobs: Job[] = [];
  private timer: NodeJS.Timeout | null = null;
  private armedFor = Infinity;

  add(job: Job): void {
    this.jobs.push(job);
    this.arm(job.nextAt);
  }

  get size(): number {
    return this.jobs.length;
  }

  private arm(at: number): void {
    if (this.timer && at >= this.armedFor) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(this.tick, Math.max(0, at - performance.now()));
  }

  private tick = (): void => {
    this.timer = null;
    this.armedFor = Infinity;
    // Node timers have ~1 ms resolution: treat anything due within it as due now.
    const now = performance.now() + 1;
    const jobs = this.jobs;
    let next = Infinity;
    let w = 0;
    for (let r = 0; r < jobs.length; r++) {
      const job = jobs[r]!;
      if (job.done) continue;
      if (job.nextAt <= now) this.pump(job, now);
      if (job.done) continue;
      jobs[w++] = job;
      if (job.nextAt < next) next = job.nextAt;
    }
    jobs.length = w;
    if (w > 0) this.arm(next);
  };

  private pump(job: Job, now: number): void {
    // Deltas keep their schedule (start + i·interval); a late tick sends all that are due at once.
    const due = Math.floor((now - job.nextAt) / job.interval) + 1;
    const out = job.take(due);
    job.nextAt += due * job.interval;
    if (job.sent >= job.limit) {
      if (out) job.spec.res.write(out);
      job.settle(paced);
    } else {
      job.spec.res.write(out);
    }
  }
}

const ticker = new Ticker();

/** Rate-limited streams in flight (for diagnostics and the ceiling script). */
export function activeRatedStreams(): number {
  return ticker.size;
}

/** A whole stream known up front (tool-call rounds): one write. */
export function sendFrames(res: ServerResponse, frames: string, extraHeaders: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(200, { ...SSE_HEADERS, ...extraHeaders });
  res.end(frames);
}
