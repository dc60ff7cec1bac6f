// The resource every OTLP export of this process describes itself by: the service's name unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise, and the thread (each thread runs its own SDK,
// so its exports say which one made their spans, at no cost per span). Loaded only when an export is on.
import { isMainThread, threadId } from 'node:worker_threads';
import type { Resource } from '@opentelemetry/resources';

export const DEFAULT_SERVICE_NAME = 'conversation-search-service';

export async function serviceResource(): Promise<Resource> {
  const { defaultResource, resourceFromAttributes, detectResources, envDetector } = await import('@opentelemetry/resources');
  return defaultResource()
    .merge(resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME, 'thread.name': isMainThread ? 'main' : `actor ${threadId}` }))
    .merge(detectResources({ detectors: [envDetector] }));
}
