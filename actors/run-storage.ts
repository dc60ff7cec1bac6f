// A model run's storage, in one place for the chat run and title generation: the input and the
// running LlmCall before the answer (one statement), then the answer or the failure. The search run
// stores through saveSearchRun alone: it has no LlmCall.
//
// Fencing (sql/007_fencing.sql): a chat run's first statement takes the chat's next fencing token
// (prepareChat returns it); the run's tool messages and its answer carry it and are refused with
// FencedWriteError once a later run has started on the chat. Failing the run's own LlmCall is never
// refused: that row is the run's alone.
import { toStoredMessage } from '../src/chat/transcript.ts';
import { CHAT_NOT_FOUND } from '../src/base/messages.ts';
import type { FallbackCalls, FallbackNote, ProviderName, Usage } from '../src/providers/types.ts';
import type { RunDeps } from '../src/domain/run-deps.ts';
import type { RunMessage } from '../src/domain/schemas.ts';
import { costOf } from '../src/cost/prices.ts';
import { createChat, startChatRun } from '../src/store/chats.ts';
import { splitFallbackCall } from '../src/store/fallback-calls.ts';
import { FIRST_RUN_TOKEN } from '../src/store/fencing.ts';
import { finishLlmCall, finishLlmCallWithMessage, recordLlmCallFailure, startLlmCall } from '../src/store/llm-calls.ts';
import { RunError } from './run-failure.ts';
import { clockNow } from './runtime/actor.ts';

/** What a chat run stores before its answer. */
export interface ChatStorageRequest {
  chatId: string | null;
  /** Create the chat `chatId` (a persisted stream without a chatId). */
  createChat: boolean;
  /** Store input, tool and assistant messages in the chat. */
  storeChat: boolean;
  /** The LlmCall's id, chosen up front; null stores no LlmCall. */
  callId: string | null;
  provider: ProviderName;
  model: string;
  messages: RunMessage[];
  /** The user the run works for: the chat and the LlmCall are theirs. */
  owner: string;
  /**
   * A takeover (src/service/takeover.ts): the run continues a lost run's checkpointed `text`. Its call is
   * already running under `runToken` (store/takeover.ts), so its start stores nothing. `deltas`: the
   * lengths of the deltas the lost run streamed it in, when its checkpoint kept them.
   */
  resume?: { text: string; runToken: number; deltas?: readonly number[] | null };
}

// `started` is the run's clock (Timers.now); the write's time is read on the same clock.
const sinceMs = (started: number) => Math.round(clockNow() - started);

/** What the chat run's storage before its answer hands back. */
export interface PreparedChat {
  /** The run's fencing token for its later writes; null when it stores nothing in a chat. */
  runToken: number | null;
}

/** The supplied messages a chat may store: assistant messages are never taken from the client. */
const inputOf = (req: ChatStorageRequest) => req.messages.filter((m) => m.role !== 'assistant').map(toStoredMessage);

/**
 * The chat run's storage before its answer, in one statement: the chat (created with its input, or
 * its new input appended and its provider use recorded) with the running LlmCall, and the run's
 * fencing token taken.
 */
export async function prepareChat(req: ChatStorageRequest, deps: RunDeps): Promise<PreparedChat> {
  if (req.resume) return { runToken: req.resume.runToken };
  const { pool } = deps;
  const call = req.callId ? { id: req.callId, instanceId: deps.config.instanceId } : null;
  if (!req.storeChat || !req.chatId) {
    if (call) await startLlmCall(pool, { id: call.id, chatId: null, provider: req.provider, model: req.model, instanceId: call.instanceId, owner: req.owner });
    return { runToken: null };
  }
  if (req.createChat) {
    await createChat(pool, {
      id: req.chatId,
      provider: req.provider,
      model: req.model,
      enabledTools: deps.tools.map((t) => t.name),
      messages: inputOf(req),
      ...(call ? { call } : {}),
      owner: req.owner,
    });
    return { runToken: call ? FIRST_RUN_TOKEN : null };
  }
  // The statement itself picks which of the supplied messages are new to the transcript.
  const runToken = await startChatRun(pool, { chatId: req.chatId, provider: req.provider, model: req.model, messages: inputOf(req), supplied: true, call, owner: req.owner });
  if (runToken === null) throw new RunError(CHAT_NOT_FOUND, 'not_found');
  return { runToken };
}

/** What a chat run streamed, for the chat's answer, and the LlmCall that answer ends. */
interface StreamedAnswer {
  callId: string;
  chatId: string | null;
  /** The model called: its price (MODEL_PRICES) gives the call's cost. */
  model: string;
  text: string;
  usage: Usage | null;
  started: number;
  runToken?: number | null;
}

/** A run's fallback calls that could not be split into their LlmCalls (the write failed for good). */
export interface UnsplitCalls {
  callId: string;
  chatId: string | null;
  error: unknown;
}

/**
 * The answer stored in the chat with its LlmCall ended, atomically (`stopped`: the partial answer).
 * Rejects with FencedWriteError, writing nothing, when `runToken` is no longer the chat's. After a
 * fallback the call is then split into one LlmCall per model called (store/fallback-calls.ts): written
 * once the database can take it, the answer being stored already (until then its usage is the first model's).
 * A split that fails for good (not a database outage: that write waits) resolves as `unsplit`, for the
 * run to log: the answer stands, its one LlmCall stays the first model's.
 */
export async function storeAnswer(
  deps: RunDeps,
  o: StreamedAnswer & { stopped: boolean; fallback?: FallbackNote; fallbackCalls?: FallbackCalls },
): Promise<{ unsplit?: UnsplitCalls }> {
  await finishWithAnswer(deps, o, { stopped: o.stopped }, o.fallback && { fallback: o.fallback });
  const calls = o.fallbackCalls;
  if (!calls) return {};
  const run = { usage: o.usage, price: (model: string, usage: Usage | null) => costOf(deps.config.modelPrices, model, usage) };
  return deps.writes.write(`the fallback calls of LlmCall ${o.callId}`, () => splitFallbackCall(deps.pool, o.callId, calls, run)).then(
    () => ({}),
    (error: unknown) => ({ unsplit: { callId: o.callId, chatId: o.chatId, error } }),
  );
}

/**
 * A cut run (drain, fencing): what it streamed is stored with `metadata.interrupted` and its LlmCall
 * fails with `error`, in one statement. Rejects with FencedWriteError, writing nothing, when
 * `runToken` is no longer the chat's (the caller then fails the call alone).
 */
export async function storeInterrupted(
  deps: RunDeps,
  o: StreamedAnswer & { chatId: string; error: string; runToken: number | null; reason?: string },
): Promise<void> {
  await finishWithAnswer(deps, o, { interrupted: o.error }, o.reason === undefined ? undefined : { reason: o.reason });
}

/** The two above: the answer and its call's end in one statement; `end` says how the call ended. */
async function finishWithAnswer(deps: RunDeps, o: StreamedAnswer, end: { stopped: boolean } | { interrupted: string }, metadata?: Record<string, unknown>): Promise<void> {
  await finishLlmCallWithMessage(deps.pool, {
    callId: o.callId,
    chatId: o.chatId,
    assistant: { content: o.text, ...(metadata && { metadata }) },
    usage: o.usage,
    cost: costOf(deps.config.modelPrices, o.model, o.usage),
    latencyMs: sinceMs(o.started),
    runToken: o.runToken ?? null,
    ...end,
  });
}

/** A running LlmCall for a model call that stores no message (title generation). */
export function startCall(deps: RunDeps, o: { chatId: string; owner: string; provider: ProviderName; model: string; purpose: 'title' }): Promise<string> {
  return startLlmCall(deps.pool, { ...o, instanceId: deps.config.instanceId });
}

/** Ends such a call succeeded; false when it is unknown or already ended (recovered as lost). */
export function finishCall(deps: RunDeps, o: { callId: string; model: string; usage: Usage | null; started: number }): Promise<boolean> {
  return finishLlmCall(deps.pool, { callId: o.callId, usage: o.usage, cost: costOf(deps.config.modelPrices, o.model, o.usage), latencyMs: sinceMs(o.started) });
}

/**
 * Marks the call failed. Never rejects: during a database outage the write is retried once the
 * database is back (recordLlmCallFailure), so the run can end now.
 */
export async function failCall(deps: RunDeps, o: { callId: string; model?: string; error: string; started: number; usage?: Usage | null }): Promise<void> {
  const usage = o.usage ?? null;
  const cost = o.model === undefined ? null : costOf(deps.config.modelPrices, o.model, usage);
  await recordLlmCallFailure(deps.pool, { callId: o.callId, error: o.error, latencyMs: sinceMs(o.started), usage, cost }, deps.writes);
}

