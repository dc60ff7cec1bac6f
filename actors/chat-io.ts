// The chat run's I/O: each command its receive starts, carried out here, and answered with the
// message that reports its outcome (failures included: an executor never rejects by design). The
// provider's text callback only pushes messages into the run's mailbox.
import type { RunDeps } from '../src/domain/run-deps.ts';
import { appendMessages } from '../src/store/messages.ts';
import { dbSpan, endProviderSpan, endToolSpan, keepsText, providerSpan, settled, toolSpan, traceRun } from '../src/telemetry/actor-spans.ts';
import { endWithError } from '../src/telemetry/tracing.ts';
import { retriesOn } from '../src/telemetry/retry-events.ts';
import type { RunHandle, Tell } from './runtime/actor.ts';
import { runTool } from './chat-tools.ts';
import type { ChatCommand, ChatMsg } from './chat-protocol.ts';
import type { ProviderSession, RoundEnd } from '../src/providers/types.ts';
import { failCall, prepareChat, storeAnswer, storeInterrupted } from './run-storage.ts';

export async function executeChat(cmd: ChatCommand, deps: RunDeps, tell: Tell<ChatMsg>, run: RunHandle): Promise<ChatMsg> {
  switch (cmd.c) {
    case 'prepare':
      // Tracing: the run's work is traced under the run's span from here on (src/telemetry/actor-spans.ts).
      models.set(run, { provider: cmd.req.provider, model: cmd.req.model });
      traceRun(run, cmd.req);
      // The start's first statement answered, either way: the start is no longer in flight (the
      // admission's limit counts a chat start until then, and its latency to here moves the limit, so
      // a database falling behind the starts slows the next ones).
      return settled(dbSpan(run, cmd.req.createChat ? 'INSERT' : 'UPDATE', 'chats'), prepareChat(cmd.req, deps)).finally(() => run.startSettled()).then(
        (p): ChatMsg => {
          // Stored with its fencing token: from now on its streamed text is checkpointed (CHECKPOINT_MS).
          const { callId, chatId } = cmd.req;
          // A takeover's call already holds the resumed text it streams first (store/takeover.ts); the
          // run's first chunk carries its span's traceparent (a takeover's span links to it).
          if (p.runToken !== null && callId && chatId) deps.checkpoints?.track(run, { callId, chatId, runToken: p.runToken, stored: cmd.req.resume?.text.length, trace: cmd.req.traceparent });
          return { t: 'prepared', runToken: p.runToken };
        },
        (error: unknown): ChatMsg => ({ t: 'prepare_failed', error }),
      );
    case 'round':
      return providerRound(cmd, deps, tell, run);
    case 'tool': {
      const span = toolSpan(run, cmd.name, cmd.args);
      const done = runTool(cmd, { config: deps.config, signal: cmd.signal, cpu: deps.cpu });
      if (span === null) return done;
      return done.then((msg) => {
        if (msg.t === 'tool_done') endToolSpan(span, msg);
        return msg;
      });
    }
    case 'store_tool': {
      const { round, index } = cmd;
      return appendMessages(deps.pool, cmd.chatId, [cmd.message], cmd.owner, cmd.runToken).then(
        (): ChatMsg => ({ t: 'tool_stored', round, index }),
        (error: unknown): ChatMsg => ({ t: 'tool_store_failed', round, index, error }),
      );
    }
    case 'store_answer':
      return settled(dbSpan(run, 'UPDATE', 'llm_calls'), storeAnswer(deps, cmd)).then(
        (stored): ChatMsg => ({ t: 'answer_stored', ...stored }),
        (error: unknown): ChatMsg => ({ t: 'answer_store_failed', error }),
      );
    case 'store_interrupted':
      return storeInterrupted(deps, cmd).then(
        (): ChatMsg => ({ t: 'interrupted_stored', error: null }),
        (error: unknown): ChatMsg => ({ t: 'interrupted_stored', error }),
      );
    case 'fail_call':
      // Never rejects: during a database outage the write is retried once the database is back.
      return failCall(deps, cmd).then((): ChatMsg => ({ t: 'call_failed' }));
  }
}

/** The model each running chat run calls, from its first command on (GenAI metrics, spans). */
const models = new WeakMap<RunHandle, { provider: string; model: string }>();

/**
 * One provider round: its text and hints become the run's messages, one each, handled by receive. It
 * is measured (GenAI metrics: duration, time to first text, tokens) and, tracing on, has its span.
 * Per delta only the first-text check: nothing allocated.
 */
function providerRound(cmd: Extract<ChatCommand, { c: 'round' }>, deps: RunDeps, tell: Tell<ChatMsg>, run: RunHandle): Promise<ChatMsg> {
  const { round } = cmd;
  const span = providerSpan(run, round);
  const began = performance.now();
  let firstAt = 0;
  // The answer's text is kept for the span only when content is captured (OTEL_GENAI_CAPTURE_CONTENT).
  let text: string | null = span !== null && keepsText(run) ? '' : null;
  const onText =
    text === null
      ? (t: string) => {
          if (firstAt === 0) firstAt = performance.now();
          tell({ t: 'text', round, text: t });
        }
      : (t: string) => {
          if (firstAt === 0) firstAt = performance.now();
          text += t;
          tell({ t: 'text', round, text: t });
        };
  const observe = (end: RoundEnd | null, error: unknown): void => {
    const call = models.get(run);
    if (call === undefined || deps.observeGenAi === undefined) return;
    const usage = end?.usage ?? null;
    deps.observeGenAi({
      ...call,
      seconds: (performance.now() - began) / 1000,
      firstChunkSeconds: firstAt === 0 ? null : (firstAt - began) / 1000,
      inputTokens: usage && usage.inputTokens,
      outputTokens: usage && usage.outputTokens,
      ...(end === null && { errorType: error instanceof Error ? error.name : 'Error' }),
    });
  };
  // The call's retries become its span's events (retry-events.ts), found by the call's signal.
  const session = run.resource<ProviderSession>(cmd.session);
  return retriesOn(run.signalOf(cmd.call), span, () => session.round(cmd.results, onText, (hint) => tell({ t: 'round_hint', round, hint }))).then(
    (end): ChatMsg => {
      observe(end, null);
      if (span !== null) endProviderSpan(span, end, text);
      return { t: 'round_end', round, end };
    },
    (error: unknown): ChatMsg => {
      observe(null, error);
      if (span !== null) endWithError(span, error);
      return { t: 'round_failed', round, error };
    },
  );
}
