// The title run: one whole call of TITLE_MODEL on provider_a with its LlmCall (purpose `title`), the
// reply cleaned, and the title stored only while the chat is still untitled (setChatTitleIfEmpty,
// one atomic statement), so a title the user sets meanwhile is kept. A failure changes nothing in
// the chat. Keyed by chatId with `join`: two suggestions at once share one model call.
//
//   idle ─start─▶ opening (LlmCall) ─▶ generating ─▶ closing (LlmCall succeeded) ─▶ titling ─▶ ended
//   a failure anywhere ─▶ failing (LlmCall failed) ─▶ ended;  TITLE_TIMEOUT_MS is a timer message
import { cleanTitle, generateTitle, TITLE_TIMEOUT_MS } from '../src/chat/title.ts';
import { CHAT_NOT_FOUND } from '../src/base/messages.ts';
import type { ProviderAdapter, Usage } from '../src/providers/types.ts';
import type { RunDeps } from '../src/domain/run-deps.ts';
import { getChat, setChatTitleIfEmpty } from '../src/store/chats.ts';
import { ChatGoneError } from '../src/store/llm-calls.ts';
import type { ChatSummary } from '../src/base/types.ts';
import { defineRun, isControl, messageOf, type Control, type Handle, type Io } from './runtime/actor.ts';
import { sseFrame } from './runtime/frame.ts';
import type { RunFailure } from './runtime/protocol.ts';
import { failureOf, interruptionOf, RunError } from './run-failure.ts';
import { failCall, finishCall, startCall } from './run-storage.ts';
import { endProviderSpan, titleCallSpan } from '../src/telemetry/actor-spans.ts';
import { capturingContent, endWithError } from '../src/telemetry/tracing.ts';
import { retriesOn } from '../src/telemetry/retry-events.ts';

export interface TitleRunRequest {
  chatId: string;
  /** The user whose chat it is, and whose usage the call is. */
  owner: string;
  /** The conversation's first user message, which the title names. */
  content: string;
  /** The W3C traceparent of the run's span (tracing on: src/telemetry/run-spans.ts sets it). */
  traceparent?: string;
}

export interface TitleRunValue {
  /** The chat as it now is: with the generated title, or the one a user set meanwhile. */
  chat: ChatSummary;
}

export type TitleMsg =
  | { t: 'chat_read'; chat: ChatSummary | null }
  | { t: 'call_started'; callId: string }
  | { t: 'generated'; text: string; usage: Usage | null }
  | { t: 'timeout' }
  | { t: 'call_finished' }
  | { t: 'titled'; chat: ChatSummary | null }
  /** A step's I/O failed: the run fails with it. */
  | { t: 'failed'; error: unknown }
  | { t: 'call_failed' };

export type TitleCommand =
  | { c: 'read_chat'; chatId: string; owner: string }
  | { c: 'start_call'; chatId: string; owner: string; model: string }
  | { c: 'generate'; adapter: ProviderAdapter; model: string; content: string; signal: AbortSignal; traceparent?: string }
  | { c: 'finish_call'; callId: string; model: string; usage: Usage | null; started: number }
  | { c: 'set_title'; chatId: string; owner: string; title: string }
  | { c: 'fail_call'; callId: string; error: string; started: number };

/** What the run fixed at its start: plain data (provider_a's adapter is the deps'; the controller, the runtime's). */
interface TitleData {
  readonly req: TitleRunRequest;
  /** On the runtime's clock (io.now). */
  readonly started: number;
  readonly model: string;
  /** Aborts the model call at TITLE_TIMEOUT_MS after the start: a controller, by handle (io.newController). */
  readonly timeout: Handle;
}

/** Each state after the LlmCall is open names it (`callId`): a failure then marks it failed. */
export type TitleState =
  | { readonly s: 'idle'; readonly req: TitleRunRequest }
  | { readonly s: 'checking'; readonly run: TitleData }
  | { readonly s: 'opening'; readonly run: TitleData }
  | { readonly s: 'generating'; readonly run: TitleData; readonly callId: string }
  | { readonly s: 'closing'; readonly run: TitleData; readonly callId: string; readonly title: string }
  | { readonly s: 'titling'; readonly run: TitleData; readonly callId: string }
  | { readonly s: 'failing'; readonly run: TitleData; readonly failure: RunFailure }
  | { readonly s: 'ended' };

type TitleIo = Io<TitleMsg, TitleRunValue, TitleCommand, RunDeps>;

const failed = (error: unknown): TitleMsg => ({ t: 'failed', error });

async function executeTitle(cmd: TitleCommand, deps: RunDeps): Promise<TitleMsg> {
  switch (cmd.c) {
    case 'read_chat':
      return getChat(deps.pool, cmd.chatId, cmd.owner).then((chat): TitleMsg => ({ t: 'chat_read', chat }), failed);
    case 'start_call':
      return startCall(deps, { chatId: cmd.chatId, owner: cmd.owner, provider: 'provider_a', model: cmd.model, purpose: 'title' }).then((callId): TitleMsg => ({ t: 'call_started', callId }), failed);
    case 'generate':
      return generate(cmd);
    case 'finish_call':
      return finishCall(deps, cmd).then(
        (): TitleMsg => ({ t: 'call_finished' }),
        // The answer cannot be kept, so the call failed: say so once the database is back.
        (err: unknown) => failed(new RunError(`title could not be stored: ${messageOf(err)}`, 'internal')),
      );
    case 'set_title':
      return setChatTitleIfEmpty(deps.pool, cmd.chatId, cmd.title, cmd.owner).then((chat): TitleMsg => ({ t: 'titled', chat }), failed);
    case 'fail_call':
      return failCall(deps, cmd).then((): TitleMsg => ({ t: 'call_failed' }));
  }
}

/** The model call, traced (its span a child of the run's) when the run's request carries a traceparent. */
function generate(cmd: Extract<TitleCommand, { c: 'generate' }>): Promise<TitleMsg> {
  const span = titleCallSpan(cmd.traceparent, 'provider_a', cmd.model);
  return retriesOn(cmd.signal, span, () => generateTitle(cmd.adapter, cmd.model, cmd.content, cmd.signal)).then(
    (out): TitleMsg => {
      if (span !== null) endProviderSpan(span, out.end, capturingContent() ? out.text : null);
      return { t: 'generated', text: out.text, usage: out.usage };
    },
    (err: unknown) => {
      if (span !== null) endWithError(span, err);
      return failed(err);
    },
  );
}

const initial = (req: TitleRunRequest): TitleState => ({ s: 'idle', req });

function start(req: TitleRunRequest, io: TitleIo): TitleState {
  const started = io.now();
  const model = io.deps.config.TITLE_MODEL;
  io.after(TITLE_TIMEOUT_MS, { t: 'timeout' });
  if (!io.deps.providers.has('provider_a')) return end(titleFailure(new RunError('provider_a is not configured', 'unavailable'), io), io);
  io.perform({ c: 'read_chat', chatId: req.chatId, owner: req.owner });
  return { s: 'checking', run: { req, started, model, timeout: io.newController() } };
}

/** The run's failure as it ends: a shutdown's or fencing cut's message verbatim, any other one prefixed. */
function titleFailure(err: unknown, io: TitleIo): RunFailure {
  const cut = interruptionOf(io.signal);
  if (cut) return cut;
  // Deleted between the run's read and its LlmCall: the chat is not found, as at the start.
  if (err instanceof ChatGoneError) return { ok: false, outcome: 'not_found', message: CHAT_NOT_FOUND };
  const failure = failureOf(err, io.signal);
  return { ...failure, message: `title generation failed: ${failure.message}` };
}

/** The run fails; its LlmCall (`callId`, once open) is marked failed first. */
function fail(run: TitleData, callId: string | null, err: unknown, io: TitleIo): TitleState {
  const failure = titleFailure(err, io);
  if (!callId) return end(failure, io);
  io.perform({ c: 'fail_call', callId, error: failure.message, started: run.started });
  return { s: 'failing', run, failure };
}

function titled(chat: ChatSummary, io: TitleIo): TitleState {
  io.done({ chat }, { chat });
  return { s: 'ended' };
}

function end(failure: RunFailure, io: TitleIo): TitleState {
  io.fail(failure);
  return { s: 'ended' };
}

const callIdOf = (state: TitleState): string | null => ('callId' in state ? state.callId : null);

/** A step's outcome after the run failed meanwhile (a crash) is no longer needed; anywhere else it is unexpected. */
function late(state: TitleState, msg: TitleMsg | Control, io: TitleIo): TitleState {
  return state.s === 'failing' ? state : io.unhandled(state, msg);
}

function receive(state: TitleState, msg: TitleMsg | Control, io: TitleIo): TitleState {
  // On a stop or cancel the model call sees the aborted signal; its failure ends the run.
  if (isControl(msg)) {
    if (msg.t !== 'start') return state;
    return state.s === 'idle' ? start(state.req, io) : io.unhandled(state, msg);
  }
  if (state.s === 'idle' || state.s === 'ended') return io.unhandled(state, msg);
  const { run } = state;
  switch (msg.t) {
    case 'timeout':
      io.abort(run.timeout, new Error(`timed out after ${TITLE_TIMEOUT_MS} ms`));
      return state;
    case 'chat_read':
      if (state.s !== 'checking') return late(state, msg, io);
      if (!msg.chat) return end({ ok: false, outcome: 'not_found', message: CHAT_NOT_FOUND }, io);
      if (msg.chat.title?.trim()) return titled(msg.chat, io);
      io.perform({ c: 'start_call', chatId: run.req.chatId, owner: run.req.owner, model: run.model });
      return { s: 'opening', run };
    case 'call_started': {
      if (state.s !== 'opening') return late(state, msg, io);
      const signal = AbortSignal.any([io.signal, io.signalOf(run.timeout)]);
      // The deps' providers are fixed: start found provider_a among them.
      const adapter = io.deps.providers.get('provider_a')!;
      io.perform({ c: 'generate', adapter, model: run.model, content: run.req.content, signal, traceparent: run.req.traceparent });
      return { s: 'generating', run, callId: msg.callId };
    }
    case 'generated': {
      if (state.s !== 'generating') return late(state, msg, io);
      const { callId } = state;
      const title = cleanTitle(msg.text);
      if (!title) return fail(run, callId, new RunError(`${run.model} returned no usable title`, 'provider_error'), io);
      io.perform({ c: 'finish_call', callId, model: run.model, usage: msg.usage, started: run.started });
      return { s: 'closing', run, callId, title };
    }
    case 'call_finished':
      if (state.s !== 'closing') return late(state, msg, io);
      io.perform({ c: 'set_title', chatId: run.req.chatId, owner: run.req.owner, title: state.title });
      return { s: 'titling', run, callId: state.callId };
    case 'titled':
      if (state.s !== 'titling') return late(state, msg, io);
      if (!msg.chat) return end({ ok: false, outcome: 'not_found', message: CHAT_NOT_FOUND }, io);
      return titled(msg.chat, io);
    case 'failed': {
      if (state.s === 'failing') return state;
      // The model call's failure after the timeout is the timeout, unless the run was cancelled.
      const timedOut = state.s === 'generating' && io.signalOf(run.timeout).aborted && !io.signal.aborted;
      return fail(run, callIdOf(state), timedOut ? new RunError(`timed out after ${TITLE_TIMEOUT_MS} ms`, 'provider_timeout') : msg.error, io);
    }
    case 'call_failed':
      return state.s === 'failing' ? end(state.failure, io) : io.unhandled(state, msg);
  }
}

function crashed(state: TitleState, err: unknown, io: TitleIo): TitleState {
  if (state.s === 'failing' || state.s === 'ended') throw err;
  if (state.s === 'idle') return end(titleFailure(err, io), io);
  return fail(state.run, callIdOf(state), err, io);
}

/** A title run's terminal `error` event: a search's shape, `{ message }` (the spec gives a title no stream of its own). */
const errorFrame = (message: string): string => sseFrame('error', { message });

/** The kind's behavior, for tests that drive it without I/O. */
export const titleBehavior = { initial, receive, crashed, execute: executeTitle, errorFrame };
export const titleRun = defineRun(titleBehavior);
