// Reads a streamed provider body ourselves instead of through the SDKs' `Stream`. The SDK still builds and
// sends the request (auth, retries before the first byte, timeouts) and maps a non-2xx status to its typed
// error before `.asResponse()` hands us the Response; only the body's SSE decoding happens here.
//
// Why: the SDKs' Stream decodes every chunk through four nested async iterators (bytes → SSE chunks →
// lines → messages → JSON), each with its own promise hop, and copies the buffered bytes on every read.
// Here each socket read's bytes are decoded and parsed synchronously into `frames`, which the adapter's
// loop then walks without awaits (eachFrame in session.ts: no await per read at all on HTTP/1.1, one on
// HTTP/2).
//
// The frame filters below reproduce what each SDK's `Stream.fromSSEResponse` did that the adapters rely
// on (openai 6.x and @anthropic-ai/sdk 1.x, core/streaming.mjs). One deliberate difference: an SSE event
// with no `data:` line at all is not dispatched (the SSE spec, and eventsource-parser); the openai SDK
// passed it on as `''` and failed the round on JSON.parse('').
import { A, O } from './sdks.ts';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { ProviderName } from './types.ts';

/** A frame filter: turns one SSE event into a frame in `sse.frames`, a `sse.failure`, or nothing. */
export type FrameFilter = (ev: EventSourceMessage, sse: SseFrames) => void;

/**
 * How long a stream may go without a frame that carries data before it fails (`provider` sent no data
 * for `ms`): eachFrame's deadline, which keep-alive comments and pings do not reset (PROVIDER_TIMEOUT_MS).
 */
export interface IdleLimit {
  provider: ProviderName;
  ms: number;
}

/** The IdleLimit of `provider`'s streams, none without `ms`. */
export function idleLimit(provider: ProviderName, ms: number | undefined): IdleLimit | undefined {
  return ms ? { provider, ms } : undefined;
}

/** The most of a body without SSE events kept for `unframedJson`: an error body is far smaller. */
const HEAD_LIMIT = 64 * 1024;

/**
 * The parsed frames of one streamed response. `feed(bytes)` parses one socket read and returns the frames
 * it completed, in order (the same array every time, refilled by the next feed). When a frame is an error
 * (an in-stream error event, unparsable data) it becomes `failure` and later events are ignored: the caller
 * handles the frames before it, then throws it, as the SDK's iterator would have.
 */
export class SseFrames {
  readonly frames: unknown[] = [];
  failure: unknown = undefined;
  /** Set by a filter that saw the stream's end marker (`[DONE]`); later events are ignored. */
  done = false;
  /** Node's own UTF-8 decoder keeps a character split across reads, as TextDecoder's stream mode does,
   * at less than half its cost per read (TextDecoder streams through ICU's converter). */
  private readonly decoder = new StringDecoder('utf8');
  private readonly parser: EventSourceParser;
  /**
   * The body's text until its first SSE event (null from then on, or past HEAD_LIMIT): a server that
   * answers a streamed request with a JSON body (an error, with status 200) sends no event at all.
   */
  private head: string | null = '';

  constructor(
    readonly headers: Headers,
    filter: FrameFilter,
    /** The stream's no-progress deadline; none when undefined. */
    readonly idle?: IdleLimit,
  ) {
    this.parser = createParser({
      onEvent: (ev) => {
        this.head = null;
        if (this.failure === undefined && !this.done) filter(ev, this);
      },
    });
  }

  feed(bytes: Uint8Array): unknown[] {
    this.frames.length = 0;
    const text = this.decoder.write(bytes);
    if (this.head !== null) this.head = this.head.length + text.length <= HEAD_LIMIT ? this.head + text : null;
    this.parser.feed(text);
    return this.frames;
  }

  /** Once the body has ended: the value it held when it was one JSON value and no SSE event; else undefined. */
  unframedJson(): unknown {
    if (this.head === null) return undefined;
    const text = (this.head + this.decoder.end()).trim();
    if (!text.startsWith('{')) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  }
}

/**
 * The body of a streamed Response that the SDK has accepted, when it is neither a PushBody (http-fetch.ts
 * on HTTP/1.1) nor a Node Readable (h2-fetch.ts): a web ReadableStream, from a client on the global fetch.
 * Cancelling its reader closes the stream; the SDK's abort signal errors it with an AbortError.
 */
export function streamBody(response: Response): ReadableStream<Uint8Array> {
  const body = response.body as ReadableStream<Uint8Array> | null;
  // The SDKs' wording, for the same (never expected) case.
  if (!body) throw new Error('Attempted to iterate over a response with no body');
  return body;
}

/**
 * openai's Stream (Chat Completions, Responses): anything from `[DONE]` on is ignored; data is JSON (a
 * SyntaxError otherwise); a payload with a truthy `error` throws the SDK's status-less APIError; events
 * named `thread.*` (Assistants) come wrapped as `{ event, data }`.
 */
export const openaiFrames: FrameFilter = (ev, sse) => {
  const { data, event } = ev;
  if (data.startsWith('[DONE]')) {
    sse.done = true;
    return;
  }
  let value: any;
  try {
    value = JSON.parse(data);
  } catch (err) {
    sse.failure = err;
    return;
  }
  if (event !== undefined && event.startsWith('thread.')) {
    sse.frames.push({ event, data: value });
    return;
  }
  if (value && value.error) {
    sse.failure = new O.APIError(undefined, value.error, undefined, sse.headers);
    return;
  }
  sse.frames.push(value);
};

/**
 * @anthropic-ai/sdk's Stream (Messages): only named events count; `ping` is skipped; `event: error`
 * throws the SDK's status-less APIError with the body; an empty data payload is skipped; data is JSON.
 */
export const anthropicFrames: FrameFilter = (ev, sse) => {
  const { data, event } = ev;
  if (event === undefined || event === 'ping') return;
  if (event === 'error') {
    let body: any;
    try {
      body = JSON.parse(data) ?? data;
    } catch {
      body = data;
    }
    sse.failure = new A.APIError(undefined, body, undefined, sse.headers, body?.error?.type);
    return;
  }
  if (!data) return;
  try {
    sse.frames.push(JSON.parse(data));
  } catch (err) {
    sse.failure = err;
  }
};
