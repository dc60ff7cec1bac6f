// A Server-Sent Events response with real backpressure. uWS keeps what a socket could not take;
// past that we queue, and a client whose queue passes the cap is dropped, so a slow reader never
// slows the run or the other readers. One shared timer sends `: ping` to every open stream.
import { commentFrame } from '../../actors/runtime/frame.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { Reply } from './reply.ts';

const HEARTBEAT = commentFrame('ping');
const OPENED = commentFrame('open');
export const DEFAULT_SSE_QUEUE_CAP = 1024 * 1024;

const open = new Set<SseSink>();

// Sinks written in this turn. One microtask per turn sends them all: the frames of a whole batch from
// an actor thread (many runs, many sinks) cost one queueMicrotask, not one per sink (each makes an
// AsyncResource and a bound function in Node).
let dirty: SseSink[] = [];
let flushQueued = false;

function flushDirty(): void {
  flushQueued = false;
  const sinks = dirty;
  dirty = [];
  for (let i = 0; i < sinks.length; i++) sinks[i]!.flushPending();
}

// Opened sinks whose head waits for their first frames, so that the two leave in one socket write. A
// run's first frames (a start's `meta`) have already waited on the actor thread for its next ones
// (actors/runtime/outbox.ts, DEFAULT_HOLD_MS), so a short start's whole answer comes in one batch. One
// shared timer sends the head of a stream that has said nothing by HEAD_WAIT_MS.
export const HEAD_WAIT_MS = 20;
const headless = new Set<SseSink>();
let headTimer: NodeJS.Timeout | null = null;

function sendHeads(): void {
  headTimer = null;
  for (const sink of headless) sink.sendHead();
  headless.clear();
}

let heartbeat: NodeJS.Timeout | null = null;
let heartbeatMs = 15_000;

/** Sets the heartbeat interval (process-wide: one timer serves every stream). */
export function setHeartbeatInterval(ms: number): void {
  heartbeatMs = ms;
  if (heartbeat) {
    clearInterval(heartbeat);
    heartbeat = null;
  }
}

function beat(): void {
  for (const sink of open) sink.write(HEARTBEAT);
}

export class SseSink implements Subscriber {
  private readonly reply: Reply;
  private readonly cap: number;
  private queue: string[] | null = null;
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

  constructor(reply: Reply, cap = DEFAULT_SSE_QUEUE_CAP) {
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
    open.add(this);
    if (!heartbeat) {
      heartbeat = setInterval(beat, heartbeatMs);
      heartbeat.unref();
    }
    headless.add(this);
    if (!headTimer) headTimer = setTimeout(sendHeads, HEAD_WAIT_MS);
  }

  /** The status line, headers and `: open`, once, inside the cork of the first write. */
  private writeHead(): void {
    if (this.headSent) return;
    this.headSent = true;
    headless.delete(this);
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
    this.reply.res.cork(this.corkedHead);
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
      this.queued += chunk.length;
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
    dirty.push(this);
    if (!flushQueued) {
      flushQueued = true;
      queueMicrotask(flushDirty);
    }
  }

  /** Sends what this turn wrote (flushDirty, once per turn for every sink written in it). */
  flushPending(): void {
    const chunk = this.pending;
    this.pending = null;
    if (chunk === null || this.closed) return;
    const res = this.reply.res;
    this.outgoing = chunk;
    res.cork(this.corkedWrite);
    this.outgoing = '';
    if (!this.writeOk) {
      this.queue = [];
      this.queued = 0;
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
    res.cork(() => {
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
    res.cork(() => {
      ok = res.write(chunk);
    });
    if (!ok) {
      this.queue = [];
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
    res.close();
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    open.delete(this);
    headless.delete(this);
    const hooks = this.closeHooks;
    this.closeHooks = [];
    for (const h of hooks) h();
  }
}

/**
 * An SSE response on `reply` that is not open yet: a route hands it to a run, and answers with a
 * status instead when the run is refused. It opens at `open()` or its first frame.
 */
export function createSse(reply: Reply, cap = DEFAULT_SSE_QUEUE_CAP): SseSink {
  return new SseSink(reply, cap);
}

/** Open SSE streams on this process (for metrics). */
export const openSseStreams = () => open.size;
