// An actor thread sends the spans it still batches before the server terminates it (actors/hosts.ts):
// with a batch delay no test waits out, a run's provider spans reach the receiver only through that
// flush, by the time the server has stopped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';
import { startOtlpReceiver, traceTo, type OtlpReceiver } from '../helpers/otlp-receiver.ts';

describe('an actor thread at stop', () => {
  let receiver: OtlpReceiver;
  let t: TestServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    traceTo(receiver, { OTEL_BSP_SCHEDULE_DELAY: '600000' });
    t = await startTestServer({ actorThreads: 1 });
  });
  after(() => receiver.close());

  it("sends its batched spans before it is terminated", async () => {
    const r = await t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ reply: 'hello there' }) }] });
    assert.equal(r.events.at(-1)!.event, 'done');
    const traceId = r.headers.get('x-trace-id')!;
    assert.equal(receiver.spans.length, 0, 'nothing sent before the batch delay');
    await t.close();
    assert.deepEqual(
      receiver.spans.filter((s) => s.traceId === traceId).map((s) => s.name).sort(),
      ['INSERT chats', 'UPDATE llm_calls', 'chat m'],
      "the actor thread's spans of the run (the main thread's go at the process's exit)",
    );
  });
});
