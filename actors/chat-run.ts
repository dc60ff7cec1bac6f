// The chat run actor: store the new input, call the provider round after round, run the service's
// tools between rounds, store the answer with its LlmCall in one transaction, and end with exactly
// one `done` or `error`. One synchronous receive handles every message; I/O is in chat-io.ts.
//
//   idle ─start─▶ streaming ─round_end(no calls)────────────▶ [waiting: input stored?] ─▶ storing ─▶ ended
//                   ▲  │ text, hold_expired                                                    ▲
//                   │  └─round_end(calls)─▶ [waiting] ─▶ tools ─tool_done, tool_stored…─┐      │ stop: partial answer
//                   └────────────────── all results ────────────────────────────────────┘      │
//   any failure, cancel ─▶ failing (input settled ▶ interrupted text kept ▶ LlmCall failed) ─▶ ended
import { resolveToolNames } from '../src/chat/tools.ts';
import { toProviderMessages } from '../src/chat/transcript.ts';
import type { ProviderName, ProviderSession, RoundEnd, ToolCallRequest, ToolResultInput, Usage } from '../src/providers/types.ts';
import type { RunDeps } from '../src/run-deps.ts';
import { normalizePrompt } from '../src/schemas.ts';
import { FencedWriteError } from '../src/store/fencing.ts';
import type { ServiceTool } from '../src/tools/types.ts';
import { executeChat } from './chat-io.ts';
import type { ChatCommand, ChatMsg, ChatRunRequest, ChatRunValue } from './chat-protocol.ts';
import { closeSlot, openSlot, type ToolDone, type ToolSlot } from './chat-tools.ts';
import { failureOf, interruptionOf, RunError } from './run-failure.ts';
import type { Control, Io } from './runtime/actor.ts';
import { defineRun, isControl } from './runtime/actor.ts';
import { sseFrame } from './runtime/frame.ts';
import type { RunFailure } from './runtime/protocol.ts';
import type { ChatStorageRequest } from './run-storage.ts';
import { gateDiscard, gateExpired, gateHint, gateRelease, gateText, newGate, type Gate } from './text-gate.ts';

export type { ChatRunRequest, ChatRunValue } from './chat-protocol.ts';

export const toolLimitMessage = (rounds: number) =>
  `Stopped after ${rounds} tool rounds: the tool-call limit for one completion was reached. Ask again to continue.`;

/** What the run knows across its states. */
interface ChatData {
  readonly req: ChatRunRequest;
  started: number;
  /** The chat messages go to; null when nothing is stored. */
  readonly chatId: string | null;
  usage: Usage | null;
  raw: unknown;
  /** The input and running LlmCall: a storage failure is the run's cause even when it surfaces as an abort. */
  prepared: 'pending' | 'ok' | 'failed';
  /** The run's fencing token (sql/007_fencing.sql), once the input is stored: its later writes carry it. */
  runToken: number | null;
  storageError: unknown;
  /**
   * The provider call's own signal: aborted when storage fails, and with the run's signal on a stop or
   * cancel (receive passes it on). One controller instead of AbortSignal.any per run: any() is among
   * the costliest parts of a start in Node 20 (a signal, listeners and weak references each time).
   */
  readonly call: AbortController;
  tools: ServiceTool[];
  session: ProviderSession | null;
  round: number;
  calls: ToolSlot[];
  toolsLeft: number;
}

/** What waits for the input to be stored: the tool messages follow it, and so does the answer. */
type Then = { then: 'tools'; calls: ToolCallRequest[] } | { then: 'answer' } | { then: 'stopped' };

export type ChatState =
  | { s: 'idle'; run: ChatData }
  | { s: 'streaming'; run: ChatData; gate: Gate }
  | ({ s: 'waiting'; run: ChatData } & Then)
  | { s: 'tools'; run: ChatData }
  | { s: 'storing'; run: ChatData; stopped: boolean }
  | { s: 'failing'; run: ChatData; failure: RunFailure; step: 'settle' | 'interrupt' | 'record' }
  | { s: 'ended'; run: ChatData };

type ChatIo = Io<ChatMsg, ChatRunValue, ChatCommand, RunDeps>;

function addUsage(total: Usage | null, u: Usage | null): Usage | null {
  if (!u) return total;
  if (!total) return { ...u };
  total.inputTokens += u.inputTokens;
  total.outputTokens += u.outputTokens;
  total.totalTokens += u.totalTokens;
  return total;
}

function initial(req: ChatRunRequest): ChatState {
  const run: ChatData = {
    req,
    started: 0,
    chatId: req.storeChat ? req.chatId : null,
    usage: null,
    raw: null,
    prepared: 'pending',
    runToken: null,
    storageError: null,
    call: new AbortController(),
    tools: [],
    session: null,
    round: 0,
    calls: [],
    toolsLeft: 0,
  };
  return { s: 'idle', run };
}

function start(run: ChatData, io: ChatIo): ChatState {
  const { req } = run;
  const { deps } = io;
  run.started = io.now();
  io.perform({ c: 'prepare', req });
  io.emit('meta', { type: 'meta', chatId: run.chatId, callId: req.callId, provider: req.provider, model: req.model });
  const adapter = deps.providers.get(req.provider);
  if (!adapter) return caught(run, new RunError(`${req.provider} is not configured`, 'invalid'), io);
  const prompt = req.additionalSystemPrompt !== undefined ? normalizePrompt(req.additionalSystemPrompt) : (req.stored?.additionalSystemPrompt ?? null);
  const toolNames = resolveToolNames(req.provider, req.enabledTools ?? req.stored?.enabledTools, deps.tools);
  run.tools = deps.tools.filter((t) => toolNames.includes(t.name));
  run.session = adapter.startSession({
    model: req.model,
    messages: toProviderMessages(prompt, req.messages),
    tools: run.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
    temperature: req.temperature,
    maxTokens: req.maxTokens,
    stream: req.mode === 'stream',
    signal: run.call.signal,
  });
  return nextRound(run, null, io);
}

function nextRound(run: ChatData, results: ToolResultInput[] | null, io: ChatIo): ChatState {
  run.round++;
  io.perform({ c: 'round', session: run.session!, round: run.round, results });
  return { s: 'streaming', run, gate: newGate(run.tools.length > 0) };
}

function roundEnded(state: ChatState & { s: 'streaming' }, end: RoundEnd, io: ChatIo): ChatState {
  const { run, gate } = state;
  run.usage = addUsage(run.usage, end.usage);
  run.raw = end.raw;
  const calls = end.toolCalls;
  if (calls.length === 0) {
    gateRelease(gate, io);
    return answered(run, io);
  }
  // Text of a round that ends in tool calls is commentary: dropped unless already shown.
  gateDiscard(gate, io);
  // CHAT_MAX_TOOL_ROUNDS cycles have run and the model still asks for tools: stop here.
  const max = io.deps.config.CHAT_MAX_TOOL_ROUNDS;
  if (run.round > max) {
    io.emitDelta((io.deltaText ? '\n\n' : '') + toolLimitMessage(max));
    return answered(run, io);
  }
  return whenStored(run, { then: 'tools', calls }, io);
}

/**
 * The rounds are over: the answer is stored, unless the run was asked to end meanwhile. `cancelled`
 * says so without reading `signal`, which would make the run's AbortController for every run.
 */
function answered(run: ChatData, io: ChatIo): ChatState {
  if (io.cancelled) return caught(run, io.signal.reason ?? new Error('run cancelled'), io);
  return whenStored(run, { then: 'answer' }, io);
}

/** Goes on once the input is stored; a failed store fails the run. */
function whenStored(run: ChatData, next: Then, io: ChatIo): ChatState {
  if (run.prepared === 'pending') return { s: 'waiting', run, ...next };
  if (run.prepared === 'failed') return next.then === 'stopped' ? fail(run, run.storageError, io) : caught(run, run.storageError, io);
  if (next.then === 'tools') return startTools(run, next.calls, io);
  return storeAnswer(run, next.then === 'stopped', io);
}

function startTools(run: ChatData, calls: ToolCallRequest[], io: ChatIo): ChatState {
  run.calls = [];
  run.toolsLeft = calls.length;
  calls.forEach((call, index) => {
    const { slot, command } = openSlot(call, run.tools, { round: run.round, index, toolCallId: io.newId(), now: io.now() });
    run.calls.push(slot);
    io.emitKeyed(slot.toolCallId, 'tool_call', { ...slot.base, status: 'initiated' });
    io.perform(command);
  });
  return { s: 'tools', run };
}

/** A tool's terminal event, after its message is stored; the next round once every call has ended. */
function toolEnded(state: ChatState, slot: ToolSlot, io: ChatIo): ChatState {
  const { run } = state;
  io.emitKeyed(slot.toolCallId, 'tool_call', slot.terminal);
  run.toolsLeft--;
  if (run.toolsLeft > 0 || state.s !== 'tools') return state;
  return nextRound(run, run.calls.map((c) => c.result!), io);
}

/**
 * Stores the answer and ends with `done`. The answer is exactly what was streamed: the deltas,
 * concatenated. A stopped run stores that partial text (nothing when empty) with `metadata.stopped`,
 * its LlmCall ends `stopped`, and `done` says `stopped: true`.
 */
function storeAnswer(run: ChatData, stopped: boolean, io: ChatIo): ChatState {
  const { callId } = run.req;
  if (!callId) return done(run, stopped, io);
  io.perform({ c: 'store_answer', callId, chatId: run.chatId, text: io.deltaText, usage: run.usage, started: run.started, stopped, runToken: run.runToken });
  return { s: 'storing', run, stopped };
}

function done(run: ChatData, stopped: boolean, io: ChatIo): ChatState {
  const { req, usage } = run;
  const text = io.deltaText;
  const data: Record<string, unknown> = { type: 'done', text };
  if (usage) data.usage = usage;
  if (stopped) data.stopped = true;
  const raw = stopped ? null : run.raw;
  io.done(data, { chatId: run.chatId, callId: req.callId, provider: req.provider, model: req.model, text, usage, raw, stopped });
  return { s: 'ended', run };
}

/** A user's stop ends the run with what it has, not with an error (unless storage failed first). */
function caught(run: ChatData, err: unknown, io: ChatIo): ChatState {
  if (io.cancelled === 'stop' && run.prepared !== 'failed' && !io.finished) return whenStored(run, { then: 'stopped' }, io);
  return fail(run, err, io);
}

function fail(run: ChatData, caughtErr: unknown, io: ChatIo): ChatState {
  // A storage failure is the cause even when it surfaces as the provider call's abort.
  const err = run.prepared === 'failed' ? run.storageError : caughtErr;
  // A stale owner's write refused by the fencing token: operators must see it happened.
  if (err instanceof FencedWriteError) io.log('warn', `run ${io.runId}: ${err.message}`);
  const failure = interruptionOf(io.signal) ?? failureOf(err, io.signal);
  return failing(run, failure, 'settle', io);
}

/**
 * The LlmCall's insert must settle before the call can be marked failed. Even a failed insert may
 * have landed (its reply lost with the connection), so the failure is recorded anyway (a no-op for
 * an unknown call). A shutdown or fencing cut stores the streamed text as interrupted with the call
 * failed, in one statement; only when that store fails is the call failed alone.
 */
function failing(run: ChatData, failure: RunFailure, step: 'settle' | 'interrupt' | 'record', io: ChatIo): ChatState {
  if (step === 'settle') {
    if (run.prepared === 'pending') return { s: 'failing', run, failure, step };
    const text = io.deltaText;
    const { callId } = run.req;
    if (run.prepared === 'ok' && run.chatId && callId && text && interruptionOf(io.signal)) {
      const { chatId, usage, started, runToken } = run;
      io.perform({ c: 'store_interrupted', callId, chatId, text, usage, started, error: failure.message, runToken });
      return { s: 'failing', run, failure, step: 'interrupt' };
    }
    step = 'interrupt';
  }
  const { callId } = run.req;
  if (step === 'interrupt' && callId) {
    io.perform({ c: 'fail_call', callId, error: failure.message, started: run.started });
    return { s: 'failing', run, failure, step: 'record' };
  }
  io.fail(failure);
  return { s: 'ended', run };
}

type RoundMsg = Extract<ChatMsg, { t: 'text' | 'round_hint' | 'hold_expired' | 'round_end' | 'round_failed' }>;

// `text` first: it is nearly every message a run gets.
const isRoundMsg = (msg: ChatMsg): msg is RoundMsg =>
  msg.t === 'text' || msg.t === 'round_hint' || msg.t === 'hold_expired' || msg.t === 'round_end' || msg.t === 'round_failed';

/** A message of the round being streamed. */
function inRound(state: ChatState & { s: 'streaming' }, msg: RoundMsg, io: ChatIo): ChatState {
  const { run, gate } = state;
  switch (msg.t) {
    case 'text':
      return { ...state, gate: gateText(gate, msg.text, run.round, io) };
    case 'round_hint':
      return { ...state, gate: gateHint(gate, msg.hint, io) };
    case 'hold_expired':
      return { ...state, gate: gateExpired(gate, io) };
    case 'round_end':
      return roundEnded(state, msg.end, io);
    case 'round_failed':
      gateDiscard(gate, io);
      return caught(run, msg.error, io);
  }
}

/**
 * The outcome of I/O started before the run moved on to its end (a failure, a crash or a stop
 * elsewhere): a round's text, its end, a hold's timer, a tool's outcome. The run no longer needs it.
 * Anywhere else such a message is unexpected.
 */
function late(state: ChatState, msg: ChatMsg | Control, io: ChatIo): ChatState {
  return state.s === 'waiting' || state.s === 'storing' || state.s === 'failing' ? state : io.unhandled(state, msg);
}

function receive(state: ChatState, msg: ChatMsg | Control, io: ChatIo): ChatState {
  const { run } = state;
  // On a stop or cancel the runtime has aborted the run's signal: the provider call or the tools end,
  // and their outcome brings the run to its end (a stopped answer, or the cancel's error).
  if (isControl(msg)) {
    if (msg.t === 'start') return state.s === 'idle' ? start(run, io) : io.unhandled(state, msg);
    run.call.abort(io.signal.reason);
    return state;
  }
  if (isRoundMsg(msg)) {
    if (state.s !== 'streaming') return late(state, msg, io);
    return msg.round === run.round ? inRound(state, msg, io) : io.unhandled(state, msg);
  }
  switch (msg.t) {
    case 'prepared':
      run.prepared = 'ok';
      run.runToken = msg.runToken;
      if (state.s === 'waiting') return whenStored(run, state, io);
      return state.s === 'failing' && state.step === 'settle' ? failing(run, state.failure, 'settle', io) : state;
    case 'prepare_failed':
      run.prepared = 'failed';
      run.storageError = msg.error;
      run.call.abort(msg.error);
      if (state.s === 'waiting') return whenStored(run, state, io);
      return state.s === 'failing' && state.step === 'settle' ? failing(run, state.failure, 'settle', io) : state;
    case 'tool_done': {
      const slot = run.calls[msg.index];
      if (msg.round !== run.round || !slot || state.s === 'streaming') return io.unhandled(state, msg);
      const message = closeSlot(slot, msg, io.now());
      if (!run.chatId) return toolEnded(state, slot, io);
      io.perform({ c: 'store_tool', round: msg.round, index: msg.index, chatId: run.chatId, message, runToken: run.runToken });
      return state;
    }
    case 'tool_stored': {
      const slot = run.calls[msg.index];
      if (msg.round !== run.round || !slot || state.s === 'streaming') return io.unhandled(state, msg);
      return toolEnded(state, slot, io);
    }
    case 'tool_store_failed':
      return state.s === 'tools' ? caught(run, msg.error, io) : late(state, msg, io);
    case 'answer_stored':
      return state.s === 'storing' ? done(run, state.stopped, io) : io.unhandled(state, msg);
    case 'answer_store_failed':
      if (state.s !== 'storing') return io.unhandled(state, msg);
      return state.stopped ? fail(run, msg.error, io) : caught(run, msg.error, io);
    case 'interrupted_stored':
      if (state.s !== 'failing' || state.step !== 'interrupt') return io.unhandled(state, msg);
      if (!msg.error) return failing(run, state.failure, 'record', io);
      io.log('warn', `run ${io.runId}: the interrupted answer could not be stored`, msg.error);
      return failing(run, state.failure, 'interrupt', io);
    case 'call_failed':
      return state.s === 'failing' ? failing(run, state.failure, 'record', io) : io.unhandled(state, msg);
  }
}

/** A throw inside receive ends the run as any failure does, unless it came while failing. */
function crashed(state: ChatState, err: unknown, io: ChatIo): ChatState {
  if (state.s === 'failing' || state.s === 'ended') throw err;
  return caught(state.run, err, io);
}

/** The spec's terminal `error` event of a chat stream. */
const errorFrame = (message: string): string => sseFrame('error', { type: 'error', message });

/** The kind's behavior, for tests that drive it without I/O. */
export const chatBehavior = { initial, receive, crashed, execute: executeChat, errorFrame };
export const chatRun = defineRun(chatBehavior);
