// Reading the run's own frames (actors/runtime/frame.ts) on their way to a façade client. A delta's text
// is taken as the JSON string literal it already is, never parsed: it goes into the OpenAI event as is,
// so a delta costs string slicing and one concatenation, as on the native path.
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { SseSink } from '../http/sse.ts';

const DELTA_HEAD = 'event: delta\ndata: {"type":"delta","text":';

/** Where the frames of a chunk go: a delta as its text literal (JSON-encoded), another event with its data parsed. */
export interface NativeFrameTarget {
  delta(text: string): void;
  event(event: string, data: Record<string, unknown>): void;
}

/**
 * Hands every whole frame of `chunk` (one or more frames, each ending in a blank line) to `to`: a
 * delta costs one slice, and no object or closure.
 */
export function eachNativeFrame(chunk: string, to: NativeFrameTarget): void {
  let at = 0;
  while (at < chunk.length) {
    const end = chunk.indexOf('\n\n', at);
    const stop = end === -1 ? chunk.length : end;
    if (chunk.startsWith(DELTA_HEAD, at)) {
      to.delta(chunk.slice(at + DELTA_HEAD.length, stop - 1));
    } else if (chunk.startsWith('event: ', at)) {
      const nl = chunk.indexOf('\n', at);
      const event = chunk.slice(at + 7, nl);
      const dataAt = nl + 7; // after "\ndata: "
      to.event(event, JSON.parse(chunk.slice(dataAt, stop)) as Record<string, unknown>);
    }
    // (A comment frame, `: …`, is the sink's own business.)
    at = stop + 2;
  }
}

/**
 * A run's subscriber that writes another API's events to a client's SSE response: each native frame goes
 * to `delta` or `event`, and the response ends, closes and drops as the sink does.
 */
export abstract class FrameTranslator implements Subscriber, NativeFrameTarget {
  constructor(protected readonly sink: SseSink) {}

  get dropped(): boolean {
    return this.sink.dropped;
  }

  write(frames: string): void {
    eachNativeFrame(frames, this);
  }

  end(): void {
    this.sink.end();
  }

  onClose(fn: () => void): void {
    this.sink.onClose(fn);
  }

  /** A delta's text, as the JSON string literal it came as. */
  abstract delta(text: string): void;

  abstract event(event: string, data: Record<string, unknown>): void;
}
