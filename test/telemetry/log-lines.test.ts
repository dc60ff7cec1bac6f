// Log lines and traces (docs/operations.md, "Traces and GenAI metrics"): with tracing on, a line
// written while a span is active carries its trace id, beside the line's own fields; without a span,
// or with tracing off, the line is as it always was.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/base/log.ts';
import { runLogFields, runSpanStarted, startRunSpan } from '../../src/telemetry/run-spans.ts';
import { startSpan, startTracing, stopTracing, withSpan } from '../../src/telemetry/tracing.ts';
import { startOtlpReceiver, traceTo, type OtlpReceiver } from '../helpers/otlp-receiver.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, log: createLogger('info', stream) };
}

describe('log lines', () => {
  it('with tracing off, are as they always were', () => {
    const { lines, log } = capture();
    log.info({ simulated: ['provider_a'] }, 'one');
    log.info({ other: 1 }, 'two');
    assert.deepEqual(lines.map(({ time: _, ...l }) => l), [
      { level: 30, simulated: ['provider_a'], msg: 'one' },
      { level: 30, other: 1, msg: 'two' },
    ]);
  });

  describe('with tracing on', () => {
    let receiver: OtlpReceiver;
    before(async () => {
      receiver = await startOtlpReceiver();
      traceTo(receiver);
      await startTracing();
    });
    after(async () => {
      await stopTracing();
      await receiver.close();
    });

    it("carry the active span's trace id beside their own fields", () => {
      const { lines, log } = capture();
      const span = startSpan('work')!;
      withSpan(span, () => log.info({ callId: 'c1' }, 'inside'));
      log.info({ callId: 'c2' }, 'outside');
      span.end();
      assert.deepEqual(lines.map(({ time: _, ...l }) => l), [
        { level: 30, trace_id: span.spanContext().traceId, callId: 'c1', msg: 'inside' },
        { level: 30, callId: 'c2', msg: 'outside' },
      ]);
    });

    it("a run's lines from its actor thread get the run's trace id while it runs", async () => {
      const request: { model: string; traceparent?: string } = { model: 'm' };
      const span = startRunSpan('chat', request)!;
      let end!: (r: { ok: boolean }) => void;
      runSpanStarted(span, { runId: 'run-1', kind: 'chat', key: 'chat-1' }, new Promise((r) => (end = r)));
      assert.deepEqual(runLogFields('run-1'), { trace_id: span.spanContext().traceId });
      assert.match(request.traceparent!, new RegExp(`^00-${span.spanContext().traceId}-${span.spanContext().spanId}-01$`));
      end({ ok: true });
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(runLogFields('run-1'), {}, 'forgotten once the run ended');
    });
  });
});
