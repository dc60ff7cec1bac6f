// The GenAI histograms through OTLP too (genai-metrics.ts keeps them on /metrics): on when an OTLP
// endpoint for metrics is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, and
// OTEL_METRICS_EXPORTER is not `none`), exported every OTEL_METRIC_EXPORT_INTERVAL ms, under the
// semantic conventions' own names and units. Only the main thread records them (the actor threads post
// their observations to it), so only it starts this; off, no SDK module is loaded.
import type { Histogram } from '@opentelemetry/api';
import type { GenAiObservation } from './genai-observation.ts';
import { serviceResource } from './resource.ts';

interface Instruments {
  duration: Histogram;
  tokens: Histogram;
  firstChunk: Histogram;
  shutdown(): Promise<void>;
}

let instruments: Instruments | null = null;
let starting: Promise<void> | null = null;
/** Servers of this process using the exporter (tests run several): the last one's release stops it. */
let users = 0;

/** The conventions' advised boundaries (as on /metrics). */
const DURATION_BOUNDARIES = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKEN_BOUNDARIES = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DEFAULT_INTERVAL_MS = 60_000;

export function otlpMetricsConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_METRICS_EXPORTER?.trim() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim());
}

/** Starts the exporter when configured (a no-op otherwise), for one more server of this process. */
export function startOtlpMetrics(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!otlpMetricsConfigured(env)) return Promise.resolve();
  users++;
  return (starting ??= load(env));
}

/**
 * A server that started the exporter stops: the last one sends what is recorded and stops it (its
 * exports, each with a deadline of its own, would otherwise keep the process alive).
 */
export async function releaseOtlpMetrics(): Promise<void> {
  if (users === 0 || --users > 0) return;
  await stopOtlpMetrics();
}

async function load(env: NodeJS.ProcessEnv): Promise<void> {
  const [{ MeterProvider, PeriodicExportingMetricReader }, { OTLPMetricExporter }, resource] = await Promise.all([
    import('@opentelemetry/sdk-metrics'),
    import('@opentelemetry/exporter-metrics-otlp-http'),
    serviceResource(),
  ]);
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  const exportIntervalMillis = Number.isInteger(interval) && interval > 0 ? interval : DEFAULT_INTERVAL_MS;
  const reader = new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(), exportIntervalMillis, exportTimeoutMillis: Math.min(exportIntervalMillis, 30_000) });
  const provider = new MeterProvider({ resource, readers: [reader] });
  const meter = provider.getMeter('conversation-search-service');
  instruments = {
    duration: meter.createHistogram('gen_ai.client.operation.duration', { unit: 's', description: 'GenAI operation duration', advice: { explicitBucketBoundaries: DURATION_BOUNDARIES } }),
    tokens: meter.createHistogram('gen_ai.client.token.usage', { unit: '{token}', description: 'Number of input and output tokens used', advice: { explicitBucketBoundaries: TOKEN_BOUNDARIES } }),
    firstChunk: meter.createHistogram('gen_ai.client.operation.time_to_first_chunk', { unit: 's', description: 'Time to receive the first chunk (first token) of a streamed response', advice: { explicitBucketBoundaries: DURATION_BOUNDARIES } }),
    shutdown: () => provider.shutdown(),
  };
}

/** Sends what is recorded and stops (the process is ending). */
export async function stopOtlpMetrics(): Promise<void> {
  const i = instruments;
  instruments = null;
  starting = null;
  if (i) await i.shutdown().catch(() => undefined);
}

/** Records one provider call, when the exporter is on. */
export function recordOtlp(o: GenAiObservation): void {
  const i = instruments;
  if (i === null) return;
  const attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': o.provider, 'gen_ai.request.model': o.model };
  i.duration.record(o.seconds, o.errorType === undefined ? attributes : { ...attributes, 'error.type': o.errorType });
  if (o.firstChunkSeconds !== null) i.firstChunk.record(o.firstChunkSeconds, attributes);
  if (o.inputTokens !== null) i.tokens.record(o.inputTokens, { ...attributes, 'gen_ai.token.type': 'input' });
  if (o.outputTokens !== null) i.tokens.record(o.outputTokens, { ...attributes, 'gen_ai.token.type': 'output' });
}
