// The HTTP request's span (SERVER): `{method} {route}` as the HTTP semantic conventions name it,
// continuing the caller's W3C traceparent, its trace id answered in `x-trace-id`.
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { startSpan } from './tracing.ts';

export const TRACE_ID_HEADER = 'x-trace-id';

/** The request's span, or null when tracing is off. */
export function startRequestSpan(method: string, route: string, path: string, traceparent: string): Span | null {
  // An absent or malformed traceparent starts a new trace (contextOf gives the root context).
  return startSpan(`${method} ${route}`, {
    kind: SpanKind.SERVER,
    parent: traceparent,
    attributes: { 'http.request.method': method, 'http.route': route, 'url.path': path },
  });
}

/** Ends the request's span with its response status; 0: the client went before the answer. */
export function endRequestSpan(span: Span, status: number): void {
  if (status === 0) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'client closed the connection' });
  } else {
    span.setAttribute('http.response.status_code', status);
    // A server span is an error for a 5xx only (a 4xx is the client's).
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** The request's trace id, as the `x-trace-id` response header carries it. */
export const traceIdOf = (span: Span): string => span.spanContext().traceId;
