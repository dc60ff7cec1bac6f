// Shared setup for the adapter tests: one simulator, the adapters pointed at it, and a collector
// that drains a round into its text and its end.
import { OpenAI } from '../../src/providers/sdks.ts';
import { createChatCompletionsAdapter } from '../../src/providers/chat-completions.ts';
import { createProviderFetch } from '../../src/providers/http-fetch.ts';
import { startSimulator } from '../../src/sim/server.ts';
import { createProviders } from '../../src/providers/index.ts';
import type { CompletionRequest, ProviderAdapter, ProviderName, ProviderSession, RoundEnd, ToolResultInput } from '../../src/providers/types.ts';
import { gateName, waitFor } from '../helpers/wait.ts';

export type Sim = Awaited<ReturnType<typeof startSimulator>>;
export type { RoundEnd };

/**
 * The resilience tests' providers b, c and d on `sim`, with `extra` over them: a retry costs a
 * millisecond, and their scripted failures open no breaker unless `extra` says otherwise.
 */
export function resilienceConfig<E extends object>(sim: Sim, extra: E = {} as E) {
  return {
    PROVIDER_TIMEOUT_MS: 10_000,
    AGENT_PROVIDER_API_BASE_URL: sim.urls.provider_d,
    PROVIDER_B_API_KEY: 'k',
    PROVIDER_B_BASE_URL: sim.urls.provider_b,
    PROVIDER_C_API_KEY: 'k',
    PROVIDER_C_BASE_URL: sim.urls.provider_c,
    PROVIDER_RETRY_BASE_MS: 1,
    PROVIDER_BREAKER_FAILURES: 0,
    ...extra,
  };
}

export async function setup(extra: { AGENT_PROVIDER_MODEL?: string } = {}): Promise<{
  sim: Sim;
  providers: Map<ProviderName, ProviderAdapter>;
  get(name: ProviderName): ProviderAdapter;
}> {
  const sim = await startSimulator();
  const providers = createProviders({
    PROVIDER_TIMEOUT_MS: 10_000,
    // Adapter tests: a retry costs a millisecond, and their scripted failures open no breaker.
    PROVIDER_RETRY_BASE_MS: 1,
    PROVIDER_BREAKER_FAILURES: 0,
    PROVIDER_A_API_KEY: 'test-a',
    PROVIDER_A_BASE_URL: sim.urls.provider_a,
    PROVIDER_B_API_KEY: 'test-b',
    PROVIDER_B_BASE_URL: sim.urls.provider_b,
    PROVIDER_C_API_KEY: 'test-c',
    PROVIDER_C_BASE_URL: sim.urls.provider_c,
    AGENT_PROVIDER_API_KEY: 'test-d',
    AGENT_PROVIDER_API_BASE_URL: sim.urls.provider_d,
    ...extra,
  });
  return { sim, providers, get: (name) => providers.get(name)! };
}

/** A request with one user message carrying the SIM directive. */
export function request(sim: Record<string, unknown>, over: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model: 'sim-model',
    messages: [{ role: 'user', content: `Hello\nSIM ${JSON.stringify(sim)}` }],
    tools: [],
    stream: true,
    signal: new AbortController().signal,
    ...over,
  };
}

export interface Collected {
  text: string;
  deltas: number;
  end: RoundEnd;
}

export async function collect(session: ProviderSession, results: ToolResultInput[] | null = null): Promise<Collected> {
  let text = '';
  let deltas = 0;
  let ended = false;
  const end = await session.round(results, (t) => {
    if (ended) throw new Error('text after the round ended');
    text += t;
    deltas++;
  });
  ended = true;
  return { text, deltas, end };
}

/** The error a round rejects with (fails the test when it succeeds). */
export async function failure(session: ProviderSession, onText?: (n: number) => void): Promise<Error> {
  let n = 0;
  try {
    await session.round(null, () => onText?.(++n));
  } catch (err) {
    return err as Error;
  }
  throw new Error('round succeeded but a failure was expected');
}

/**
 * Starts a stream the simulator holds after `abortAt` deltas (it could never end by itself), aborts
 * its signal at the `abortAt`-th delta and returns the error, once the simulator saw its connection
 * closed: the abort, not the stream's end or a timeout, is what stopped it.
 */
export async function abortMidStream(sim: Sim, adapter: ProviderAdapter, abortAt: number): Promise<Error> {
  const ac = new AbortController();
  const gate = gateName('abort');
  const seen = sim.requests.length;
  const err = failure(adapter.startSession(request({ deltas: 200, gate, gateAfter: abortAt }, { signal: ac.signal })), (n) => {
    if (n === abortAt) ac.abort();
  });
  await waitFor(() => sim.requests.slice(seen).some((r) => r.closedEarly), 10_000, 'the provider connection to be closed');
  return err;
}

export const TOOLS = [
  {
    name: 'web_search',
    description: 'Search the web',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
];

export const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/**
 * The provider_c adapter on the official SDK over the service's provider fetch, toward an https
 * front that presents `ca`. No SDK retries: what reaches the test is what the transport did.
 */
export function httpsAdapter(base: string, ca: string, o: { timeoutMs?: number; http2?: boolean; fetch?: typeof globalThis.fetch } = {}): ProviderAdapter {
  // A given fetch shares its connections with the caller's other requests (each fetch has its own pool).
  const fetch = o.fetch ?? createProviderFetch({ timeoutMs: o.timeoutMs ?? 10_000, ca, http2: o.http2 ?? true });
  const client = new OpenAI({ apiKey: 'k', baseURL: base, maxRetries: 0, timeout: 30_000, fetch });
  return createChatCompletionsAdapter({ name: 'provider_c', client });
}

/** Writes `mb` megabytes to a server response as its client reads them, then ends: a refused body stops mid-way. */
export function writeMegabytes(res: { write(b: Buffer): boolean; once(event: 'drain', fn: () => void): unknown; end(): unknown }, mb: number): void {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  let left = mb;
  const more = (): void => {
    while (left > 0) {
      left--;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    res.end();
  };
  more();
}
