// The GenAI client metrics of the OpenTelemetry semantic conventions, on /metrics under their
// Prometheus names: gen_ai.client.operation.duration (gen_ai_client_operation_duration_seconds),
// gen_ai.client.token.usage (gen_ai_client_token_usage) and the time to first token
// (gen_ai.client.operation.time_to_first_chunk: gen_ai_client_operation_time_to_first_chunk_seconds).
// Through OTLP as well when an endpoint is set (otlp-metrics.ts).
// One observation per provider call (a round), made where the call runs (an actor thread posts it
// to the main thread, which owns the registry) when the call ends: nothing per delta.
import client from 'prom-client';
import type { GenAiObservation } from './genai-observation.ts';
import { recordOtlp } from './otlp-metrics.ts';

export type { GenAiObservation } from './genai-observation.ts';

// The conventions' advised buckets: durations from 10 ms to 81.92 s, tokens from 1 to 64 Mi in powers of 4.
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'] as const;

/** Registers the histograms in `registry`; returns the function that records one call. */
export function genAiMetrics(registry: client.Registry): (o: GenAiObservation) => void {
  const duration = new client.Histogram({
    name: 'gen_ai_client_operation_duration_seconds',
    help: 'gen_ai.client.operation.duration: a provider call (one round of a chat run), request to last byte',
    labelNames: [...LABELS, 'error_type'],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const tokens = new client.Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'gen_ai.client.token.usage: tokens a provider call used, by gen_ai_token_type (input, output)',
    labelNames: [...LABELS, 'gen_ai_token_type'],
    buckets: TOKEN_BUCKETS,
    registers: [registry],
  });
  const firstChunk = new client.Histogram({
    name: 'gen_ai_client_operation_time_to_first_chunk_seconds',
    help: 'gen_ai.client.operation.time_to_first_chunk: time to first token of a provider call, request to its first text',
    labelNames: LABELS,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  return (o) => {
    const labels = { gen_ai_operation_name: 'chat', gen_ai_provider_name: o.provider, gen_ai_request_model: o.model };
    duration.observe({ ...labels, error_type: o.errorType ?? '' }, o.seconds);
    if (o.firstChunkSeconds !== null) firstChunk.observe(labels, o.firstChunkSeconds);
    if (o.inputTokens !== null) tokens.observe({ ...labels, gen_ai_token_type: 'input' }, o.inputTokens);
    if (o.outputTokens !== null) tokens.observe({ ...labels, gen_ai_token_type: 'output' }, o.outputTokens);
    recordOtlp(o);
  };
}
