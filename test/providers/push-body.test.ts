// PushBody (src/providers/push-body.ts) on its own, with a fake transport, and eachFrame reading one:
// chunks kept until a reader comes, synchronous delivery, the Body methods the SDKs use, cancellation,
// the pause past the high-water mark, and async iteration for any other consumer.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { PushBody, type BodySource } from '../../src/providers/push-body.ts';
import { eachFrame } from '../../src/providers/session.ts';
import { openaiFrames, SseFrames } from '../../src/providers/sse.ts';

/** A transport that records what the body asked of it. */
function source(): BodySource & { cancelled: Error[]; resumed: number } {
  return {
    cancelled: [],
    resumed: 0,
    cancel(reason) {
      this.cancelled.push(reason);
    },
    resume() {
      this.resumed++;
    },
  };
}

const bytes = (s: string) => new TextEncoder().encode(s);
const str = (b: Uint8Array) => new TextDecoder().decode(b);

/** Subscribes and records every call, in order. */
function record(body: PushBody): string[] {
  const seen: string[] = [];
  body.subscribe(
    (b) => seen.push(str(b)),
    () => seen.push('end'),
    (err) => seen.push(`error: ${(err as Error).message}`),
  );
  return seen;
}

test('chunks pushed before anyone subscribes arrive first, in order; later ones synchronously', () => {
  const body = new PushBody(source());
  assert.equal(body.push(bytes('a')), true);
  assert.equal(body.push(bytes('b')), true);
  assert.equal(body.bodyUsed, false);
  const seen = record(body);
  assert.equal(body.bodyUsed, true);
  assert.deepEqual(seen, ['a', 'b']);
  assert.equal(body.push(bytes('c')), true);
  assert.deepEqual(seen, ['a', 'b', 'c']); // handed over inside push
  body.end();
  body.end();
  body.fail(new Error('late')); // nothing after the end
  assert.deepEqual(seen, ['a', 'b', 'c', 'end']);
});

test('an end or a failure before the subscriber comes is delivered after the kept chunks', () => {
  const ended = new PushBody(source());
  ended.push(bytes('x'));
  ended.end();
  assert.deepEqual(record(ended), ['x', 'end']);

  const failed = new PushBody(source());
  failed.push(bytes('x'));
  failed.fail(new Error('other side closed'));
  assert.deepEqual(record(failed), ['x', 'error: other side closed']);
});

test('text(), json() and arrayBuffer() collect the body; a body reads once', async () => {
  const body = new PushBody(source());
  body.push(bytes('{"error":{"message":'));
  const json = body.json();
  body.push(bytes('"bad key"}}'));
  body.end();
  assert.deepEqual(await json, { error: { message: 'bad key' } });
  assert.equal(body.bodyUsed, true);
  await assert.rejects(body.text(), TypeError);
  assert.throws(() => record(body), TypeError);

  const text = new PushBody(source());
  text.push(bytes('Bad '));
  text.push(bytes('Gateway'));
  text.end();
  assert.equal(await text.text(), 'Bad Gateway');

  const raw = new PushBody(source());
  raw.push(bytes('ab'));
  raw.end();
  assert.deepEqual(new Uint8Array(await raw.arrayBuffer()), bytes('ab'));

  const broken = new PushBody(source());
  const read = broken.text();
  broken.fail(new Error('terminated'));
  await assert.rejects(read, /terminated/);
});

test('a subscriber that throws cancels the transfer and gets what it threw; nothing follows', () => {
  const src = source();
  const body = new PushBody(src);
  const seen: string[] = [];
  const boom = new Error('bad frame');
  body.subscribe(
    (b) => {
      seen.push(str(b));
      if (str(b) === 'two') throw boom;
    },
    () => seen.push('end'),
    (err) => seen.push(`error: ${(err as Error).message}`),
  );
  assert.equal(body.push(bytes('one')), true);
  assert.equal(body.push(bytes('two')), false);
  assert.deepEqual(src.cancelled, [boom]);
  assert.equal(body.push(bytes('three')), false);
  body.end();
  body.fail(new Error('aborted'));
  assert.deepEqual(seen, ['one', 'two', 'error: bad frame']);

  // The same when the throw comes on a kept chunk, during subscribe.
  const src2 = source();
  const kept = new PushBody(src2);
  kept.push(bytes('two'));
  kept.push(bytes('three'));
  const seen2: string[] = [];
  kept.subscribe(
    (b) => {
      seen2.push(str(b));
      throw boom;
    },
    () => seen2.push('end'),
    (err) => seen2.push(`error: ${(err as Error).message}`),
  );
  assert.deepEqual(seen2, ['two', 'error: bad frame']);
  assert.deepEqual(src2.cancelled, [boom]);
});

test('cancel stops the transfer once, and not after the end', () => {
  const src = source();
  const body = new PushBody(src);
  body.push(bytes('x'));
  body.cancel();
  body.cancel();
  assert.equal(src.cancelled.length, 1);
  assert.equal(src.cancelled[0]!.name, 'AbortError');
  assert.equal(body.push(bytes('y')), false);

  const done = source();
  const ended = new PushBody(done);
  ended.end();
  ended.cancel();
  assert.deepEqual(done.cancelled, []); // a complete body leaves the connection to be reused
});

test('with no reader, push asks for a pause past 64 KiB; reading resumes the transport once', () => {
  const src = source();
  const body = new PushBody(src);
  const piece = new Uint8Array(16 * 1024);
  const answers = [1, 2, 3, 4].map(() => body.push(piece));
  assert.deepEqual(answers, [true, true, true, false]);
  let got = 0;
  body.subscribe((b) => (got += b.byteLength), () => {}, () => {});
  assert.equal(got, 64 * 1024);
  assert.equal(src.resumed, 1);
  assert.equal(body.push(piece), true); // a subscriber takes everything as it comes
});

test('async iteration: kept then live chunks, a failure after them, return() cancels', async () => {
  const body = new PushBody(source());
  body.push(bytes('a'));
  const it = body[Symbol.asyncIterator]();
  assert.deepEqual(await it.next(), { value: bytes('a'), done: false });
  const pending = it.next();
  body.push(bytes('b'));
  assert.deepEqual(await pending, { value: bytes('b'), done: false });
  body.push(bytes('c'));
  body.fail(new Error('other side closed'));
  assert.deepEqual(await it.next(), { value: bytes('c'), done: false });
  await assert.rejects(it.next(), /other side closed/);

  const ended = new PushBody(source());
  const parts: string[] = [];
  ended.push(bytes('x'));
  ended.end();
  for await (const b of ended) parts.push(str(b));
  assert.deepEqual(parts, ['x']);

  // What the SDKs do with a body they do not need (CancelReadableStream).
  const src = source();
  const unread = new PushBody(src);
  await unread[Symbol.asyncIterator]().return!();
  assert.equal(src.cancelled.length, 1);

  // A loop left early cancels too.
  const src2 = source();
  const left = new PushBody(src2);
  left.push(bytes('1'));
  for await (const _ of left) break;
  assert.equal(src2.cancelled.length, 1);
});

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;
const contents = (frames: any[]) => frames.map((f) => f.choices[0].delta.content);

test('eachFrame over a PushBody: frames in order across reads, split frames included', async () => {
  const body = new PushBody(source());
  const whole = chunk('one') + chunk('two') + chunk('three', 'stop');
  body.push(bytes(whole.slice(0, 10))); // kept until eachFrame subscribes
  const frames: any[] = [];
  const ac = new AbortController();
  const done = eachFrame({ body, headers: new Headers() } as unknown as Response, new SseFrames(new Headers(), openaiFrames), ac.signal, (f) => frames.push(f));
  body.push(bytes(whole.slice(10, 50)));
  body.push(bytes(whole.slice(50)));
  assert.deepEqual(contents(frames), ['one', 'two', 'three']); // synchronously, inside push
  body.end();
  await done;
});

test('eachFrame over a PushBody: an error frame rejects after the frames before it and cancels the body', async () => {
  const src = source();
  const body = new PushBody(src);
  const frames: any[] = [];
  const ac = new AbortController();
  const done = eachFrame({ body } as unknown as Response, new SseFrames(new Headers(), openaiFrames), ac.signal, (f) => frames.push(f));
  body.push(bytes(chunk('one') + `data: ${JSON.stringify({ error: { message: 'Overloaded', code: 'overloaded' } })}\n\n` + chunk('late')));
  await assert.rejects(done, (err: any) => err.error?.message === 'Overloaded');
  assert.deepEqual(contents(frames), ['one']);
  assert.equal(src.cancelled.length, 1);
});

test('eachFrame over a PushBody: a failure rejects with it; an abort as the body ends still throws', async () => {
  const body = new PushBody(source());
  const ac = new AbortController();
  const sse = () => new SseFrames(new Headers(), openaiFrames);
  const cut = eachFrame({ body } as unknown as Response, sse(), ac.signal, () => {});
  body.fail(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
  await assert.rejects(cut, { code: 'UND_ERR_SOCKET' });

  const late = new PushBody(source());
  const ended = eachFrame({ body: late } as unknown as Response, sse(), ac.signal, () => {});
  ac.abort();
  late.end();
  await assert.rejects(ended, { name: 'AbortError' });
});

// The HTTP/2 transport's body is a node Readable (h2-fetch.ts): eachFrame reads it with `data` events,
// one promise for the whole body, and must keep what a `for await` over it gave.
test('eachFrame over a node Readable: frames in order, synchronously per chunk; the end resolves', async () => {
  const body = new PassThrough();
  const frames: any[] = [];
  const done = eachFrame({ body } as unknown as Response, new SseFrames(new Headers(), openaiFrames), new AbortController().signal, (f) => frames.push(f));
  const whole = chunk('one') + chunk('two') + chunk('three', 'stop');
  body.write(whole.slice(0, 10));
  body.write(whole.slice(10));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(contents(frames), ['one', 'two', 'three']);
  body.end();
  await done;
});

test('eachFrame over a node Readable: an error frame rejects after the frames before it and destroys the stream', async () => {
  const body = new PassThrough();
  const frames: any[] = [];
  const done = eachFrame({ body } as unknown as Response, new SseFrames(new Headers(), openaiFrames), new AbortController().signal, (f) => frames.push(f));
  body.write(chunk('one') + `data: ${JSON.stringify({ error: { message: 'Overloaded', code: 'overloaded' } })}\n\n` + chunk('late'));
  await assert.rejects(done, (err: any) => err.error?.message === 'Overloaded');
  assert.deepEqual(contents(frames), ['one']);
  assert.equal(body.destroyed, true, 'the transfer stops: the HTTP/2 stream is reset');
});

test('eachFrame over a node Readable: an error or a close before the end rejects; an abort as it ends still throws', async () => {
  const sse = () => new SseFrames(new Headers(), openaiFrames);
  const read = (body: PassThrough, signal = new AbortController().signal) => eachFrame({ body } as unknown as Response, sse(), signal, () => {});
  const failed = new PassThrough();
  const cut = read(failed);
  failed.destroy(Object.assign(new Error('stream reset'), { code: 'ERR_HTTP2_STREAM_ERROR' }));
  await assert.rejects(cut, { code: 'ERR_HTTP2_STREAM_ERROR' });

  const closed = new PassThrough();
  const early = read(closed);
  closed.destroy();
  await assert.rejects(early, { code: 'ERR_STREAM_PREMATURE_CLOSE' });

  const ac = new AbortController();
  const late = new PassThrough();
  const ended = read(late, ac.signal);
  ac.abort();
  late.end();
  await assert.rejects(ended, { name: 'AbortError' });
});
