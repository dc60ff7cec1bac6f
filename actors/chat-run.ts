// The chat run actor: store the new input, call the provider round after round, run the service's
// tools between rounds, store the answer with its LlmCall in one transaction, and end with exactly
// one `done` or `error`. One synchronous receive handles every message; I/O is in chat-io.ts.
//
//   idle ─start─▶ streaming ─round_end(no calls)────────────▶ [waiting: input stored?] ─▶ storing ─▶ ended
//                   ▲  │ text, hold_expired                                                    ▲
//                   │  └─round_end(calls)─▶ [waiting] ─▶ tools ─tool_done, tool_stored…─┐      │ stop: partial answer
//                   └────────────────── all results ────────────────────────────────────┘      │
//   any failure, cancel ─▶ failing (input settled ▶ interrupted text kept ▶ LlmCall failed) ─▶ ended
//
// The state is data: each state holds what it needs, and a transition makes the next state instead
// of changing the last one (chat-state.ts has its shapes). How the run ends, its answer stored or its
// failure recorded, is chat-end.ts.
import { resolveToolNames } from '../src/chat/tools.ts';
import { toProviderMessages } from '../src/chat/transcript.ts';
import { addUsage, type ProviderMessage, type RoundEnd, type ToolCallRequest } from '../src/providers/types.ts';
import { normalizePrompt } from '../src/domain/schemas.ts';
import { done, fail, failing, storeAnswer, warnFenced } from './chat-end.ts';
import { executeChat } from './chat-io.ts';
import type { ChatMsg, ChatRunRequest } from './chat-protocol.ts';
import { baseOf, PENDING, tokenOf, type Base, type ChatIo, type ChatState, type Input, type Rounds, type Run, type Then } from './chat-state.ts';
import { closeSlot, openSlot, type ToolSlot } from './chat-tools.ts';
import { causeOf, RunError } from './run-failure.ts';
import type { Control, Handle } from './runtime/actor.ts';
import { defineRun, isControl } from './runtime/actor.ts';
import { sseFrame } from './runtime/frame.ts';
import { gateDiscard, gateExpired, gateHint, gateRelease, gateText, newGate, type Gate } from './text-gate.ts';

export type { ChatRunRequest, ChatRunValue } from './chat-protocol.ts';

export const toolLimitMessage = (rounds: number) =>
  `Stopped after ${rounds} tool rounds: the tool-call limit for one completion was reached. Ask again to continue.`;

const initial = (req: ChatRunRequest): ChatState => ({ s: 'idle', req });

/** The Base of a run that begins now (`session` null: it failed before it had one). */
function begin(req: ChatRunRequest, io: ChatIo, call = io.newController(), tools: readonly string[] = [], session: Handle | null = null): Base {
  const run: Run = { req, chatId: req.storeChat ? req.chatId : null, started: io.now(), call, tools, session };
  return { run, input: PENDING, rounds: { n: 0, usage: null, raw: null } };
}

function start(req: ChatRunRequest, io: ChatIo): ChatState {
  const { deps } = io;
  // First, so that a failure anywhere after it can wait for the input to settle.
  io.perform({ c: 'prepare', req });
  const resumed = req.resume ? resumedCuts(req.resume) : null;
  const meta = { type: 'meta', chatId: req.storeChat ? req.chatId : null, callId: req.callId, provider: req.provider, model: req.model };
  // Only for readers that number deltas (the lost run kept its cuts): the spec's own meta is unchanged.
  io.emit('meta', req.resume?.deltas ? { ...meta, resumedDeltas: resumed!.exact } : meta);
  // A takeover: the lost run's text is this run's first deltas, so attach replays it and the answer holds it.
  if (resumed) for (const text of resumed.pieces) io.emitDelta(text);
  const adapter = deps.providers.get(req.provider);
  if (!adapter) return caught(begin(req, io), new RunError(`${req.provider} is not configured`, 'invalid'), io);
  const prompt = req.additionalSystemPrompt !== undefined ? normalizePrompt(req.additionalSystemPrompt) : (req.stored?.additionalSystemPrompt ?? null);
  const toolNames = resolveToolNames(req.provider, req.enabledTools ?? req.stored?.enabledTools, deps.tools);
  const tools = deps.tools.filter((t) => toolNames.includes(t.name));
  const call = io.newController();
  const offered = tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  const session = adapter.startSession({
    model: req.model,
    messages: withResumed(toProviderMessages(prompt, req.messages), req.resume),
    tools: req.clientTools ? [...offered, ...req.clientTools.filter((c) => !toolNames.includes(c.name))] : offered,
    temperature: req.temperature,
    topP: req.topP,
    stop: req.stop,
    maxTokens: req.maxTokens,
    stream: req.mode === 'stream',
    signal: io.signalOf(call),
  });
  // The session is the runtime's from here: the state and the round's command name it by handle.
  return nextRound(begin(req, io, call, tools.map((t) => t.name), io.open(session)), null, io);
}

/**
 * A takeover's first deltas: the lost run's checkpointed text cut as that run streamed it, as far as its
 * checkpoint kept the cuts (a reader that numbers deltas, the OpenAI-compatible API, then resumes within
 * them exactly: the meta's `resumedDeltas` says how many), and what is left of it as one more delta.
 */
export function resumedCuts(resume: NonNullable<ChatRunRequest['resume']>): { pieces: string[]; exact: number } {
  const { text } = resume;
  const pieces: string[] = [];
  let at = 0;
  for (const n of resume.deltas ?? []) {
    if (at + n > text.length) break;
    if (n > 0) pieces.push(text.slice(at, (at += n)));
  }
  const exact = pieces.length;
  if (at < text.length) pieces.push(text.slice(at));
  return { pieces, exact };
}

/** The Messages API continues a trailing assistant turn: a takeover sends the lost run's text as one. */
function withResumed(messages: ProviderMessage[], resume: ChatRunRequest['resume']): ProviderMessage[] {
  return resume ? [...messages, { role: 'assistant', content: resume.text }] : messages;
}

function nextRound(b: Base, slots: readonly ToolSlot[] | null, io: ChatIo): ChatState {
  const rounds = { ...b.rounds, n: b.rounds.n + 1 };
  io.perform({ c: 'round', session: b.run.session!, call: b.run.call, round: rounds.n, results: slots && slots.map((s) => s.result!) });
  const held = b.run.tools.length > 0 || (b.run.req.clientTools?.length ?? 0) > 0;
  return { s: 'streaming', run: b.run, input: b.input, rounds, gate: newGate(held) };
}

function roundEnded(state: Streaming, end: RoundEnd, io: ChatIo): ChatState {
  const fallback = end.fallback ?? state.rounds.fallback;
  const fallbackCalls = end.fallbackCalls ?? state.rounds.fallbackCalls;
  const rounds: Rounds = { n: state.rounds.n, usage: addUsage(state.rounds.usage, end.usage), raw: end.raw, ...(fallback && { fallback, fallbackCalls }) };
  const b: Base = { run: state.run, input: state.input, rounds };
  const calls = end.toolCalls;
  if (calls.length === 0) {
    gateRelease(state.gate, io);
    return answered(b, io);
  }
  // Calls of the client's own functions end the run: the client runs them and asks again, as with OpenAI.
  const clientCalls = callsOfClient(state.run.req, calls);
  if (clientCalls) {
    gateRelease(state.gate, io);
    return answered({ ...b, rounds: { ...rounds, clientCalls } }, io);
  }
  // Text of a round that ends in tool calls is commentary: dropped unless already shown.
  gateDiscard(state.gate, io);
  // CHAT_MAX_TOOL_ROUNDS cycles have run and the model still asks for tools: stop here.
  const max = io.deps.config.CHAT_MAX_TOOL_ROUNDS;
  if (rounds.n > max) {
    io.emitDelta((io.deltaText ? '\n\n' : '') + toolLimitMessage(max));
    return answered(b, io);
  }
  return whenStored(b, { then: 'tools', calls }, io);
}

/** The calls of `calls` that name a function of the client (ChatRunRequest.clientTools); null when none does. */
function callsOfClient(req: ChatRunRequest, calls: ToolCallRequest[]): ToolCallRequest[] | null {
  const declared = req.clientTools;
  if (!declared || declared.length === 0) return null;
  const theirs = calls.filter((c) => declared.some((d) => d.name === c.name));
  return theirs.length > 0 ? theirs : null;
}

/**
 * The rounds are over: the answer is stored, unless the run was asked to end meanwhile. `cancelled`
 * says so without reading `signal`, which would make the run's AbortController for every run.
 */
function answered(b: Base, io: ChatIo): ChatState {
  if (io.cancelled) return caught(b, io.signal.reason ?? new Error('run cancelled'), io);
  return whenStored(b, { then: 'answer' }, io);
}

/** Goes on once the input is stored; a failed store fails the run. */
function whenStored(b: Base, next: Then, io: ChatIo): ChatState {
  const { input } = b;
  if (input.at === 'pending') return { ...b, s: 'waiting', next };
  if (input.at === 'failed') return next.then === 'stopped' ? fail(b, null, io) : caught(b, null, io);
  if (next.then === 'tools') return startTools(b, next.calls, io);
  return storeAnswer(b, next.then === 'stopped', io);
}

function startTools(b: Base, calls: ToolCallRequest[], io: ChatIo): ChatState {
  const names = b.run.tools;
  const tools = io.deps.tools.filter((t) => names.includes(t.name));
  const signal = io.signalOf(b.run.call);
  const slots = calls.map((call, index) => {
    const { slot, command } = openSlot(call, tools, { round: b.rounds.n, index, toolCallId: io.newId(), now: io.now() }, signal);
    io.emitKeyed(slot.toolCallId, 'tool_call', { ...slot.base, status: 'initiated' });
    io.perform(command);
    return slot;
  });
  return { ...b, s: 'tools', slots, left: calls.length };
}

/** A tool's terminal event, after its message is stored; the next round once every call has ended. */
function toolEnded(state: ChatState & { s: 'tools' }, slot: ToolSlot, io: ChatIo): ChatState {
  io.emitKeyed(slot.toolCallId, 'tool_call', slot.terminal);
  const left = state.left - 1;
  return left > 0 ? { ...state, left } : nextRound(baseOf(state), state.slots, io);
}

/** A tool's outcome: its slot closed, then its message stored before its terminal event (or that event at once, when nothing is stored). */
function toolDone(state: ChatState & { s: 'tools' }, msg: Extract<ChatMsg, { t: 'tool_done' }>, io: ChatIo): ChatState {
  const open = state.slots[msg.index];
  if (!open || open.result) return io.unhandled(state, msg);
  const { slot, message } = closeSlot(open, msg, io.now());
  const next = { ...state, slots: state.slots.map((s, i) => (i === msg.index ? slot : s)) };
  const { chatId } = state.run;
  if (!chatId) return toolEnded(next, slot, io);
  io.perform({ c: 'store_tool', round: msg.round, index: msg.index, chatId, owner: state.run.req.owner, message, runToken: tokenOf(state.input) });
  return next;
}

/** A user's stop ends the run with what it has, not with an error (unless storage failed first). */
function caught(b: Base, err: unknown, io: ChatIo): ChatState {
  if (io.cancelled === 'stop' && b.input.at !== 'failed' && !io.finished) return whenStored(b, { then: 'stopped' }, io);
  return fail(b, err, io);
}

/** The input's storage settled: the run goes on from where it waited for it. */
function inputSettled(state: ChatState, input: Input, msg: ChatMsg, io: ChatIo): ChatState {
  if (state.s === 'idle' || state.s === 'ended') return io.unhandled(state, msg);
  const b: Base = { ...baseOf(state), input };
  if (state.s === 'waiting') return whenStored(b, state.next, io);
  if (state.s === 'failing') return state.step === 'settle' ? failing(b, state.failure, 'settle', io) : { ...state, input };
  return { ...state, input };
}

type RoundMsg = Extract<ChatMsg, { t: 'text' | 'round_hint' | 'hold_expired' | 'round_end' | 'round_failed' }>;

// `text` first: it is nearly every message a run gets.
const isRoundMsg = (msg: ChatMsg): msg is RoundMsg =>
  msg.t === 'text' || msg.t === 'round_hint' || msg.t === 'hold_expired' || msg.t === 'round_end' || msg.t === 'round_failed';

type Streaming = ChatState & { s: 'streaming' };

/**
 * The streaming state with `gate`: the same state when the gate did not change, so that a delta
 * through an open gate allocates nothing (the message is the delta path's only allocation).
 */
const withGate = (state: Streaming, gate: Gate): Streaming => (gate === state.gate ? state : { ...state, gate });

/** A message of the round being streamed. */
function inRound(state: Streaming, msg: RoundMsg, io: ChatIo): ChatState {
  const { gate } = state;
  switch (msg.t) {
    case 'text':
      return withGate(state, gateText(gate, msg.text, msg.round, io));
    case 'round_hint':
      return withGate(state, gateHint(gate, msg.hint, io));
    case 'hold_expired':
      return withGate(state, gateExpired(gate, io));
    case 'round_end':
      return roundEnded(state, msg.end, io);
    case 'round_failed':
      gateDiscard(gate, io);
      return caught(baseOf(state), msg.error, io);
  }
}

/**
 * The outcome of I/O started before the run moved on to its end (a failure, a crash or a stop
 * elsewhere): a round's text, its end, a hold's timer, a tool's outcome. The run no longer needs it.
 * Anywhere else such a message is unexpected.
 */
function late(state: ChatState, msg: ChatMsg, io: ChatIo): ChatState {
  return state.s === 'waiting' || state.s === 'storing' || state.s === 'failing' ? state : io.unhandled(state, msg);
}

function receive(state: ChatState, msg: ChatMsg | Control, io: ChatIo): ChatState {
  // On a stop or cancel the runtime has aborted the run's signal: the provider call or the tools end,
  // and their outcome brings the run to its end (a stopped answer, or the cancel's error).
  if (isControl(msg)) {
    if (msg.t === 'start') return state.s === 'idle' ? start(state.req, io) : io.unhandled(state, msg);
    if (state.s !== 'idle' && state.s !== 'ended') io.abort(state.run.call, io.signal.reason);
    return state;
  }
  if (isRoundMsg(msg)) {
    if (state.s !== 'streaming') return late(state, msg, io);
    return msg.round === state.rounds.n ? inRound(state, msg, io) : io.unhandled(state, msg);
  }
  switch (msg.t) {
    case 'prepared':
      return inputSettled(state, { at: 'stored', runToken: msg.runToken }, msg, io);
    case 'prepare_failed':
      if (state.s !== 'idle' && state.s !== 'ended') io.abort(state.run.call, msg.error);
      // The cause is kept as data (the state is plain); the run fails with it once it can.
      warnFenced(msg.error, io);
      return inputSettled(state, { at: 'failed', cause: causeOf(msg.error) }, msg, io);
    case 'tool_done':
      if (state.s !== 'tools') return late(state, msg, io);
      return msg.round === state.rounds.n ? toolDone(state, msg, io) : io.unhandled(state, msg);
    case 'tool_stored': {
      if (state.s !== 'tools') return late(state, msg, io);
      const slot = state.slots[msg.index];
      return msg.round === state.rounds.n && slot?.terminal ? toolEnded(state, slot, io) : io.unhandled(state, msg);
    }
    case 'tool_store_failed':
      return state.s === 'tools' ? caught(baseOf(state), msg.error, io) : late(state, msg, io);
    case 'answer_stored':
      if (msg.unsplit) io.log('warn', `run ${io.runId}: the fallback calls of LlmCall ${msg.unsplit.callId} (chat ${msg.unsplit.chatId}) could not be written; its one LlmCall stays the first model's`, msg.unsplit.error);
      return state.s === 'storing' ? done(state, state.stopped, io) : io.unhandled(state, msg);
    case 'answer_store_failed':
      if (state.s !== 'storing') return io.unhandled(state, msg);
      return state.stopped ? fail(baseOf(state), msg.error, io) : caught(baseOf(state), msg.error, io);
    case 'interrupted_stored':
      if (state.s !== 'failing' || state.step !== 'interrupt') return io.unhandled(state, msg);
      if (!msg.error) return failing(baseOf(state), state.failure, 'record', io);
      io.log('warn', `run ${io.runId}: the interrupted answer could not be stored`, msg.error);
      return failing(baseOf(state), state.failure, 'interrupt', io);
    case 'call_failed':
      return state.s === 'failing' ? failing(baseOf(state), state.failure, 'record', io) : io.unhandled(state, msg);
  }
}

/** A throw inside receive ends the run as any failure does, unless it came while failing. */
function crashed(state: ChatState, err: unknown, io: ChatIo): ChatState {
  if (state.s === 'failing' || state.s === 'ended') throw err;
  // A throw in start: the prepare it performed first settles the input as for any run.
  return caught(state.s === 'idle' ? begin(state.req, io) : baseOf(state), err, io);
}

/** The spec's terminal `error` event of a chat stream. */
const errorFrame = (message: string): string => sseFrame('error', { type: 'error', message });

/** The kind's behavior, for tests that drive it without I/O. */
export const chatBehavior = { initial, receive, crashed, execute: executeChat, errorFrame, keepsDeltas: (req: ChatRunRequest) => req.keepDeltas === true };
export const chatRun = defineRun(chatBehavior, { settlesOwnStart: true });
