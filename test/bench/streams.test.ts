// The load generator's stream tally (bench/load/streams.ts): every delta's latency counts in the whole
// run's samples, and only those that arrive after the last start and before the first stream ends
// count in the steady window's (the relay with no start or end beside it).
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { Samples } from '../../bench/load/stats.ts';
import { runStream, type Tally } from '../../bench/load/streams.ts';
import { waitFor } from '../helpers/wait.ts';

/** A Chat Completions stream chunk carrying one stamped delta, as the simulator sends it. */
const chunk = () => `data: {"choices":[{"delta":{"content":"${Date.now()}.5|"}}]}\n\n`;

test('the steady window takes the deltas after the last start and before the first end', async (t) => {
  const streams: ServerResponse[] = [];
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    streams.push(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const ep = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
  const tally: Tally = {
    ok: 0, failed: 0, lost: 0, duplicated: 0, outOfOrder: 0, deltas: 0, reasons: {},
    latency: new Samples(), latencySteady: new Samples(), rampOver: false, anyEnded: false, ttfd: new Samples(),
  };
  const job = { ep, path: '/v1/chat/completions', headers: {}, body: '{}', deltas: 2, kind: 'cc' as const, timeoutMs: 30_000 };
  const [a, b] = [runStream(job, tally), runStream(job, tally)];
  await waitFor(() => streams.length === 2, 10_000, 'both streams open');
  const [resA, resB] = streams as [ServerResponse, ServerResponse];

  resA.write(chunk());
  await waitFor(() => tally.latency.n === 1, 10_000, 'a delta during the ramp');
  assert.equal(tally.latencySteady.n, 0, 'a delta before the last start is not steady');

  tally.rampOver = true;
  resB.write(chunk());
  resA.write(chunk());
  await waitFor(() => tally.latency.n === 3, 10_000, 'two deltas with every stream open');
  assert.equal(tally.latencySteady.n, 2);

  resA.end('data: [DONE]\n\n');
  await a;
  resB.write(chunk());
  await waitFor(() => tally.latency.n === 4, 10_000, 'a delta after the first end');
  assert.equal(tally.latencySteady.n, 2, 'a delta after a stream ended is not steady');
  resB.end('data: [DONE]\n\n');
  await b;
  assert.deepEqual({ ok: tally.ok, failed: tally.failed, lost: tally.lost }, { ok: 2, failed: 0, lost: 0 });
});
