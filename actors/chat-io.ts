// The chat run's I/O: each command its receive starts, carried out here, and answered with the
// message that reports its outcome (failures included: an executor never rejects by design). The
// provider's text callback only pushes messages into the run's mailbox.
import type { RunDeps } from '../src/run-deps.ts';
import { appendMessages } from '../src/store/messages.ts';
import { dbSpan, endProviderSpan, endToolSpan, keepsText, providerSpan, settled, toolSpan, traceRun } from '../src/telemetry/actor-spans.ts';
import { endWithError } from '../src/telemetry/tracing.ts';
import type { RunHandle, Tell } from './runtime/actor.ts';
import { runTool } from './chat-tools.ts';
import type { ChatCommand, ChatMsg } from './chat-protocol.ts';
import type { Span } from '@opentelemetry/api';
import { failCall, prepareChat, storeAnswer, storeInterrupted } from './run-storage.ts';

export async function executeChat(cmd: ChatCommand, deps: RunDeps, tell: Tell<ChatMsg>, run: RunHandle): Promise<ChatMsg> {
  switch (cmd.c) {
    case 'prepare':
      // Tracing: the run's work is traced under the run's span from here on (src/telemetry/actor-spans.ts).
      traceRun(run, cmd.req);
      // The start's first statement answered, either way: the start leaves the host's backlog
      // (OVERLOAD_START_BACKLOG counts a chat start until then, so a database falling behind the starts
      // refuses the next ones).
      return settled(dbSpan(run, cmd.req.createChat ? 'INSERT' : 'UPDATE', 'chats'), prepareChat(cmd.req, deps)).finally(() => run.startSettled()).then(
        (p): ChatMsg => {
          // Stored with its fencing token: from now on its streamed text is checkpointed (CHECKPOINT_MS).
          const { callId, chatId } = cmd.req;
          if (p.runToken !== null && callId && chatId) deps.checkpoints?.track(run, { callId, chatId, runToken: p.runToken });
          return { t: 'prepared', runToken: p.runToken };
        },
        (error: unknown): ChatMsg => ({ t: 'prepare_failed', error }),
      );
    case 'round': {
      const { round } = cmd;
      const span = providerSpan(run, round);
      if (span !== null) return tracedRound(cmd, tell, run, span);
      // One callback per round; each piece of text becomes one message, handled by receive.
      return cmd.session.round(
        cmd.results,
        (text) => tell({ t: 'text', round, text }),
        (hint) => tell({ t: 'round_hint', round, hint }),
      ).then(
        (end): ChatMsg => ({ t: 'round_end', round, end }),
        (error: unknown): ChatMsg => ({ t: 'round_failed', round, error }),
      );
    }
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
      return appendMessages(deps.pool, cmd.chatId, [cmd.message], cmd.runToken).then(
        (): ChatMsg => ({ t: 'tool_stored', round, index }),
        (error: unknown): ChatMsg => ({ t: 'tool_store_failed', round, index, error }),
      );
    }
    case 'store_answer':
      return settled(dbSpan(run, 'UPDATE', 'llm_calls'), storeAnswer(deps, cmd)).then(
        (): ChatMsg => ({ t: 'answer_stored' }),
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

/** A round with its provider span (tracing on): the same messages, the span ended with the round. */
function tracedRound(cmd: Extract<ChatCommand, { c: 'round' }>, tell: Tell<ChatMsg>, run: RunHandle, span: Span): Promise<ChatMsg> {
  const { round } = cmd;
  // The answer's text is kept for the span only when content is captured (OTEL_GENAI_CAPTURE_CONTENT).
  let text: string | null = keepsText(run) ? '' : null;
  const onText =
    text === null
      ? (t: string) => tell({ t: 'text', round, text: t })
      : (t: string) => {
          text += t;
          tell({ t: 'text', round, text: t });
        };
  return cmd.session.round(cmd.results, onText, (hint) => tell({ t: 'round_hint', round, hint })).then(
    (end): ChatMsg => {
      endProviderSpan(span, end, text);
      return { t: 'round_end', round, end };
    },
    (error: unknown): ChatMsg => {
      endWithError(span, error);
      return { t: 'round_failed', round, error };
    },
  );
}
