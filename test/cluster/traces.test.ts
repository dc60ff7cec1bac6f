// Traces across instances (docs/operations.md, "Traces and GenAI metrics"), with real processes and a
// real SIGKILL: two instances on one Postgres and one Redis send their spans to this file's OTLP
// receiver. A client attaching through the peer to a run on the owner gets, in its own trace, the
// owner's side of the attach, linked to the run's span; once the owner is killed, the peer's
// continuation of the run (a takeover) has a span of its own, linked to the lost run's trace.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { clusterSuite, type Instance } from '../helpers/cluster.ts';
import { sqlRows } from '../helpers/pg-cluster.ts';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { readSse, sim, type SseEvent } from '../helpers/server.ts';
import { gateName, waitFor } from '../helpers/wait.ts';

const receiver = await startOtlpReceiver();
const ENV = {
  INSTANCE_HEARTBEAT_MS: '200',
  CHECKPOINT_MS: '100',
  CLUSTER_LEASE_TTL_MS: '2000',
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_BSP_SCHEDULE_DELAY: '50',
};
const RECOVERY_WAIT_MS = 60_000;

const post = (inst: Instance, path: string, body: unknown) =>
  fetch(inst.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('traces across instances', async () => {
  const suite = await clusterSuite({ n: 2, env: ENV });
  after(() => receiver.close());
  if (!suite) return;

  it("an attach through a peer is in the attaching request's trace, linked to the run; a takeover links to the lost run", async () => {
    const [owner, peer] = suite.cluster.instances as [Instance, Instance];
    const gate = gateName();
    const answer = Array.from({ length: 40 }, (_, i) => `w${i} `).join('');
    const res = await post(owner, '/v1/chat-completions/stream', { provider: 'provider_b', model: 'm', messages: [{ role: 'user', content: sim({ reply: answer, deltas: 40, gate, gateAfter: 5 }) }] });
    assert.equal(res.status, 200);
    const runTrace = res.headers.get('x-trace-id')!;
    let meta!: (e: SseEvent) => void;
    const got = new Promise<SseEvent>((r) => (meta = r));
    void readSse(res, new AbortController(), (ev) => ev.event === 'meta', (ev) => meta(ev)).catch(() => undefined);
    const { chatId, callId } = (await got).data as { chatId: string; callId: string };

    const follower = await post(peer, `/v1/chats/${chatId}/stream/attach`, {});
    assert.equal(follower.status, 200);
    const attachTrace = follower.headers.get('x-trace-id')!;
    void readSse(follower, new AbortController()).catch(() => undefined);
    // The owner's side: a child of the peer's request span, linked to the run's span.
    await waitFor(() => receiver.spans.some((s) => s.traceId === attachTrace && s.name === 'attach'), 10_000, "the owner's attach span");
    const ownerSide = receiver.spans.find((s) => s.traceId === attachTrace && s.name === 'attach')!;
    assert.deepEqual(ownerSide.links.map((l) => [l.traceId, l.attributes['link.kind']]), [[runTrace, 'attach']]);
    const runSpanId = ownerSide.links[0]!.spanId;

    // The run's traceparent is stored with its first checkpoint; then the owner dies.
    await waitFor(async () => ((await sqlRows(suite.cluster.databaseUrl, 'SELECT trace_parent FROM llm_calls WHERE id = $1', [callId]))[0]?.trace_parent ?? null) !== null, 30_000, 'the traced checkpoint');
    await owner.kill('SIGKILL');
    suite.sim.openGate(gate);
    const continued = () => receiver.spans.find((s) => s.attributes['run.kind'] === 'chat' && s.links.some((l) => l.attributes['link.kind'] === 'takeover'));
    await waitFor(() => continued() !== undefined, RECOVERY_WAIT_MS, "the continuation's run span");
    const span = continued()!;
    assert.deepEqual(span.links.map((l) => [l.traceId, l.spanId]), [[runTrace, runSpanId]], "linked to the lost run's span");
    assert.notEqual(span.traceId, runTrace, 'the continuation is a trace of its own (no request started it)');
    assert.equal(span.name, 'chat m');
    // The peer's attach request ended when its follower was told the owner stopped: its span is the parent.
    await waitFor(() => receiver.spans.some((s) => s.spanId === ownerSide.parentSpanId), 10_000, "the peer's attach request span");
    assert.equal(receiver.spans.find((s) => s.spanId === ownerSide.parentSpanId)!.name, 'POST /v1/chats/:chatId/stream/attach');
  });
});
