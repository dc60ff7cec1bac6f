// A provider call's retries as events of its span: the one retry loop (src/providers/resilience/
// resilient.ts) notes each retry on the active span, the provider call's (actors/chat-io.ts runs the
// call with it active). With tracing off there is no active span and nothing is recorded.
import { context, trace } from '@opentelemetry/api';

/** The `attempt`th resend (1 for the first retry) of the call whose span is active. */
export function noteRetry(attempt: number): void {
  trace.getSpan(context.active())?.addEvent('gen_ai.client.retry', { 'http.request.resend_count': attempt });
}
