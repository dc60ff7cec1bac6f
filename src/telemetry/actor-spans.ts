// The spans of a run's work in its actor thread (or inline on the main one): each provider call
// (`chat {model}`, CLIENT, the GenAI attributes), each tool (`execute_tool {name}`) and the run's
// database statements, all children of the run's span, whose traceparent came with the run's request
// (run-spans.ts). The executor knows its run by handle only, so the run's trace is kept by handle from
// its first command on. With tracing off nothing is kept and every function returns at its first line.
import { SpanKind, SpanStatusCode, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { capturingContent, contextOf, endWithError, startSpan, tracingOn } from './tracing.ts';

interface RunTrace {
  parent: Context;
  provider: string;
  model: string;
  /** The prompt as the provider got it, kept only when content is captured (OTEL_GENAI_CAPTURE_CONTENT). */
  messages: unknown;
}

const runs = new WeakMap<object, RunTrace>();

/**
 * A span under `parent` (a run's context, or its request's traceparent); null without one. An actor
 * thread keeps no active context (tracing.ts), so every span made here names its parent, and a span
 * with none to name would start a trace of its own: none is made.
 */
function childSpan(parent: Context | string | undefined, name: string, kind: SpanKind, attributes: Attributes): Span | null {
  return parent === undefined ? null : startSpan(name, { kind, parent, attributes });
}

/** A run's first command: its request's trace context is its work's parent from now on. */
export function traceRun(run: object, req: { traceparent?: string; provider: string; model: string; messages?: unknown }): void {
  if (!tracingOn() || req.traceparent === undefined) return;
  runs.set(run, { parent: contextOf(req.traceparent), provider: req.provider, model: req.model, messages: capturingContent() ? req.messages : undefined });
}

/** The usage a provider round reports (src/providers/types.ts Usage, RoundEnd). */
interface RoundEndLike {
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number } | null;
  finishReason: string | null;
  toolCalls: readonly unknown[];
  raw: unknown;
}

/** A provider call's span (`chat {model}`, CLIENT) under `parent`, with the GenAI request attributes. */
const callSpan = (parent: Context | string | undefined, provider: string, model: string, round: number): Span | null =>
  childSpan(parent, `chat ${model}`, SpanKind.CLIENT, {
    'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, 'gen_ai.request.model': model, 'gen_ai.round': round,
  });

/** A provider call of `run` (one round); null when the run is not traced. */
export function providerSpan(run: object, round: number): Span | null {
  const t = runs.get(run);
  if (t === undefined) return null;
  const span = callSpan(t.parent, t.provider, t.model, round);
  if (span !== null && round === 1 && t.messages !== undefined) span.setAttribute('gen_ai.input.messages', JSON.stringify(t.messages));
  return span;
}

/**
 * A title run's one call to its model, a child of the run's span whose traceparent the run's request
 * carries; null when it carries none (tracing off). Ended by endProviderSpan as a chat run's calls are.
 */
export const titleCallSpan = (traceparent: string | undefined, provider: string, model: string): Span | null => callSpan(traceparent, provider, model, 1);

/** Ends a provider call's span with what the round reported; `text`: the answer, when content is captured. */
export function endProviderSpan(span: Span, end: RoundEndLike, text: string | null): void {
  const u = end.usage;
  if (u !== null) {
    span.setAttribute('gen_ai.usage.input_tokens', u.inputTokens);
    span.setAttribute('gen_ai.usage.output_tokens', u.outputTokens);
    if (u.cacheReadTokens) span.setAttribute('gen_ai.usage.cache_read.input_tokens', u.cacheReadTokens);
    if (u.cacheWriteTokens) span.setAttribute('gen_ai.usage.cache_creation.input_tokens', u.cacheWriteTokens);
  }
  if (end.finishReason !== null) span.setAttribute('gen_ai.response.finish_reasons', [end.finishReason]);
  const raw = end.raw as { model?: unknown; id?: unknown } | null;
  if (typeof raw?.model === 'string') span.setAttribute('gen_ai.response.model', raw.model);
  if (typeof raw?.id === 'string') span.setAttribute('gen_ai.response.id', raw.id);
  if (end.toolCalls.length > 0) span.setAttribute('gen_ai.response.tool_calls', end.toolCalls.length);
  if (text !== null) span.setAttribute('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: text }] }]));
  span.end();
}

/** Whether the answer's text should be kept for its span (tracing on, content captured, the run traced). */
export const keepsText = (run: object): boolean => capturingContent() && runs.has(run);

/** A tool of `run`; null when the run is not traced. */
export function toolSpan(run: object, name: string, args: unknown): Span | null {
  const span = childSpan(runs.get(run)?.parent, `execute_tool ${name}`, SpanKind.INTERNAL, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name });
  if (span !== null && capturingContent()) span.setAttribute('gen_ai.tool.call.arguments', JSON.stringify(args));
  return span;
}

/** Ends a tool's span: its error, or (content captured) its output. */
export function endToolSpan(span: Span, done: { output: string; error?: string }): void {
  if (done.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: done.error });
  if (capturingContent()) span.setAttribute('gen_ai.tool.call.result', done.output);
  span.end();
}

/** A database statement of `run` (`operation` names what it writes); null when the run is not traced. */
export const dbSpan = (run: object, operation: string, collection: string): Span | null =>
  childSpan(runs.get(run)?.parent, `${operation} ${collection}`, SpanKind.CLIENT, { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.collection.name': collection });

/** `p`, with `span` ended when it settles (an error status when it rejects). */
export function settled<T>(span: Span | null, p: Promise<T>): Promise<T> {
  if (span === null) return p;
  return p.then(
    (v) => {
      span.end();
      return v;
    },
    (err: unknown) => {
      endWithError(span, err);
      throw err;
    },
  );
}

/**
 * A search run's call to its engine (`engine_a search`, `engine_a answer`), a child of the run's span
 * whose traceparent the request carries; null when it carries none (tracing off).
 */
export const engineSpan = (traceparent: string | undefined, operation: 'search' | 'answer'): Span | null =>
  childSpan(traceparent, `engine_a ${operation}`, SpanKind.CLIENT, { 'gen_ai.operation.name': operation === 'search' ? 'retrieval' : 'chat', 'gen_ai.provider.name': 'engine_a' });

/** Ends an engine call's span with its outcome (`error`: why it failed). */
export function endEngineSpan(span: Span | null, error: string | null): void {
  if (span === null) return;
  if (error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
