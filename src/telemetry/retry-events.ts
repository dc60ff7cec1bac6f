// A provider call's retries as events of its span: the official SDKs retry inside one call (before
// any stream has started), each attempt a request through the service's fetch with the SDK's
// `x-stainless-retry-count` header. Tracing on, that fetch notes every attempt after the first on
// the active span: the provider call's (actors/chat-io.ts runs the call with it active), or the call
// span the SDK makes below it where the SDK traces itself (@anthropic-ai/sdk).
import { context, trace } from '@opentelemetry/api';
import { tracingOn } from './tracing.ts';

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const RETRY_HEADER = 'x-stainless-retry-count';

function retryCount(headers: HeadersInit | undefined): number {
  if (headers === undefined) return 0;
  const raw = headers instanceof Headers ? headers.get(RETRY_HEADER) : Array.isArray(headers) ? headers.find(([k]) => k.toLowerCase() === RETRY_HEADER)?.[1] : headers[RETRY_HEADER];
  const n = Number(raw ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/** `fetch` as it is with tracing off; with tracing on, one that records retries on the active span. */
export function withRetryEvents<F extends Fetch>(fetch: F): F {
  if (!tracingOn()) return fetch;
  return ((input, init) => {
    const attempt = retryCount(init?.headers);
    if (attempt > 0) trace.getSpan(context.active())?.addEvent('gen_ai.client.retry', { 'http.request.resend_count': attempt });
    return fetch(input, init);
  }) as F;
}
