// OpenTelemetry traces (docs/operations.md, "Traces and GenAI metrics"): on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, configured by the standard OTEL_* variables only (the SDK
// reads the sampler, the batch processor's timings, the exporter's headers and timeout itself). Off,
// no SDK module is loaded and every helper here returns at its first line: the API's no-op is not even
// reached. Each thread (the main one, every actor thread) starts its own SDK; a run's trace context
// crosses between them as a W3C traceparent in the run's request. Only the main thread keeps an active
// context across awaits (AsyncLocalStorage: a request's work is its span's child wherever it goes); an
// actor thread has none, because Node 20's promise hooks would then run for every promise of every
// delta: there each span names its parent (actor-spans.ts), from the run's traceparent.
import { context, propagation, ROOT_CONTEXT, trace, TraceFlags, type Context, type Link, type Span, type SpanContext, type SpanKind, type Tracer, type Attributes } from '@opentelemetry/api';

import { serviceResource } from './resource.ts';

interface Tracing {
  tracer: Tracer;
  /** OTEL_GENAI_CAPTURE_CONTENT=true: prompts and answers are recorded on the provider spans. */
  captureContent: boolean;
  /** The active context is kept across awaits (the main thread; not an actor thread). */
  asyncContext: boolean;
  shutdown(): Promise<void>;
}

let active: Tracing | null = null;
let starting: Promise<void> | null = null;

/** Whether an OTLP endpoint for traces is configured in `env`. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()) && env.OTEL_SDK_DISABLED !== 'true';
}

/** How a thread traces: `asyncContext` false (an actor thread) installs no context manager. */
export interface TracingOptions {
  asyncContext?: boolean;
}

/**
 * Starts this thread's SDK when an endpoint is configured: spans batched (OTEL_BSP_*) and sent as
 * OTLP/HTTP (JSON bodies) to the endpoint; with `asyncContext` (the default, the main thread) the
 * active context is kept across awaits so that spans made while a request is handled are its children.
 * Idempotent; a no-op without an endpoint.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env, opts: TracingOptions = {}): Promise<void> {
  if (!tracingConfigured(env)) return Promise.resolve();
  return (starting ??= load(env, opts.asyncContext ?? true));
}

async function load(env: NodeJS.ProcessEnv, asyncContext: boolean): Promise<void> {
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resource, { W3CTraceContextPropagator }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    serviceResource(),
    import('@opentelemetry/core'),
  ]);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  if (asyncContext) {
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  active = {
    tracer: provider.getTracer('conversation-search-service'),
    captureContent: env.OTEL_GENAI_CAPTURE_CONTENT === 'true',
    asyncContext,
    shutdown: () => provider.shutdown(),
  };
}

/** Sends what is batched and stops this thread's SDK (the process or thread is ending). */
export async function stopTracing(): Promise<void> {
  const t = active;
  active = null;
  starting = null;
  if (t) await t.shutdown().catch(() => undefined);
}

/** Tracing is on in this thread. */
export const tracingOn = (): boolean => active !== null;

/**
 * Tracing is on and the active context follows awaits: a library that parents its spans on the active
 * context only (provider_b's SDK) may trace; elsewhere its spans would start traces of their own.
 */
export const activeContextKept = (): boolean => active !== null && active.asyncContext;

/** Prompts and answers may be recorded (OTEL_GENAI_CAPTURE_CONTENT=true). */
export const capturingContent = (): boolean => active !== null && active.captureContent;

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent: a context, or a traceparent string; the active context when absent. */
  parent?: Context | string | null;
  links?: Link[];
}

/** A new span, or null when tracing is off (callers test for null and do nothing else). */
export function startSpan(name: string, opts: SpanOptions = {}): Span | null {
  const t = active;
  if (t === null) return null;
  const parent = typeof opts.parent === 'string' ? contextOf(opts.parent) : (opts.parent ?? context.active());
  return t.tracer.startSpan(name, { kind: opts.kind, attributes: opts.attributes, links: opts.links }, parent);
}

/** A child of the active span, or null when there is none (tracing off, or work outside any trace). */
export function startChildSpan(name: string, opts: Omit<SpanOptions, 'parent'> = {}): Span | null {
  if (active === null) return null;
  const parent = context.active();
  return trace.getSpan(parent) === undefined ? null : startSpan(name, { ...opts, parent });
}

/** `fn` run with `span` as the active span (spans `fn` starts are its children); `fn` alone without one. */
export function withSpan<T>(span: Span | null, fn: () => T): T {
  if (span === null) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** The context a W3C traceparent names (the root context for a missing or malformed one). */
export function contextOf(traceparent: string | undefined | null): Context {
  const sc = parseTraceparent(traceparent);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A W3C traceparent's span context (remote), or null when it is not one (version ff, zero ids). */
export function parseTraceparent(value: string | undefined | null): SpanContext | null {
  const m = value ? TRACEPARENT.exec(value.trim()) : null;
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined)) return null;
  if (/^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return null;
  return { traceId: m[2]!, spanId: m[3]!, traceFlags: parseInt(m[4]!, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** The traceparent of `span`, to carry its context to another thread or instance. */
export function traceparentOf(span: Span): string {
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & TraceFlags.SAMPLED}`;
}

/** The traceparent of the active span on this thread, if any (to carry it to another instance). */
export function activeTraceparent(): string | undefined {
  if (active === null) return undefined;
  const span = trace.getSpan(context.active());
  return span === undefined ? undefined : traceparentOf(span);
}

/** The trace id of the active span on this thread, if any (log lines). */
export function activeTraceId(): string | undefined {
  if (active === null) return undefined;
  return trace.getSpan(context.active())?.spanContext().traceId;
}

/** Gives `span` an error status saying why. */
export function markError(span: Span, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  span.setStatus({ code: 2 /* SpanStatusCode.ERROR */, message });
  if (err instanceof Error) span.setAttribute('error.type', err.name);
}

/** Ends `span` with an error status saying why. */
export function endWithError(span: Span, err: unknown): void {
  markError(span, err);
  span.end();
}
