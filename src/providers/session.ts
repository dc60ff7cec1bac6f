// The one scaffold every provider session shares: build the round's body, make the whole or the
// streamed call, and map whatever it throws (an abort included) to a ProviderError. An adapter only
// writes what differs per provider: the body, how a whole response and how a stream's frames read.
import { finished, Readable } from 'node:stream';
import { isAbortError, ProviderAbortError, toProviderError } from './errors.ts';
import { PushBody } from './push-body.ts';
import type { IdleLimit, SseFrames } from './sse.ts';
import { streamBody } from './sse.ts';
import { ProviderError, type CompletionRequest, type HintSink, type ProviderName, type ProviderSession, type RoundEnd, type TextSink, type ToolResultInput } from './types.ts';

/** The per-provider half of a session. `Body` is the provider's request body of one round. */
export interface RoundCalls<Body> {
  body(toolResults: ToolResultInput[] | null): Body;
  whole(body: Body, onText: TextSink): Promise<RoundEnd>;
  streamed(body: Body, onText: TextSink, onHint: HintSink): Promise<RoundEnd>;
}

/**
 * Makes one round's provider call (`once`, which may be called again with the same body) as often as
 * the resilience layer allows (resilience/resilient.ts): the one retry loop, the SDKs' own being off.
 */
export type RoundRetry = (provider: ProviderName, req: CompletionRequest, once: (onText: TextSink) => Promise<RoundEnd>, onText: TextSink) => Promise<RoundEnd>;

export function createSession<Body>(name: ProviderName, req: CompletionRequest, calls: RoundCalls<Body>, retry?: RoundRetry): ProviderSession {
  const { signal } = req;
  const mapped = (err: unknown): ProviderError =>
    // An abort that lands as the body ends can surface as a cut stream: the signal decides.
    signal.aborted && !isAbortError(err) ? new ProviderAbortError(name, { cause: signal.reason ?? err }) : toProviderError(name, err, signal);
  return {
    async round(toolResults, onText, onHint = ignoreHint) {
      let body: Body;
      try {
        body = calls.body(toolResults);
      } catch (err) {
        throw mapped(err);
      }
      // The body is built once: a retry sends the same request again.
      const once = async (sink: TextSink): Promise<RoundEnd> => {
        try {
          return await (req.stream ? calls.streamed(body, sink, onHint) : calls.whole(body, sink));
        } catch (err) {
          throw mapped(err);
        }
      };
      return retry ? retry(name, req, once, onText) : once(onText);
    },
  };
}

const ignoreHint: HintSink = () => {};

/**
 * Reads a streamed body: every frame a socket read completed is handed to `onFrame` synchronously, in
 * order. An in-stream error frame is thrown after the frames before it (and stops the transfer); an
 * abort that lands as the body ends is thrown too, so a cut stream is never mistaken for a complete one.
 * A PushBody (http-fetch.ts on HTTP/1.1) and a Node Readable (h2-fetch.ts's HTTP/2 stream) are read
 * with one subscription and one promise for the whole body: on HTTP/2 one socket read carries many
 * streams' chunks, and an async iterator's promise and generator resumption per chunk cost more than
 * the chunk's parse. Any other body (a web stream) is read with one await per read.
 *
 * With `sse.idle`, a stream that goes that long without a frame fails with `<provider> sent no data for
 * <ms> ms` and its transfer stops. `onFrame` returns `false` for a frame it dropped as carrying nothing;
 * SSE comments (`: keep-alive`), provider_b's pings and such dropped frames never reset the deadline, so a
 * provider that only keeps its connection alive cannot hold a run, its chat and its slots for ever. The
 * transports' own timeout (PROVIDER_TIMEOUT_MS in http-fetch.ts, h2-fetch.ts) counts bytes, which
 * keep-alives are.
 */
export async function eachFrame<F>(response: Response, sse: SseFrames, signal: AbortSignal, onFrame: (frame: F) => unknown): Promise<void> {
  const body: unknown = response.body;
  const deadline = new IdleDeadline(sse.idle);
  try {
    if (body instanceof PushBody) {
      await new Promise<void>((resolve, reject) => {
        // Cancelling detaches the subscriber, so the rejection is ours to make.
        deadline.expire = (err) => (body.cancel(err), reject(err));
        // Throwing from here cancels the body and rejects with what was thrown (PushBody.subscribe).
        body.subscribe((bytes) => handFrames(sse, bytes, onFrame, deadline), resolve, reject);
      });
    } else if (body instanceof Readable) {
      await new Promise<void>((resolve, reject) => {
        // As a `for await` would: a throw from here destroys the stream (no more transfer) and rejects;
        // finished() reports an error, an abort or a close before the end as the iterator would have.
        const onData = (bytes: Uint8Array) => {
          try {
            handFrames(sse, bytes, onFrame, deadline);
          } catch (err) {
            body.off('data', onData);
            body.destroy();
            reject(err);
          }
        };
        deadline.expire = (err) => body.destroy(err);
        body.on('data', onData);
        finished(body, { writable: false }, (err) => (err ? reject(err) : resolve()));
      });
    } else {
      await readWebStream(streamBody(response), sse, onFrame, deadline);
    }
  } finally {
    deadline.clear();
  }
  if (signal.aborted) throw signal.reason;
}

/** eachFrame's read of a web stream: its reader, cancelled when a frame throws or the deadline passes. */
async function readWebStream<F>(stream: ReadableStream<Uint8Array>, sse: SseFrames, onFrame: (frame: F) => unknown, deadline: IdleDeadline): Promise<void> {
  const reader = stream.getReader();
  let expired: ProviderError | null = null;
  deadline.expire = (err) => {
    expired = err;
    reader.cancel(err).catch(() => {}); // a pending read then ends as done
  };
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) handFrames(sse, r.value, onFrame, deadline);
  } catch (err) {
    reader.cancel(err).catch(() => {});
    throw err;
  }
  if (expired) throw expired;
}

/** One read's frames to `onFrame`, then its error frame, if any, thrown. A frame `onFrame` kept is progress. */
function handFrames<F>(sse: SseFrames, bytes: Uint8Array, onFrame: (frame: F) => unknown, deadline: IdleDeadline): void {
  const frames = sse.feed(bytes) as F[];
  let kept = false;
  for (let i = 0; i < frames.length; i++) if (onFrame(frames[i]!) !== false) kept = true;
  if (kept) deadline.progress();
  if (sse.failure !== undefined) throw sse.failure;
}

/**
 * One stream's no-progress deadline (none without a limit): one timer, re-armed only when it fires
 * early, so progress costs a clock read rather than a timer reset per read. `expire` stops the stream.
 */
class IdleDeadline {
  expire: (err: ProviderError) => void = () => {};
  private last = performance.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly limit: IdleLimit | undefined) {
    if (limit) this.timer = setTimeout(this.check, limit.ms);
  }

  progress(): void {
    this.last = performance.now();
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  private readonly check = (): void => {
    const { provider, ms } = this.limit!;
    const left = ms - (performance.now() - this.last);
    if (left > 0) this.timer = setTimeout(this.check, left);
    else this.expire(new ProviderError(`${provider} sent no data for ${ms} ms`, undefined, { timedOut: true }));
  };
}
