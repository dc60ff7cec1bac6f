// A provider call's retries as events of its span: the one retry loop (src/providers/resilience/
// resilient.ts) notes each retry of the call whose request carries `signal`; the caller (actors/
// chat-io.ts, actors/title-run.ts) names the call's span for that signal while the call goes on.
// Explicit, not the active context: an actor thread keeps none (tracing.ts). With tracing off no span
// is named and nothing is recorded.
import type { Span } from '@opentelemetry/api';

/** The span of the provider call going on under each call's signal (one call at a time per signal). */
const calls = new WeakMap<AbortSignal, Span>();

/** `call()` with its retries noted on `span` (nothing noted when it is null). */
export function retriesOn<T>(signal: AbortSignal, span: Span | null, call: () => Promise<T>): Promise<T> {
  if (span === null) return call();
  calls.set(signal, span);
  const forget = (): void => {
    if (calls.get(signal) === span) calls.delete(signal);
  };
  const p = call();
  p.then(forget, forget);
  return p;
}

/** The `attempt`th resend (1 for the first retry) of the call under `signal`. */
export function noteRetry(signal: AbortSignal, attempt: number): void {
  calls.get(signal)?.addEvent('gen_ai.client.retry', { 'http.request.resend_count': attempt });
}
