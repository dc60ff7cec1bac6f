// The spans of a run's Redis lease (docs/operations.md, "Traces and GenAI metrics"), in cluster mode with
// tracing on to this file's OTLP receiver: the lease is acquired under the request that starts the run,
// renewed by the instance's beat (a trace of its own, one span per beat for every lease held), and
// released under the run's span when the run ends.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startOtlpReceiver, traceTo, type OtlpReceiver } from '../helpers/otlp-receiver.ts';
import { testRedis } from '../helpers/redis.ts';
import { NEEDS_POSTGRES, sim, startTestServer, type TestServer } from '../helpers/server.ts';
import { gateName, waitFor } from '../helpers/wait.ts';

const redis = await testRedis();
const skip = typeof redis === 'string' ? redis : NEEDS_POSTGRES;

describe('lease spans', { skip }, () => {
  let receiver: OtlpReceiver;
  let t: TestServer;
  const prefix = typeof redis === 'string' ? '' : redis.prefix();
  before(async () => {
    if (typeof redis === 'string') return;
    receiver = await startOtlpReceiver();
    traceTo(receiver);
    t = await startTestServer({ env: { REDIS_URL: redis.url, REDIS_KEY_PREFIX: prefix, INSTANCE_ID: 'lease-traces', INSTANCE_HEARTBEAT_MS: '200' } });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
    if (typeof redis !== 'string') {
      await redis.clean(prefix);
      await redis.close();
    }
  });

  it("a run's lease is acquired under its request, renewed by the beat and released under the run", async () => {
    const gate = gateName();
    const content = sim({ reply: 'one two three', deltas: 3, gate, gateAfter: 1 });
    let chatId: string | undefined;
    const stream = t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content }] }, {
      stopAfter: (e) => ((chatId ??= e.event === 'meta' ? e.data.chatId : undefined), false),
    });
    await waitFor(() => chatId !== undefined, 10_000, "the stream's meta");
    const renewal = () => receiver.spans.find((s) => s.name === 'lease renew' && Number(s.attributes['lease.count']) >= 1);
    // The run is held by the simulator: a beat renews its lease meanwhile.
    await waitFor(() => renewal() !== undefined, 10_000, 'a beat that renewed a lease');
    t.sim.openGate(gate);
    const r = await stream;
    assert.equal(r.events.at(-1)!.event, 'done');
    const traceId = r.headers.get('x-trace-id')!;
    const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
    const named = (name: string) => inTrace().find((s) => s.name === name);
    await waitFor(() => named('lease release') !== undefined && named('lease acquire') !== undefined, 10_000, "the lease's acquire and release in the run's trace");
    const run = inTrace().find((s) => s.attributes['run.kind'] === 'chat')!;
    assert.equal(named('lease acquire')!.parentSpanId, named('POST /v1/chat-completions/stream')!.spanId, 'acquired under the request');
    const release = named('lease release')!;
    assert.equal(release.parentSpanId, run.spanId, 'released under the run');
    assert.deepEqual([release.attributes['lease.run'], release.attributes['lease.released'], release.attributes['db.system.name']], [`chat:${chatId}`, true, 'redis']);
    const renew = renewal()!;
    assert.equal(renew.parentSpanId, '', 'a beat is a trace of its own');
    assert.notEqual(renew.traceId, traceId);
    assert.deepEqual([renew.kind, renew.attributes['lease.operation'], renew.attributes['lease.lost']], [3 /* CLIENT */, 'renew', 0]);
  });
});
