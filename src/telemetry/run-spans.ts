// One span per run (`chat {model}`, `search`, `title`): started on the main thread when the registry
// starts the run, as a child of the request that started it, ended when the run's result settles, so
// it outlives the request (a stream's client may go; the run goes on). Its traceparent travels in the
// run's request into the actor thread, whose provider, tool and database spans are its children
// (actor-spans.ts); a later request that attaches to the run, or joins it, links to it.
import { SpanKind, SpanStatusCode, trace, context, type Span, type SpanContext } from '@opentelemetry/api';
import { parseTraceparent, startSpan, traceparentOf, tracingOn, withSpan } from './tracing.ts';

/** What a run request may say about itself (every kind's request is a plain object). */
export interface TracedRequest {
  provider?: string;
  model?: string;
  /** The W3C traceparent of the run's span: set here, read in the actor thread. */
  traceparent?: string;
  /** A takeover's: the lost run's traceparent, linked from this run's span. */
  continues?: string;
}

/** A run's end as the runtime reports it (actors/runtime/protocol.ts RunResult). */
interface RunEnd {
  ok: boolean;
  outcome?: string;
  message?: string;
}

/** The spans of the runs going on this thread, by run id (log lines) and by run key (attach links). */
const byRun = new Map<string, Span>();
const byKey = new Map<string, SpanContext>();

/** The run's span, its traceparent put in `request`; null when tracing is off. */
export function startRunSpan(kind: string, request: TracedRequest): Span | null {
  if (!tracingOn()) return null;
  const chat = kind === 'chat';
  const lost = parseTraceparent(request.continues);
  const span = startSpan(chat ? `chat ${request.model}` : kind, {
    kind: SpanKind.INTERNAL,
    ...(lost !== null && { links: [{ context: lost, attributes: { 'link.kind': 'takeover' } }] }),
    attributes: {
      'gen_ai.operation.name': chat || kind === 'title' ? 'chat' : kind,
      ...(request.provider !== undefined && { 'gen_ai.provider.name': request.provider }),
      ...(request.model !== undefined && { 'gen_ai.request.model': request.model }),
      'run.kind': kind,
    },
  });
  if (span !== null) request.traceparent = traceparentOf(span);
  return span;
}

/** The run started: its span ends with its result. */
export function runSpanStarted(span: Span, run: { runId: string; kind: string; key: string | null }, result: Promise<RunEnd>): void {
  span.setAttribute('run.id', run.runId);
  byRun.set(run.runId, span);
  const member = run.key === null ? null : `${run.kind}:${run.key}`;
  if (member !== null) byKey.set(member, span.spanContext());
  const end = (r: RunEnd): void => {
    byRun.delete(run.runId);
    if (member !== null && byKey.get(member) === span.spanContext()) byKey.delete(member);
    if (!r.ok) {
      span.setAttribute('run.outcome', r.outcome ?? 'internal');
      if (r.outcome !== 'stopped') span.setStatus({ code: SpanStatusCode.ERROR, message: r.message });
    }
    span.end();
  };
  result.then(end, (err: unknown) => end({ ok: false, outcome: 'internal', message: String(err) }));
}

/**
 * The active span (a request attaching to the run of `key`, or joining it) links to the run's span,
 * so a trace viewer leads from an attach to the run it followed.
 */
export function linkToRun(kind: string, key: string): void {
  const run = byKey.get(`${kind}:${key}`);
  if (run === undefined) return;
  trace.getSpan(context.active())?.addLink({ context: run, attributes: { 'link.kind': 'attach' } });
}

/**
 * `fn` run with the span of run `runId` active, while this thread still knows it (up to the run's end:
 * the supervisor's onEnd comes before its result's callbacks), so that what `fn` starts, the release of
 * its lease, is the run's child; `fn` alone otherwise.
 */
export function withRunSpan<T>(runId: string, fn: () => T): T {
  const span = byRun.get(runId);
  return span === undefined ? fn() : withSpan(span, fn);
}

/** Fields for a log line about `runId`: its trace id while the run goes on here. */
export function runLogFields(runId: string | undefined): { trace_id?: string } {
  const span = runId === undefined ? undefined : byRun.get(runId);
  return span ? { trace_id: span.spanContext().traceId } : {};
}
