// A Server-Sent Events response with real backpressure. uWS keeps what a socket could not take;
// past that we queue, and a client whose queue passes the cap is dropped, so a slow reader never
// slows the run or the other readers. One timer per server sends `: ping` to every open stream.
import { commentFrame } from '../../actors/runtime/frame.ts';
import { handleWithin } from '../../actors/runtime/turn-budget.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { Reply } from './reply.ts';

const HEARTBEAT = commentFrame('ping');
const OPENED = commentFrame('open');
export const DEFAULT_SSE_QUEUE_CAP = 1024 * 1024;

/** How long an opened stream's head waits for its first frames before it goes out alone. */
export const HEAD_WAIT_MS = 20;
/** How long one turn of the main thread may spend sending written sinks before it lets I/O in (SseOptions.flushBudgetMs). */
export const FLUSH_BUDGET_MS = 5;
/** Sinks sent between two looks at the clock. */
const FLUSH_CHECK_EVERY = 32;

export interface SseOptions {
  /** `: ping` to every open stream this often (SSE_HEARTBEAT_MS). */
  heartbeatMs: number;
  /** Bytes queued for one slow client before it is dropped (SSE_MAX_QUEUED_BYTES). */
  queueCap?: number;
  /** Sending a turn's sinks past this long goes on in a later turn (FLUSH_BUDGET_MS). */
  flushBudgetMs?: number;
  /** A stream whose response could not be written any more (SseSink.lost): it is closed; this says why. */
  onLost?: (err: unknown) => void;
}

/**
 * One server's SSE streams and what they share: the heartbeat timer, the head timer and the per-turn
 * batch of written sinks. Built once per server (src/app/app.ts), so two servers in one process (tests)
 * share no stream, timer or batch.
 */
export class SseStreams {
  private readonly open = new Set<SseSink>();
  // Sinks written in this turn. One microtask per turn sends them all: the frames of a whole batch from
  // an actor thread (many runs, many sinks) cost one queueMicrotask, not one per sink (each makes an
  // AsyncResource and a bound function in Node).
  //
  // A big batch (an actor thread that fell behind sends many runs' frames at once) is sent in slices of
  // about flushBudgetMs, each in its own turn, so that what waits on the main thread meanwhile (a start
  // to refuse, the next batch) is not held behind all of it: a flood profile showed 100–155 ms turns of
  // nothing but these sends.
  private dirty: SseSink[] = [];
  private flushQueued = false;
  private readonly flushBudgetMs: number;
  // Opened sinks whose head waits for their first frames, so that the two leave in one socket write. A
  // run's first frames (a start's `meta`) have already waited on the actor thread for its next ones
  // (actors/runtime/outbox.ts, DEFAULT_HOLD_MS), so a short start's whole answer comes in one batch. One
  // shared timer sends the head of a stream that has said nothing by HEAD_WAIT_MS.
  private readonly headless = new Set<SseSink>();
  private headTimer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly heartbeatMs: number;
  private readonly queueCap: number;
  /** SseOptions.onLost, called by a sink that lost its response. */
  readonly lost: (err: unknown) => void;

  constructor(opts: SseOptions) {
    this.heartbeatMs = opts.heartbeatMs;
    this.queueCap = opts.queueCap ?? DEFAULT_SSE_QUEUE_CAP;
    this.flushBudgetMs = opts.flushBudgetMs ?? FLUSH_BUDGET_MS;
    this.lost = opts.onLost ?? (() => {});
  }

  /**
   * An SSE response on `reply` that is not open yet: a route hands it to a run, and answers with a
   * status instead when the run is refused. It opens at `open()` or its first frame.
   */
  create(reply: Reply): SseSink {
    return new SseSink(reply, this, this.queueCap);
  }

  /** Open SSE streams of this server (for metrics). */
  get openCount(): number {
    return this.open.size;
  }

  /** Stops the shared timers (the server's stop); a stream opened later starts them again. */
  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.headTimer) clearTimeout(this.headTimer);
    this.heartbeat = this.headTimer = null;
    this.headless.clear();
  }

  /** A sink opened: it gets heartbeats, and its head leaves with its first frames or at HEAD_WAIT_MS. */
  opened(sink: SseSink): void {
    this.open.add(sink);
    if (!this.heartbeat) {
      this.heartbeat = setInterval(this.beat, this.heartbeatMs);
      this.heartbeat.unref();
    }
    this.headless.add(sink);
    if (!this.headTimer) this.headTimer = setTimeout(this.sendHeads, HEAD_WAIT_MS);
  }

  /** The sink's head went out (with its first frames). */
  headSent(sink: SseSink): void {
    this.headless.delete(sink);
  }

  closed(sink: SseSink): void {
    this.open.delete(sink);
    this.headless.delete(sink);
  }

  /** The sink wrote in this turn: it sends at the turn's end. */
  written(sink: SseSink): void {
    this.dirty.push(sink);
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(this.flushDirty);
    }
  }

  private readonly flushDirty = (): void => {
    const sinks = this.dirty;
    const done = handleWithin(sinks, 0, flushSink, this.flushBudgetMs, FLUSH_CHECK_EVERY);
    if (done < sinks.length) {
      // The rest (and what is written meanwhile) goes in a later turn, after the I/O waiting now.
      this.dirty = sinks.slice(done);
      setImmediate(this.flushDirty);
      return;
    }
    this.dirty = [];
    this.flushQueued = false;
  };

  private readonly sendHeads = (): void => {
    this.headTimer = null;
    for (const sink of this.headless) sink.sendHead();
    this.headless.clear();
  };

  private readonly beat = (): void => {
    for (const sink of this.open) sink.write(HEARTBEAT);
  };
}

const flushSink = (sink: SseSink): void => sink.flushPending();

export class SseSink implements Subscriber {
  private readonly reply: Reply;
  private readonly cap: number;
  private queue: string[] | null = null;
  /** UTF-8 bytes in `queue`. */
  private queued = 0;
  /** Frames written in this turn, not yet sent (flushPending). */
  private pending: string | null = null;
  /** What corkedWrite sends, and whether the socket took it all. */
  private outgoing = '';
  private writeOk = true;
  /** Status line and headers written (they go out with the first frames, or after HEAD_WAIT_MS). */
  private headSent = false;
  closed = false;
  private opened = false;
  /** Set when the sink was dropped for being too slow (for metrics and logs). */
  dropped = false;
  private closeHooks: Array<() => void> = [];

  constructor(reply: Reply, private readonly streams: SseStreams, cap = DEFAULT_SSE_QUEUE_CAP) {
    this.reply = reply;
    this.cap = cap;
    reply.onAbort(() => this.markClosed());
  }

  /**
   * Opens the stream (once; the first write or end opens it too). The status line, headers and `: open`
   * go out with the stream's first frames in one write (they follow within a thread crossing), or after
   * HEAD_WAIT_MS when nothing comes: one socket write per start saved.
   */
  open(): void {
    if (this.opened) return;
    this.opened = true;
    const reply = this.reply;
    if (reply.aborted || reply.started) return this.markClosed();
    reply.started = true;
    this.streams.opened(this);
  }

  /** The status line, headers and `: open`, once, inside the cork of the first write. */
  private writeHead(): void {
    if (this.headSent) return;
    this.headSent = true;
    this.streams.headSent(this);
    const reply = this.reply;
    reply.res
      .writeStatus('200 OK')
      .writeHeader('content-type', 'text/event-stream; charset=utf-8')
      .writeHeader('cache-control', 'no-cache')
      .writeHeader('x-accel-buffering', 'no');
    reply.writeShared(reply.res);
    reply.res.write(OPENED);
  }

  /**
   * HEAD_WAIT_MS passed with no frames: the client sees the stream open now. (Frames never wait here:
   * each turn's leave at its end, head in front, so none can be pending when a timer fires.)
   */
  sendHead(): void {
    if (this.closed || this.headSent) return;
    this.corked(this.corkedHead);
  }

  /**
   * Runs `fn` corked on the response. uWS throws on any use of a response it has let go of (ended, or
   * aborted); a stream that meets one has lost its client, whatever path answered it: it closes as it
   * would on an abort, rather than throw out of the one microtask, timer or batch that sends every
   * stream of the server (which would leave the others' frames unsent, or end the process).
   */
  private corked(fn: () => void): boolean {
    try {
      this.reply.res.cork(fn);
      return true;
    } catch (err) {
      this.lose(err);
      return false;
    }
  }

  private lose(err: unknown): void {
    this.pending = null;
    this.queue = null;
    this.outgoing = '';
    if (this.closed) return;
    this.markClosed();
    this.streams.lost(err);
  }

  private readonly corkedHead = (): void => this.writeHead();

  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.closeHooks.push(fn);
  }

  write(chunk: string): void {
    if (!this.opened) this.open();
    if (this.closed) return;
    if (this.queue) {
      this.queue.push(chunk);
      // The cap is in bytes (SSE_MAX_QUEUED_BYTES), as they will go out: a string's length counts
      // UTF-16 units, a third of the bytes of CJK text. Counted only while the client is behind.
      this.queued += Buffer.byteLength(chunk);
      if (this.queued > this.cap) this.drop();
      return;
    }
    // The frames of one turn (a run's batch from the actor thread: meta, the first deltas, `done`)
    // go out in one corked write at the turn's end, or with end(): a socket write costs ~6 µs
    // whatever its size (docs/performance.md, the ledger).
    if (this.pending !== null) {
      this.pending += chunk;
      return;
    }
    this.pending = chunk;
    this.schedule();
  }

  private schedule(): void {
    this.streams.written(this);
  }

  /** Sends what this turn wrote (flushDirty, once per turn for every sink written in it). */
  flushPending(): void {
    const chunk = this.pending;
    this.pending = null;
    if (chunk === null || this.closed) return;
    this.outgoing = chunk;
    if (!this.corked(this.corkedWrite)) return;
    this.outgoing = '';
    if (!this.writeOk) {
      const res = this.reply.res;
      this.queue = [];
      // uWS keeps what the socket did not take of this write, at most all of it: that is the first of
      // what this client is behind by. Counted from 0, a turn that wrote megabytes at once (a busy loop
      // batches many deltas) let a client that never reads hold them beyond SSE_MAX_QUEUED_BYTES.
      this.queued = Buffer.byteLength(chunk);
      res.onWritable(() => this.drain());
    }
  }

  /** The write inside a cork, bound once: a closure per write is garbage on the delta path. */
  private readonly corkedWrite = (): void => {
    this.writeHead();
    this.writeOk = this.reply.res.write(this.outgoing);
  };

  /** Ends the response after what is queued. */
  end(): void {
    if (!this.opened) this.open();
    if (this.closed) return;
    const res = this.reply.res;
    // What this turn wrote is still pending (the queue is empty then): it goes out with the end.
    const rest = (this.pending ?? '') + (this.queue ? this.queue.join('') : '');
    this.pending = null;
    this.queue = null;
    this.corked(() => {
      this.writeHead();
      res.end(rest);
    });
    this.markClosed();
  }

  private drain(): boolean {
    if (this.closed || !this.queue) return true;
    const chunk = this.queue.join('');
    this.queue = null;
    this.queued = 0;
    let ok = true;
    const res = this.reply.res;
    // Lost: nothing more to send, and uWS is told so (true), as for a closed sink.
    if (!this.corked(() => (ok = res.write(chunk)))) return true;
    if (!ok) {
      this.queue = [];
      this.queued = Buffer.byteLength(chunk); // as in flushPending: what uWS kept of it, at most all
      return false;
    }
    return true;
  }

  private drop(): void {
    this.dropped = true;
    this.queue = null;
    this.pending = null;
    const res = this.reply.res;
    this.markClosed();
    try {
      res.close();
    } catch {
      // uWS had let the response go already: the connection is gone.
    }
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.reply.finishSpan(this.reply.aborted ? 0 : 200);
    this.streams.closed(this);
    const hooks = this.closeHooks;
    this.closeHooks = [];
    for (const h of hooks) h();
  }
}
