// The chat run actor's work: store the new input, call the provider round after round, run the
// service's tools between rounds, store the answer with its LlmCall in one transaction, and end
// with exactly one `done` or `error`.
import { toProviderMessages } from '../src/chat/transcript.ts';
import { resolveToolNames } from '../src/chat/tools.ts';
import type { ProviderName, ToolResultInput, Usage } from '../src/providers/types.ts';
import type { RunDeps } from '../src/run-deps.ts';
import { normalizePrompt } from '../src/schemas.ts';
import type { RunContext } from './runtime/actor.ts';
import { runToolCalls } from './chat-tools.ts';
import { failureOf, RunError } from './run-failure.ts';
import { failCall, prepareChat, storeAnswer, type ChatStorageRequest } from './run-storage.ts';
import { TextGate } from './text-gate.ts';

export interface ChatRunRequest extends ChatStorageRequest {
  /** `stream` uses the provider's streaming call; `whole` its whole-response call (for `raw`). */
  mode: 'stream' | 'whole';
  /** The chat's stored settings, as the route read them (existing chats only). */
  stored?: { additionalSystemPrompt: string | null; enabledTools: string[] };
  additionalSystemPrompt?: string | null;
  enabledTools?: string[];
  temperature?: number;
  maxTokens?: number;
}

export interface ChatRunValue {
  chatId: string | null;
  callId: string | null;
  provider: ProviderName;
  model: string;
  text: string;
  usage: Usage | null;
  raw: unknown;
  /** A user stopped the run: `text` is the partial answer. */
  stopped: boolean;
}

export const toolLimitMessage = (rounds: number) =>
  `Stopped after ${rounds} tool rounds: the tool-call limit for one completion was reached. Ask again to continue.`;

function addUsage(total: Usage | null, u: Usage | null): Usage | null {
  if (!u) return total;
  if (!total) return { ...u };
  total.inputTokens += u.inputTokens;
  total.outputTokens += u.outputTokens;
  total.totalTokens += u.totalTokens;
  return total;
}

/**
 * Stores the answer and ends the run with `done`. The answer is exactly what was streamed: the
 * deltas, concatenated. A stopped run stores that partial text (nothing when empty) with
 * `metadata.stopped`, its LlmCall ends `stopped`, and `done` says `stopped: true`.
 */
async function finishAnswer(
  ctx: RunContext<ChatRunValue>,
  req: ChatRunRequest,
  deps: RunDeps,
  o: { chatId: string | null; usage: Usage | null; raw: unknown; started: number; stopped: boolean },
): Promise<void> {
  const { callId } = req;
  const text = ctx.deltaText;
  const { usage } = o;
  if (callId) await storeAnswer(deps, { callId, chatId: o.chatId, text, usage, started: o.started, stopped: o.stopped });
  const done: Record<string, unknown> = { type: 'done', text };
  if (usage) done.usage = usage;
  if (o.stopped) done.stopped = true;
  const value: ChatRunValue = { chatId: o.chatId, callId, provider: req.provider, model: req.model, text, usage, raw: o.raw, stopped: o.stopped };
  ctx.finish('done', done, { ok: true, value });
}

/**
 * A run cut by a shutdown or a fence keeps what its user saw: the partial text, stored with
 * `metadata.interrupted` and its call failed with the cut's message. False: nothing to keep, or
 * the storage failed (the caller fails the call alone).
 */
async function keptInterrupted(
  ctx: RunContext<ChatRunValue>,
  deps: RunDeps,
  o: { callId: string; chatId: string | null; usage: Usage | null; started: number; error: string; prepared: Promise<void> },
): Promise<boolean> {
  if ((ctx.cancelled !== 'shutdown' && ctx.cancelled !== 'fenced') || ctx.deltaText === '') return false;
  try {
    await o.prepared;
    await storeAnswer(deps, { callId: o.callId, chatId: o.chatId, text: ctx.deltaText, usage: o.usage, started: o.started, stopped: false, interrupted: o.error });
    return true;
  } catch (err) {
    ctx.log('warn', `the interrupted answer of LlmCall ${o.callId} could not be stored`, err);
    return false;
  }
}

export async function chatRun(ctx: RunContext<ChatRunValue>, req: ChatRunRequest, deps: RunDeps): Promise<void> {
  const started = performance.now();
  const { pool, config } = deps;
  const { callId } = req;
  const chatId = req.storeChat ? req.chatId : null;
  let usage: Usage | null = null;
  // Storage failing aborts the provider call too; the run's own signal covers cancellation.
  const storageFailed = new AbortController();
  const signal = AbortSignal.any([ctx.signal, storageFailed.signal]);
  const prepared = prepareChat(req, deps).catch((err: unknown) => {
    storageFailed.abort(err);
    throw err;
  });
  prepared.catch(() => {}); // observed below; never an unhandled rejection
  ctx.emit('meta', { type: 'meta', chatId, callId, provider: req.provider, model: req.model });
  try {
    const adapter = deps.providers.get(req.provider);
    if (!adapter) throw new RunError(`${req.provider} is not configured`, 'invalid');

    const prompt = req.additionalSystemPrompt !== undefined ? normalizePrompt(req.additionalSystemPrompt) : (req.stored?.additionalSystemPrompt ?? null);
    const toolNames = resolveToolNames(req.provider, req.enabledTools ?? req.stored?.enabledTools, deps.tools);
    const tools = deps.tools.filter((t) => toolNames.includes(t.name));
    const session = adapter.startSession({
      model: req.model,
      messages: toProviderMessages(prompt, req.messages),
      tools: tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
      temperature: req.temperature,
      maxTokens: req.maxTokens,
      stream: req.mode === 'stream',
      signal,
    });
    let raw: unknown = null;
    let results: ToolResultInput[] | null = null;
    for (let round = 1; ; round++) {
      const gate = new TextGate(ctx, tools.length > 0);
      // Text goes straight to the gate (no await per delta); the loop sees only the round's end.
      const end = await session.round(results, gate.push);
      usage = addUsage(usage, end.usage);
      raw = end.raw;
      const calls = end.toolCalls;
      if (calls.length === 0) {
        gate.release();
        break;
      }
      // Text of a round that ends in tool calls is commentary: dropped unless already shown.
      gate.discard();
      // CHAT_MAX_TOOL_ROUNDS cycles have run and the model still asks for tools: stop here.
      if (round > config.CHAT_MAX_TOOL_ROUNDS) {
        ctx.emitDelta((ctx.deltaText ? '\n\n' : '') + toolLimitMessage(config.CHAT_MAX_TOOL_ROUNDS));
        break;
      }
      // Tool messages follow the stored input.
      await prepared;
      results = await runToolCalls(ctx, calls, { tools, pool, chatId, config });
    }
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('run cancelled');
    await prepared;
    await finishAnswer(ctx, req, deps, { chatId, usage, raw, started, stopped: false });
  } catch (caught) {
    // A user's stop ends the run with what it has, not with an error (unless storage failed first).
    if (ctx.stopRequested && !storageFailed.signal.aborted && !ctx.finished) {
      try {
        await prepared;
        await finishAnswer(ctx, req, deps, { chatId, usage, raw: null, started, stopped: true });
        return;
      } catch (err) {
        caught = err;
      }
    }
    // A storage failure is the cause even when it surfaces as the provider call's abort.
    const err = storageFailed.signal.aborted ? storageFailed.signal.reason : caught;
    const failure = failureOf(err, ctx.signal);
    const { message } = failure;
    // The LlmCall's insert must settle before the call can be marked failed. Even a failed insert
    // may have landed (its reply lost with the connection), so the failure is recorded anyway (a
    // no-op for an unknown call); during a database outage it is retried once the database is back.
    await prepared.catch(() => {});
    if (callId && !(await keptInterrupted(ctx, deps, { callId, chatId, usage, started, error: message, prepared }))) await failCall(deps, { callId, error: message, started });
    ctx.finish('error', { type: 'error', message }, failure);
  }
}
