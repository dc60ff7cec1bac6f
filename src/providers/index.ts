// Builds the configured adapters. A provider without a key is left out of the map; the caller answers
// 400 `<provider> is not configured: set <providerKeyVariable(provider)>`.
import type { Config } from '../base/config.ts';
import { createChatCompletionsAdapter } from './chat-completions.ts';
import { createProviderFetch } from './http-fetch.ts';
import { createProviderA } from './provider-a.ts';
import { createProviderB } from './provider-b.ts';
import { createResilience, resilientProviders, retryLoop, settingsFrom, type Resilience, type ResilienceConfig } from './resilience/index.ts';
import { Anthropic, OpenAI } from './sdks.ts';
import type { ProviderAdapter, ProviderName } from './types.ts';
import { activeContextKept, capturingContent } from '../telemetry/tracing.ts';

export { ProviderAbortError, isAbortError, toProviderError } from './errors.ts';
export { isResponsesModel } from './provider-a.ts';

const KEY_VARIABLES: Record<ProviderName, string> = {
  provider_a: 'PROVIDER_A_API_KEY',
  provider_b: 'PROVIDER_B_API_KEY',
  provider_c: 'PROVIDER_C_API_KEY',
  provider_d: 'AGENT_PROVIDER_API_KEY',
};

/** The environment variable that enables a provider. */
export function providerKeyVariable(name: ProviderName): string {
  return KEY_VARIABLES[name];
}

/** The part of Config the providers read; the optional keys may be left out (handy in tests). */
export type ProviderConfig = Pick<Config, 'PROVIDER_TIMEOUT_MS' | 'AGENT_PROVIDER_API_BASE_URL'> &
  Partial<
    Pick<
      Config,
      | 'PROVIDER_A_API_KEY'
      | 'PROVIDER_A_BASE_URL'
      | 'PROVIDER_B_API_KEY'
      | 'PROVIDER_B_BASE_URL'
      | 'PROVIDER_C_API_KEY'
      | 'PROVIDER_C_BASE_URL'
      | 'AGENT_PROVIDER_API_KEY'
      | 'AGENT_PROVIDER_MODEL'
      | 'PROVIDER_HTTP2'
      | 'PROVIDER_H2C_ORIGINS'
    >
  > &
  ResilienceConfig;

/** `resilience`: the retry budget and breakers to share (tests pass their own; by default the thread's new one). */
export function createProviders(config: ProviderConfig, resilience: Resilience = createResilience(settingsFrom(config))): Map<ProviderName, ProviderAdapter> {
  // No SDK retries: the one retry loop is the resilience layer's (resilience/resilient.ts), under a budget.
  const fetch = createProviderFetch({ timeoutMs: config.PROVIDER_TIMEOUT_MS, http2: config.PROVIDER_HTTP2 ?? true, h2cOrigins: config.PROVIDER_H2C_ORIGINS });
  const common = { maxRetries: 0, timeout: config.PROVIDER_TIMEOUT_MS, fetch };
  // The transport's timeout counts bytes; a stream's keep-alives are bytes, so the adapters also fail a
  // stream that goes as long without an event that carries data.
  const stream = { idleMs: config.PROVIDER_TIMEOUT_MS, retry: retryLoop(resilience) };
  // null (not undefined) keeps the SDKs from picking up OPENAI_* / ANTHROPIC_* values from the environment.
  const openai = (apiKey: string, baseURL: string | undefined) =>
    new OpenAI({ apiKey, baseURL: baseURL ?? null, organization: null, project: null, ...common });
  const map = new Map<ProviderName, ProviderAdapter>();

  if (config.PROVIDER_A_API_KEY) {
    map.set('provider_a', createProviderA(openai(config.PROVIDER_A_API_KEY, config.PROVIDER_A_BASE_URL), stream));
  }
  if (config.PROVIDER_B_API_KEY) {
    const client = new Anthropic({
      apiKey: config.PROVIDER_B_API_KEY,
      authToken: null,
      baseURL: config.PROVIDER_B_BASE_URL ?? null,
      ...common,
      // The SDK traces its calls itself, under the active span: only where the active context follows
      // awaits (inline runs on the main thread; an actor thread keeps none, and the provider call's own
      // span has the GenAI attributes). Prompts only as OTEL_GENAI_CAPTURE_CONTENT says, and the
      // service's trace context is not sent to the provider.
      openTelemetry: { propagation: false, traces: { enabled: activeContextKept(), contentMode: capturingContent() ? 'content' : 'metadata_only' } },
    });
    map.set('provider_b', createProviderB(client, stream));
  }
  if (config.PROVIDER_C_API_KEY) {
    const client = openai(config.PROVIDER_C_API_KEY, config.PROVIDER_C_BASE_URL);
    map.set('provider_c', createChatCompletionsAdapter({ name: 'provider_c', client, ...stream }));
  }
  if (config.AGENT_PROVIDER_API_KEY) {
    const client = openai(config.AGENT_PROVIDER_API_KEY, config.AGENT_PROVIDER_API_BASE_URL);
    map.set(
      'provider_d',
      createChatCompletionsAdapter({
        name: 'provider_d',
        client,
        textFromCustomFrames: true,
        extraModel: config.AGENT_PROVIDER_MODEL,
        ...stream,
      }),
    );
  }
  return resilientProviders(map, resilience);
}
