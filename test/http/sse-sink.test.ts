// SseSink (src/http/sse.ts) against a recording stand-in for a uWS response: what one turn writes
// leaves in one write at the turn's end with the head in front of it (a run's first frames wait on the
// actor thread, not here), an open stream with nothing to say still shows its head after HEAD_WAIT_MS,
// and an end carries what waited.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { HttpResponse } from '../../src/http/uws.ts';
import { Reply } from '../../src/http/reply.ts';
import { SseStreams } from '../../src/http/sse.ts';
import { waitFor } from '../helpers/wait.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('http/sse-sink', () => {
  /**
   * Records every socket-level call; a cork's calls are one send, as uWS makes them. `full`: the socket
   * takes nothing (every write reports backpressure), as for a client that does not read.
   */
  function fakeRes(opts: { full?: boolean } = {}) {
    const sends: string[][] = [];
    let corked: string[] | null = null;
    let closed = false;
    const record = (what: string) => (corked ? corked.push(what) : sends.push([what]));
    const res = {
      onAborted: () => res,
      cork(fn: () => void) {
        corked = [];
        fn();
        sends.push(corked);
        corked = null;
        return res;
      },
      writeStatus: (s: string) => (record(`status ${s}`), res),
      writeHeader: (k: string, v: string) => (record(`${k}: ${v}`), res),
      write: (chunk: string) => (record(chunk), !opts.full),
      end: (chunk: string) => (record(`end ${chunk}`), res),
      onWritable: () => res,
      close: () => ((closed = true), res),
    };
    return { res: res as unknown as HttpResponse, sends, closed: () => closed };
  }

  // One server's streams, as src/app/app.ts builds them; its heartbeat never fires during these tests.
  const streams = new SseStreams({ heartbeatMs: 3_600_000 });
  after(() => streams.close());
  const createSse = (reply: Reply) => streams.create(reply);

  const turn = () => new Promise<void>((r) => setImmediate(r));

  test('a stream\'s first frames leave at their turn\'s end in one send, the head in front; each later turn\'s at its end', async () => {
    const { res, sends } = fakeRes();
    const sink = createSse(new Reply(res));
    sink.open();
    assert.equal(sends.length, 0, 'the head waits for the first frames');
    sink.write('event: meta\n\n');
    sink.write('event: delta\n\n');
    assert.equal(sends.length, 0, 'nothing leaves before the turn ends');
    await turn();
    assert.equal(sends.length, 1);
    assert.equal(sends[0]![0], 'status 200 OK');
    assert.ok(sends[0]!.includes(': open\n\n'));
    assert.equal(sends[0]!.at(-1), 'event: meta\n\nevent: delta\n\n');
    sink.write('event: delta\n\n');
    await turn();
    assert.deepEqual(sends[1], ['event: delta\n\n'], 'later turns: each turn\'s frames at its end');
  });

  test('a batch\'s frames written at once, a start\'s meta with its first delta, leave at the end of their turn', async () => {
    const { res, sends } = fakeRes();
    const sink = createSse(new Reply(res));
    sink.open();
    sink.write('event: meta\n\nevent: delta\n\n');
    await turn();
    assert.equal(sends.length, 1, 'the first delta does not wait for company');
    assert.equal(sends[0]![0], 'status 200 OK');
    assert.equal(sends[0]!.at(-1), 'event: meta\n\nevent: delta\n\n');
  });

  test('two streams written in one turn each send once', async () => {
    const a = fakeRes();
    const b = fakeRes();
    const sa = createSse(new Reply(a.res));
    const sb = createSse(new Reply(b.res));
    sa.open();
    sb.open();
    for (const s of [sa, sb, sa, sb]) s.write('x');
    await turn();
    assert.deepEqual([a.sends.length, b.sends.length], [1, 1]);
    assert.deepEqual([a.sends[0]!.at(-1), b.sends[0]!.at(-1)], ['xx', 'xx']);
  });

  test('an open stream with nothing to say still shows its head', async () => {
    const { res, sends } = fakeRes();
    createSse(new Reply(res)).open();
    await waitFor(() => sends.length === 1, 10_000, 'the head');
    assert.equal(sends[0]![0], 'status 200 OK');
    assert.equal(sends[0]!.at(-1), ': open\n\n');
  });

  test('an end in the turn of its frames sends head, frames and end at once', () => {
    const { res, sends } = fakeRes();
    const sink = createSse(new Reply(res));
    sink.open();
    sink.write('event: done\n\n');
    sink.end();
    assert.equal(sends.length, 1);
    assert.equal(sends[0]![0], 'status 200 OK');
    assert.equal(sends[0]!.at(-1), 'end event: done\n\n');
  });

  test('a client that does not read is dropped once the BYTES queued for it pass the cap, whatever the text', async () => {
    const capped = new SseStreams({ heartbeatMs: 3_600_000, queueCap: 30_000 });
    try {
      // An answer in Chinese: 3 bytes on the wire for each character (one UTF-16 unit).
      const frame = `event: delta\ndata: {"type":"delta","text":"${'潮'.repeat(1000)}"}\n\n`;
      const bytes = Buffer.byteLength(frame);
      assert.ok(bytes > 2.5 * frame.length);
      const { res, closed } = fakeRes({ full: true });
      const sink = capped.create(new Reply(res));
      sink.open();
      sink.write(frame);
      await turn(); // that write meets a full socket, which keeps it: it counts, and what follows waits in the queue
      let queued = bytes;
      let units = frame.length;
      while (queued + bytes <= 30_000) {
        sink.write(frame);
        queued += bytes;
        units += frame.length;
      }
      assert.ok(!sink.dropped, `not dropped at ${queued} bytes queued, under the cap`);
      sink.write(frame);
      assert.ok(sink.dropped, `dropped at ${queued + bytes} bytes queued (${units + frame.length} UTF-16 units), past the 30000-byte cap`);
      assert.ok(closed(), 'its connection is closed');
    } finally {
      capped.close();
    }
  });

  test('what a full socket kept of a turn\'s write counts toward the cap: a client that never reads is dropped after a big turn too', async () => {
    const capped = new SseStreams({ heartbeatMs: 3_600_000, queueCap: 30_000 });
    try {
      const frame = `event: delta\ndata: {"type":"delta","text":"${'x'.repeat(1000)}"}\n\n`;
      const { res, closed } = fakeRes({ full: true });
      const sink = capped.create(new Reply(res));
      sink.open();
      // A busy loop's turn: thirty frames written at once, 30 KB in one write the socket does not take.
      for (let i = 0; i < 30; i++) sink.write(frame);
      await turn();
      assert.ok(!sink.dropped, 'a write is never refused for its own size');
      sink.write(frame);
      assert.ok(sink.dropped, 'the next frame finds the client behind by more than the cap');
      assert.ok(closed(), 'its connection is closed');
    } finally {
      capped.close();
    }
  });

  test('two servers\' streams share nothing: each counts its own, and each server\'s heartbeat pings only its own', async () => {
    const fast = new SseStreams({ heartbeatMs: 1 });
    const slow = new SseStreams({ heartbeatMs: 3_600_000 });
    try {
      const a = fakeRes();
      const b = fakeRes();
      const sa = fast.create(new Reply(a.res));
      const sb = slow.create(new Reply(b.res));
      sa.open();
      sb.open();
      assert.deepEqual([fast.openCount, slow.openCount], [1, 1]);
      const pinged = (sends: string[][]) => sends.some((send) => send.includes(': ping\n\n'));
      await waitFor(() => pinged(a.sends), 10_000, 'the first server\'s heartbeat');
      // One process-wide timer would have pinged both in the same beat.
      assert.ok(!pinged(b.sends), 'the other server\'s stream is not pinged by it');
      sa.end();
      assert.deepEqual([fast.openCount, slow.openCount], [0, 1]);
    } finally {
      fast.close();
      slow.close();
    }
  });

  test('a turn that has sent for longer than its budget lets waiting work in, then sends the rest in order', async () => {
    // A budget of 0: past the first slice of sinks the clock is always over it.
    const sliced = new SseStreams({ heartbeatMs: 3_600_000, flushBudgetMs: 0 });
    try {
      const outs = Array.from({ length: 100 }, () => fakeRes());
      const sinks = outs.map((o) => sliced.create(new Reply(o.res)));
      for (const sink of sinks) sink.open();
      // Sinks whose frames went out. A head may leave alone when a slow machine lets HEAD_WAIT_MS pass
      // before the slices are done (its timer runs before the immediates); that is not a frame sent.
      const framesSent = (o: ReturnType<typeof fakeRes>) => o.sends.flat().filter((piece) => piece.startsWith('event: '));
      const sent = () => outs.filter((o) => framesSent(o).length > 0).length;
      let sentWhenOtherWorkRan = -1;
      // Work that waits on this thread while the batch below is being sent (a request, the next batch).
      // It writes to the last sink, still waiting its turn: that sink sends both frames together, in order.
      setImmediate(() => {
        sentWhenOtherWorkRan = sent();
        sinks[99]!.write('event: delta\ndata: again\n\n');
      });
      sinks.forEach((sink, i) => sink.write(`event: delta\ndata: ${i}\n\n`));
      await waitFor(() => sentWhenOtherWorkRan >= 0, 10_000, 'the waiting work to run');
      assert.ok(sentWhenOtherWorkRan > 0 && sentWhenOtherWorkRan < 100, `it ran between two slices (${sentWhenOtherWorkRan} of 100 sent)`);
      await waitFor(() => sent() === 100, 10_000, 'every sink to be sent');
      assert.deepEqual(framesSent(outs[99]!), ['event: delta\ndata: 99\n\nevent: delta\ndata: again\n\n']);
      assert.deepEqual(outs.map((o) => framesSent(o).join('')).slice(0, 99), Array.from({ length: 99 }, (_, i) => `event: delta\ndata: ${i}\n\n`), 'each sink\'s frame sent once');
    } finally {
      sliced.close();
    }
  });
});
