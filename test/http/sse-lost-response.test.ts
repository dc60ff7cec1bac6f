// One server's SSE streams share one flush per turn and one head timer (src/http/sse.ts). A stream whose
// uWS response was let go beneath it (answered or aborted by another path: uWS then throws on any use of
// it) must close as a stream whose client left, and must not take the others down with it: on ba4e63b
// its throw left the shared flush marked as queued for ever (no later turn sent any stream's frames;
// they left only with an end) and escaped as an uncaught exception. Real uWS, real sockets; each step
// waits for what a client reads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Reply } from '../../src/http/reply.ts';
import { SseStreams, type SseSink } from '../../src/http/sse.ts';
import { listenExclusive, uws, type HttpResponse, type us_listen_socket } from '../../src/http/uws.ts';
import { waitFor } from '../helpers/wait.ts';

describe('http/sse: a stream whose response was let go beneath it', () => {
  let listen: us_listen_socket;
  let base: string;
  const lost: unknown[] = [];
  const streams = new SseStreams({ heartbeatMs: 3_600_000, onLost: (err) => lost.push(err) });
  /** The sink and raw response of each request, by the `n` of its query string. */
  const opened = new Map<string, { sink: SseSink; res: HttpResponse }>();
  /** What a request's handler does right after it opened its stream, in the same turn (by `n`). */
  const inHandler = new Map<string, (sink: SseSink, res: HttpResponse) => void>();

  before(async () => {
    const app = uws.App();
    app.get('/sse', (res, req) => {
      const n = new URLSearchParams(req.getQuery() ?? '').get('n')!;
      const sink = streams.create(new Reply(res));
      sink.open();
      opened.set(n, { sink, res });
      inHandler.get(n)?.(sink, res);
    });
    listen = await listenExclusive(app, '127.0.0.1', 0);
    base = `http://127.0.0.1:${uws.us_socket_local_port(listen)}`;
  });
  after(() => {
    streams.close();
    uws.us_listen_socket_close(listen);
  });

  /** A client's stream and what it has read so far. */
  async function client(n: string) {
    const ac = new AbortController();
    const res = fetch(`${base}/sse?n=${n}`, { signal: ac.signal });
    await waitFor(() => opened.has(n), 10_000, `stream ${n} to open`);
    const got = { text: '', headers: false };
    void res
      .then(async (r) => {
        got.headers = true;
        const decoder = new TextDecoder();
        for await (const chunk of r.body!) got.text += decoder.decode(chunk as Uint8Array, { stream: true });
      })
      .catch(() => {});
    return { got, close: () => ac.abort(), ...opened.get(n)! };
  }

  /** What another path does to a response the stream holds: answers it (uWS lets it go). */
  const answerBeneath = (res: HttpResponse) => res.cork(() => res.writeStatus('200 OK').end('answered elsewhere'));

  it('one written in the same turn as others: it closes, theirs leave, and so do the next turns\'', async () => {
    const good = await client('write-good');
    // In one turn, before any head timer: the response is let go beneath the stream, which is then
    // written first, and the good one after it.
    inHandler.set('write-bad', (sink, res) => {
      answerBeneath(res);
      sink.write('event: delta\ndata: lost\n\n');
      good.sink.write('event: delta\ndata: first\n\n');
    });
    const bad = await client('write-bad');
    await waitFor(() => good.got.text.includes('data: first'), 10_000, 'the good stream\'s frame of that turn');
    assert.equal(bad.sink.closed, true, 'the stream that lost its response is closed');
    assert.equal(lost.length, 1, 'and said so once');
    good.sink.write('event: delta\ndata: second\n\n');
    await waitFor(() => good.got.text.includes('data: second'), 10_000, 'the good stream\'s frame of a later turn');
    bad.sink.write('event: delta\ndata: dropped\n\n');
    good.sink.write('event: delta\ndata: third\n\n');
    await waitFor(() => good.got.text.includes('data: third'), 10_000, 'the next turn\'s frame');
    assert.equal(lost.length, 1, 'a closed stream takes no writes');
    good.sink.end();
    bad.close();
  });

  it('one whose head is due with others\': it closes, their heads leave, and their frames after', async () => {
    lost.length = 0;
    // Let go beneath the stream as it opens, before its head could leave.
    inHandler.set('head-bad', (_sink, res) => answerBeneath(res));
    const bad = await client('head-bad');
    const good = await client('head-good');
    // Nothing is written: the heads wait for the shared head timer.
    await waitFor(() => good.got.headers, 10_000, 'the good stream\'s head');
    assert.equal(bad.sink.closed, true);
    assert.equal(lost.length, 1);
    good.sink.write('event: delta\ndata: after the head\n\n');
    await waitFor(() => good.got.text.includes('data: after the head'), 10_000, 'its frame');
    good.sink.end();
    bad.close();
  });

  it('one ended by its run after its response was let go: it closes without a throw into the run\'s end', async () => {
    lost.length = 0;
    const bad = await client('end-bad');
    answerBeneath(bad.res);
    bad.sink.write('event: done\ndata: {}\n\n');
    assert.doesNotThrow(() => bad.sink.end());
    assert.equal(bad.sink.closed, true);
    assert.equal(lost.length, 1);
    bad.close();
  });
});
