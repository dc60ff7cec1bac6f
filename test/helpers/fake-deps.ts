// Deps for a run kind's machine without I/O: a provider whose sessions do nothing and tools that
// are only named. Apart from fake-io.ts (which registers a test hook), so the bench can use them.
import type { ChatRunRequest } from '../../actors/chat-run.ts';
import type { Config } from '../../src/base/config.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { WriteRetryQueue } from '../../src/db/write-retry.ts';
import type { ProviderAdapter, ProviderName, ProviderSession, RoundEnd, ToolCallRequest } from '../../src/providers/types.ts';
import type { RunDeps } from '../../src/domain/run-deps.ts';
import type { ServiceTool } from '../../src/tools/types.ts';

/** A tool that the machine only names; running it is a recorded command. */
export function fakeTool(name: string): ServiceTool {
  return {
    name,
    description: name,
    parameters: { type: 'object' },
    summarize: (args) => `${name} ${JSON.stringify(args)}`,
    run: () => Promise.reject(new Error('a machine test never runs tools')),
  };
}

/** Deps with a provider whose sessions do nothing (every round is a recorded command), or are `session`. */
export function fakeDeps(opts: { tools?: ServiceTool[]; maxToolRounds?: number; provider?: ProviderName; session?: ProviderSession } = {}): RunDeps {
  const session: ProviderSession = opts.session ?? { round: () => Promise.reject(new Error('a machine test never calls a provider')) };
  const adapter = { name: opts.provider ?? 'provider_a', startSession: () => session, listModels: async () => [] } as ProviderAdapter;
  const config = { CHAT_MAX_TOOL_ROUNDS: opts.maxToolRounds ?? 3, TOOL_TEXT_HOLD_MS: 250, TOOL_TEXT_HOLD_CHARS: 512, TITLE_MODEL: 'title-model', instanceId: 'test', modelPrices: {} } as Partial<Config> as Config;
  return { config, pool: null as unknown as RunDeps['pool'], providers: new Map([[adapter.name, adapter]]), tools: opts.tools ?? [], cpu: new CpuPool(), writes: new WriteRetryQueue() };
}

export const call = (name: string, args: unknown, callId = `call-${name}`): ToolCallRequest => ({ callId, name, arguments: JSON.stringify(args) });

/** A chat run's request for a stored chat (chat-1, its LlmCall llm-1), streamed by provider_a. */
export const chatRequest: ChatRunRequest = {
  owner: ADMIN_USER_ID,
  chatId: 'chat-1',
  createChat: false,
  storeChat: true,
  callId: 'llm-1',
  provider: 'provider_a',
  model: 'model-a',
  messages: [{ role: 'user', content: 'hi' }],
  mode: 'stream',
};

export const roundUsage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };

/** A round's end: with `toolCalls`, one that asks for them. */
export const roundEnd = (toolCalls: ToolCallRequest[] = []): RoundEnd => ({ toolCalls, usage: roundUsage, finishReason: toolCalls.length ? 'tool_calls' : 'stop', raw: { id: 'resp' } });

/** The error a provider call's fetch rejects with when its signal aborts. */
export const abortError = () => Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
