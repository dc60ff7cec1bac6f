// The one scaffold every provider session shares: build the round's body, make the whole or the
// streamed call, and map whatever it throws (an abort included) to a ProviderError. An adapter only
// writes what differs per provider: the body, how a whole response and how a stream's frames read.
import { finished, Readable } from 'node:stream';
import { isAbortError, ProviderAbortError, toProviderError } from './errors.ts';
import { PushBody } from './push-body.ts';
import type { SseFrames } from './sse.ts';
import { streamBody } from './sse.ts';
import type { CompletionRequest, HintSink, ProviderName, ProviderSession, RoundEnd, TextSink, ToolResultInput } from './types.ts';

/** The per-provider half of a session. `Body` is the provider's request body of one round. */
export interface RoundCalls<Body> {
  body(toolResults: ToolResultInput[] | null): Body;
  whole(body: Body, onText: TextSink): Promise<RoundEnd>;
  streamed(body: Body, onText: TextSink, onHint: HintSink): Promise<RoundEnd>;
}

export function createSession<Body>(name: ProviderName, req: CompletionRequest, calls: RoundCalls<Body>): ProviderSession {
  const { signal } = req;
  return {
    async round(toolResults, onText, onHint = ignoreHint) {
      try {
        const body = calls.body(toolResults);
        return await (req.stream ? calls.streamed(body, onText, onHint) : calls.whole(body, onText));
      } catch (err) {
        // An abort that lands as the body ends can surface as a cut stream: the signal decides.
        if (signal.aborted && !isAbortError(err)) throw new ProviderAbortError(name, { cause: signal.reason ?? err });
        throw toProviderError(name, err, signal);
      }
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
 */
export async function eachFrame<F>(response: Response, sse: SseFrames, signal: AbortSignal, onFrame: (frame: F) => void): Promise<void> {
  const body: unknown = response.body;
  if (body instanceof PushBody) {
    await new Promise<void>((resolve, reject) => {
      // Throwing from here cancels the body and rejects with what was thrown (PushBody.subscribe).
      body.subscribe((bytes) => handFrames(sse, bytes, onFrame), resolve, reject);
    });
  } else if (body instanceof Readable) {
    await new Promise<void>((resolve, reject) => {
      // As a `for await` would: a throw from here destroys the stream (no more transfer) and rejects;
      // finished() reports an error, an abort or a close before the end as the iterator would have.
      const onData = (bytes: Uint8Array) => {
        try {
          handFrames(sse, bytes, onFrame);
        } catch (err) {
          body.off('data', onData);
          body.destroy();
          reject(err);
        }
      };
      body.on('data', onData);
      finished(body, { writable: false }, (err) => (err ? reject(err) : resolve()));
    });
  } else {
    for await (const bytes of streamBody(response)) handFrames(sse, bytes, onFrame);
  }
  if (signal.aborted) throw signal.reason;
}

/** One read's frames to `onFrame`, then its error frame, if any, thrown. */
function handFrames<F>(sse: SseFrames, bytes: Uint8Array, onFrame: (frame: F) => void): void {
  const frames = sse.feed(bytes) as F[];
  for (let i = 0; i < frames.length; i++) onFrame(frames[i]!);
  if (sse.failure !== undefined) throw sse.failure;
}
