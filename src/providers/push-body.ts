// The body of a provider response read through undici's dispatch handler (http-fetch.ts): the transport
// pushes each socket read in, and one subscriber gets it synchronously, with no Readable, no async
// iterator and no promise per chunk in between. Chunks that arrive before anyone reads are kept (the SDK
// awaits things between the headers and our read), and the fetch Body methods the SDKs use on error
// bodies and whole responses (`text`, `json`, `arrayBuffer`) collect it. It is async-iterable too, so any
// other consumer (the SDKs' `CancelReadableStream`, a `for await`) still works.

import { ErrorCodes, ServiceError } from '../base/errors.ts';
/** What the transport does for the body. */
export interface BodySource {
  /** The consumer left before the end: stop the transfer (the connection must not be reused). */
  cancel(reason: Error): void;
  /** `push` returned false and the kept bytes have since been read: send more. */
  resume(): void;
}

/**
 * A whole response (a non-streamed answer, an error body) is held in memory to be parsed: past this it
 * is refused, the transfer stopped, so that a provider cannot take down an actor thread, and every run
 * on it, with one huge body. A real answer is kilobytes.
 */
export const MAX_WHOLE_BODY_BYTES = 32 * 1024 * 1024;

/** The provider's whole body went past MAX_WHOLE_BODY_BYTES. */
export class BodyTooLargeError extends ServiceError {
  constructor() {
    super(ErrorCodes.PROVIDER_BODY_TOO_LARGE, `the provider's response body is larger than ${MAX_WHOLE_BODY_BYTES / 1024 / 1024} MB`);
    this.name = 'BodyTooLargeError';
  }
}

/** Bytes kept unread before `push` asks the transport to pause; a subscriber takes everything at once. */
const HIGH_WATER = 64 * 1024;

const OPEN = 0;
const ENDED = 1;
const FAILED = 2;
/** The consumer left (`cancel`): an iterator then reads as done, anything else gets the reason. */
const CANCELLED = 3;

type Waiter = { resolve: (r: IteratorResult<Uint8Array>) => void; reject: (err: unknown) => void };

export class PushBody implements AsyncIterable<Uint8Array> {
  private state: typeof OPEN | typeof ENDED | typeof FAILED | typeof CANCELLED = OPEN;
  private error: unknown = undefined;
  private used = false;
  /** Chunks not yet read (no subscriber yet, or read through the iterator). */
  private kept: Uint8Array[] = [];
  private keptBytes = 0;
  private paused = false;
  private onChunk: ((bytes: Uint8Array) => void) | null = null;
  private onEnd: (() => void) | null = null;
  private onError: ((err: unknown) => void) | null = null;
  /** The iterator's pending `next()`. */
  private waiter: Waiter | null = null;

  constructor(private readonly source: BodySource) {}

  // The transport's side.

  /** One socket read. False asks the transport to pause until `source.resume()`. */
  push(bytes: Uint8Array): boolean {
    if (this.state !== OPEN) return false;
    const onChunk = this.onChunk;
    if (onChunk !== null) {
      try {
        onChunk(bytes);
      } catch (err) {
        this.failConsumer(err);
        return false;
      }
      return true;
    }
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      waiter.resolve({ value: bytes, done: false });
      return true;
    }
    this.kept.push(bytes);
    this.keptBytes += bytes.byteLength;
    if (this.keptBytes < HIGH_WATER) return true;
    this.paused = true;
    return false;
  }

  /** The whole body has arrived. */
  end(): void {
    if (this.state !== OPEN) return;
    this.state = ENDED;
    const { onEnd, waiter } = this;
    this.detach();
    if (onEnd !== null) onEnd();
    else if (waiter !== null) waiter.resolve({ value: undefined, done: true });
  }

  /** The transfer failed (a reset, a timeout, an abort): the consumer gets `err` after the chunks before it. */
  fail(err: unknown): void {
    if (this.state !== OPEN) return;
    this.state = FAILED;
    this.error = err;
    const { onError, waiter } = this;
    this.detach();
    if (onError !== null) onError(err);
    else if (waiter !== null) waiter.reject(err);
  }

  // The consumer's side.

  get bodyUsed(): boolean {
    return this.used;
  }

  /**
   * Hands every chunk to `onChunk` synchronously, in order (the ones kept so far at once), then calls
   * `onEnd` or `onError`, exactly one of them, once. When `onChunk` throws, the body is cancelled and
   * `onError` gets what it threw.
   */
  subscribe(onChunk: (bytes: Uint8Array) => void, onEnd: () => void, onError: (err: unknown) => void): void {
    this.claim();
    const kept = this.kept;
    this.kept = [];
    this.keptBytes = 0;
    for (let i = 0; i < kept.length; i++) {
      try {
        onChunk(kept[i]!);
      } catch (err) {
        if (this.state === OPEN) this.cancel(err instanceof Error ? err : new Error(String(err)));
        onError(err);
        return;
      }
    }
    if (this.state === ENDED) return onEnd();
    if (this.state !== OPEN) return onError(this.error);
    this.onChunk = onChunk;
    this.onEnd = onEnd;
    this.onError = onError;
    this.resumeSource();
  }

  /** Stops the transfer; what is kept is dropped. A no-op once the body has ended or failed. */
  cancel(reason: Error = new DOMException('The body was cancelled', 'AbortError')): void {
    if (this.state !== OPEN) return;
    this.state = CANCELLED;
    this.error = reason;
    const waiter = this.waiter;
    this.detach();
    this.kept = [];
    this.keptBytes = 0;
    this.source.cancel(reason);
    waiter?.resolve({ value: undefined, done: true });
  }

  text(): Promise<string> {
    return this.collect().then((bytes) => new TextDecoder().decode(bytes));
  }

  json(): Promise<unknown> {
    return this.text().then((text) => JSON.parse(text));
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.collect().then((bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  }

  bytes(): Promise<Uint8Array> {
    return this.collect();
  }

  blob(): Promise<Blob> {
    return this.arrayBuffer().then((buffer) => new Blob([buffer]));
  }

  /** Reading claims the body on the first `next()`; `return()` (a loop left early) cancels it. */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    let claimed = false;
    return {
      next: () => {
        if (!claimed) {
          if (this.used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
          claimed = this.used = true;
        }
        return this.next();
      },
      return: () => {
        this.cancel();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  /** The whole body as one buffer. */
  private collect(): Promise<Uint8Array> {
    if (this.used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
    return new Promise((resolve, reject) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const keep = (bytes: Uint8Array) => {
        size += bytes.byteLength;
        // Thrown from the subscriber: the body is cancelled and the read rejects with it.
        if (size > MAX_WHOLE_BODY_BYTES) throw new BodyTooLargeError();
        chunks.push(bytes);
      };
      this.subscribe(keep, () => resolve(Buffer.concat(chunks)), reject);
    });
  }

  private next(): Promise<IteratorResult<Uint8Array>> {
    if (this.waiter !== null) return Promise.reject(new TypeError('Body has a pending read'));
    const bytes = this.kept.shift();
    if (bytes !== undefined) {
      this.keptBytes -= bytes.byteLength;
      if (this.keptBytes < HIGH_WATER) this.resumeSource();
      return Promise.resolve({ value: bytes, done: false });
    }
    if (this.state === FAILED) return Promise.reject(this.error);
    if (this.state !== OPEN) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  private claim(): void {
    if (this.used) throw new TypeError('Body is unusable: Body has already been read');
    this.used = true;
  }

  private resumeSource(): void {
    if (!this.paused || this.state !== OPEN) return;
    this.paused = false;
    this.source.resume();
  }

  /** The subscriber's `onChunk` threw: stop the transfer and hand it what it threw. */
  private failConsumer(err: unknown): void {
    const onError = this.onError;
    this.cancel(err instanceof Error ? err : new Error(String(err)));
    onError?.(err);
  }

  private detach(): void {
    this.onChunk = null;
    this.onEnd = null;
    this.onError = null;
    this.waiter = null;
  }
}
