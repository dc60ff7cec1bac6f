// How a chat run ends: its answer stored with its LlmCall and `done`, or its failure recorded (the
// input settled, an interrupted answer kept, the LlmCall failed) and the kind's `error`.
import { costOf } from '../src/cost/prices.ts';
import { specUsage } from '../src/providers/types.ts';
import { FencedWriteError } from '../src/store/fencing.ts';
import { INSTANCE_LOST } from '../src/store/recovery.ts';
import type { ChatRunValue } from './chat-protocol.ts';
import { tokenOf, type Base, type ChatIo, type ChatState, type Step } from './chat-state.ts';
import { cancelFailure, causeOf, interruptionOf } from './run-failure.ts';
import type { RunFailure } from './runtime/protocol.ts';

/**
 * Stores the answer and ends with `done`. The answer is exactly what was streamed: the deltas,
 * concatenated. A stopped run stores that partial text (nothing when empty) with `metadata.stopped`,
 * its LlmCall ends `stopped`, and `done` says `stopped: true`.
 */
export function storeAnswer(b: Base, stopped: boolean, io: ChatIo): ChatState {
  const { run } = b;
  const { callId } = run.req;
  if (!callId) return done(b, stopped, io);
  const { fallback, fallbackCalls } = b.rounds;
  const model = answeringModel(b);
  io.perform({ c: 'store_answer', callId, chatId: run.chatId, model, text: io.deltaText, usage: b.rounds.usage, started: run.started, stopped, runToken: tokenOf(b.input), ...(fallback && { fallback, fallbackCalls }) });
  return { ...b, s: 'storing', stopped };
}

/** After a fallback the usage is the answering model's, and so is its price. */
function answeringModel({ run, rounds }: Pick<Base, 'run' | 'rounds'>): string {
  return rounds.fallbackCalls?.model ?? run.req.model;
}

export function done({ run, rounds }: Base, stopped: boolean, io: ChatIo): ChatState {
  const { req } = run;
  // The cache's share of the input is the LlmCall's (usage, cost), not the spec's `done`.
  const usage = rounds.usage && specUsage(rounds.usage);
  const text = io.deltaText;
  const data: Record<string, unknown> = { type: 'done', text };
  if (usage) data.usage = usage;
  if (stopped) data.stopped = true;
  const raw = stopped ? null : rounds.raw;
  const cost = costOf(io.deps.config.modelPrices, answeringModel({ run, rounds }), rounds.usage);
  const value: ChatRunValue = { chatId: run.chatId, callId: req.callId, provider: req.provider, model: req.model, text, usage, cost, raw, stopped };
  // Only a run with client functions (the OpenAI-compatible API) ever has them: the spec's `done` is unchanged.
  if (rounds.clientCalls && !stopped) data.toolCalls = value.toolCalls = rounds.clientCalls;
  if (req.keepDeltas && io.deltaLengths) value.deltas = [...io.deltaLengths];
  io.done(data, value);
  return { s: 'ended' };
}

/** `caughtErr`: the failure's error, unless the input failed (its cause is then the run's). */
export function fail(b: Base, caughtErr: unknown, io: ChatIo): ChatState {
  const { input } = b;
  // A storage failure is the cause even when it surfaces as the provider call's abort.
  const cause = input.at === 'failed' ? input.cause : null;
  // Whatever of the run still works (a provider stream, other tools of the round: a remote command in
  // the chat's workdir) ends with it, not after: the chat is free for its next run from now on.
  io.abort(b.run.call, cause ? new Error(cause.message) : caughtErr);
  if (!cause) warnFenced(caughtErr, io);
  const failure = interruptionOf(io.signal) ?? cancelFailure(io.signal) ?? cause ?? causeOf(caughtErr);
  return failing(b, failure, 'settle', io);
}

/** A stale owner's write refused by the fencing token: operators must see it happened. */
export function warnFenced(err: unknown, io: ChatIo): void {
  if (err instanceof FencedWriteError) io.log('warn', `run ${io.runId}: ${err.message}`);
}

/**
 * The LlmCall's insert must settle before the call can be marked failed. Even a failed insert may
 * have landed (its reply lost with the connection), so the failure is recorded anyway (a no-op for
 * an unknown call). A shutdown or fencing cut stores the streamed text as interrupted with the call
 * failed, in one statement; only when that store fails is the call failed alone.
 */
export function failing(b: Base, failure: RunFailure, step: Step, io: ChatIo): ChatState {
  const { run, input } = b;
  const { callId } = run.req;
  if (step === 'settle') {
    if (input.at === 'pending') return { ...b, s: 'failing', failure, step };
    const text = io.deltaText;
    // A takeover that fails ends as the lost run would have: its text kept, as interrupted.
    const { resume } = run.req;
    if (input.at === 'stored' && run.chatId && callId && text && (interruptionOf(io.signal) || resume)) {
      const { usage } = b.rounds;
      const lost = resume ? { error: `${INSTANCE_LOST}: the continuation by a peer failed: ${failure.message}`, reason: INSTANCE_LOST } : { error: failure.message };
      io.perform({ c: 'store_interrupted', callId, chatId: run.chatId, model: run.req.model, text, usage, started: run.started, runToken: input.runToken, ...lost });
      return { ...b, s: 'failing', failure, step: 'interrupt' };
    }
    step = 'interrupt';
  }
  if (step === 'interrupt' && callId) {
    io.perform({ c: 'fail_call', callId, model: run.req.model, error: failure.message, started: run.started, usage: b.rounds.usage });
    return { ...b, s: 'failing', failure, step: 'record' };
  }
  io.fail(failure);
  return { s: 'ended' };
}
