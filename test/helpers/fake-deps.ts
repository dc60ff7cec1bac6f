// Deps for a run kind's machine without I/O: a provider whose sessions do nothing and tools that
// are only named. Apart from fake-io.ts (which registers a test hook), so the bench can use them.
import type { Config } from '../../src/base/config.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { WriteRetryQueue } from '../../src/db/write-retry.ts';
import type { ProviderAdapter, ProviderName, ProviderSession, ToolCallRequest } from '../../src/providers/types.ts';
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
