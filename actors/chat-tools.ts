// One round of service tool calls, as steps of the chat run's receive: the `initiated` event and the
// tool started, then (as its outcome arrives) the tool message stored, then the terminal
// `completed`/`failed` event (in that order, per the spec). A tool that fails is a failed tool call
// whose error goes back to the model; only a storage fault fails the run.
import type { ToolCallRequest, ToolResultInput } from '../src/providers/types.ts';
import type { NewMessage } from '../src/store/messages.ts';
import { ToolError, type ServiceTool } from '../src/tools/types.ts';

const PREVIEW_CHARS = 300;

/** One call of the current round, from its `initiated` event to its result (both set by closeSlot). */
export interface ToolSlot {
  readonly call: ToolCallRequest;
  readonly toolCallId: string;
  /** Milliseconds since the epoch, on the run's clock (a number: the slot is part of the run's plain state). */
  readonly startedAt: number;
  readonly base: Record<string, unknown>;
  readonly terminal: Record<string, unknown> | null;
  readonly result: ToolResultInput | null;
}

/** The command that runs one tool (its arguments already parsed, or why they cannot be). */
export interface ToolCommand {
  c: 'tool';
  round: number;
  index: number;
  tool: ServiceTool | null;
  name: string;
  args: Record<string, unknown>;
  invalid: string | null;
  /** The run's call signal: a stop, a cancel or the run's own failure ends the tool too. */
  signal: AbortSignal;
}

/** A tool's outcome, as a message of the chat run. */
export type ToolDone = { t: 'tool_done'; round: number; index: number; output: string; error?: string; preview?: string };

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

/** Where a call is: its round and place in it, its id and start time (the runtime's). */
export interface SlotPlace {
  round: number;
  index: number;
  toolCallId: string;
  now: number;
}

/** A call's slot and the command that runs it; the caller emits `initiated` and performs the command. */
export function openSlot(call: ToolCallRequest, tools: readonly ServiceTool[], place: SlotPlace, signal: AbortSignal): { slot: ToolSlot; command: ToolCommand } {
  const { round, index, toolCallId } = place;
  // Whole milliseconds, as a Date keeps them: the duration is counted between the two ISO times shown.
  const startedAt = Math.trunc(place.now);
  const tool = tools.find((t) => t.name === call.name) ?? null;
  const parsed = parseArgs(call.arguments);
  const args = parsed instanceof Error ? {} : parsed;
  let summary = `${call.name}`;
  try {
    if (tool) summary = tool.summarize(args);
  } catch {
    // A summary is cosmetic; keep the tool name.
  }
  const base = { toolCallId, name: call.name, summary, args, startedAt: new Date(startedAt).toISOString() };
  const slot: ToolSlot = { call, toolCallId, startedAt, base, terminal: null, result: null };
  const invalid = parsed instanceof Error ? parsed.message : null;
  return { slot, command: { c: 'tool', round, index, tool, name: call.name, args, invalid, signal } };
}

/** Runs one tool: every failure is the call's outcome, never a rejection. */
export async function runTool(cmd: ToolCommand, ctx: Parameters<ServiceTool['run']>[1]): Promise<ToolDone> {
  const { round, index } = cmd;
  try {
    if (cmd.invalid !== null) throw new Error(cmd.invalid);
    if (!cmd.tool) throw new Error(`unknown tool ${cmd.name}`);
    const outcome = await cmd.tool.run(cmd.args, ctx);
    return { t: 'tool_done', round, index, output: outcome.output, preview: outcome.preview ?? preview(outcome.output) };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    const partial = err instanceof ToolError && err.output ? `\n\n${err.output}` : '';
    return { t: 'tool_done', round, index, output: `Error: ${error}${partial}`, error };
  }
}

/** The slot closed with the call's terminal event and result; the tool message to store when the chat is stored. */
export function closeSlot(slot: ToolSlot, done: ToolDone, now: number): { slot: ToolSlot; message: NewMessage } {
  const completedAt = new Date(now);
  const terminal: Record<string, unknown> = {
    ...slot.base,
    status: done.error === undefined ? 'completed' : 'failed',
    completedAt: completedAt.toISOString(),
    durationMs: completedAt.getTime() - slot.startedAt,
  };
  if (done.preview !== undefined) terminal.resultPreview = done.preview;
  if (done.error !== undefined) terminal.error = done.error;
  const { call } = slot;
  const result = { callId: call.callId, name: call.name, output: done.output };
  const message: NewMessage = { role: 'tool', content: done.output, name: call.name, metadata: { kind: 'tool_call', providerCallId: call.callId, ...terminal } };
  return { slot: { ...slot, terminal, result }, message };
}
