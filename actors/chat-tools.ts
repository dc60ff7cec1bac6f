// One round of service tool calls: `initiated` event, execution, the tool message stored, then the
// terminal `completed`/`failed` event (in that order, per the spec). A tool that fails is a failed
// tool call whose error goes back to the model; only a storage fault fails the run.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../src/config.ts';
import type { ToolCallRequest, ToolResultInput } from '../src/providers/types.ts';
import { appendMessages } from '../src/store/messages.ts';
import type { ServiceTool } from '../src/tools/types.ts';
import type { RunContext } from './runtime/actor.ts';

const PREVIEW_CHARS = 300;

export interface ToolRoundDeps {
  tools: ServiceTool[];
  pool: pg.Pool;
  /** The chat to store tool messages in; null when nothing is stored. */
  chatId: string | null;
  /** The run's fencing token: a tool message is refused once a later run started on the chat. */
  runToken?: number | null;
  config: Config;
}

function parseArgs(raw: string): Record<string, unknown> | Error {
  if (raw.trim() === '') return {};
  try {
    const v = JSON.parse(raw);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : new Error('tool arguments must be a JSON object');
  } catch (err) {
    return new Error(`tool arguments are not valid JSON: ${(err as Error).message}`);
  }
}

function preview(text: string): string {
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}

async function runOne(ctx: RunContext, call: ToolCallRequest, deps: ToolRoundDeps): Promise<ToolResultInput> {
  const toolCallId = randomUUID();
  const startedAt = new Date();
  const tool = deps.tools.find((t) => t.name === call.name);
  const parsed = parseArgs(call.arguments);
  const args = parsed instanceof Error ? {} : parsed;
  let summary = `${call.name}`;
  try {
    if (tool) summary = tool.summarize(args);
  } catch {
    // A summary is cosmetic; keep the tool name.
  }
  const base = { toolCallId, name: call.name, summary, args, startedAt: startedAt.toISOString() };
  ctx.emitKeyed(toolCallId, 'tool_call', { ...base, status: 'initiated' });

  let output: string;
  let error: string | undefined;
  let resultPreview: string | undefined;
  try {
    if (parsed instanceof Error) throw parsed;
    if (!tool) throw new Error(`unknown tool ${call.name}`);
    const outcome = await tool.run(args, { config: deps.config, signal: ctx.signal });
    output = outcome.output;
    resultPreview = outcome.preview ?? preview(outcome.output);
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    output = `Error: ${error}`;
  }
  const completedAt = new Date();
  const terminal: Record<string, unknown> = {
    ...base,
    status: error === undefined ? 'completed' : 'failed',
    completedAt: completedAt.toISOString(),
    durationMs: completedAt.getTime() - startedAt.getTime(),
  };
  if (resultPreview !== undefined) terminal.resultPreview = resultPreview;
  if (error !== undefined) terminal.error = error;

  if (deps.chatId) {
    await appendMessages(deps.pool, deps.chatId, [
      { role: 'tool', content: output, name: call.name, metadata: { kind: 'tool_call', providerCallId: call.callId, ...terminal } },
    ], deps.runToken ?? null);
  }
  ctx.emitKeyed(toolCallId, 'tool_call', terminal);
  return { callId: call.callId, name: call.name, output };
}

/** Runs a round's calls side by side; results keep the calls' order. */
export function runToolCalls(ctx: RunContext, calls: ToolCallRequest[], deps: ToolRoundDeps): Promise<ToolResultInput[]> {
  return Promise.all(calls.map((c) => runOne(ctx, c, deps)));
}
