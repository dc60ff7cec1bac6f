// The chat run's I/O: each command its receive starts, carried out here, and answered with the
// message that reports its outcome (failures included: an executor never rejects by design). The
// provider's text callback only pushes messages into the run's mailbox.
import type { RunDeps } from '../src/run-deps.ts';
import { appendMessages } from '../src/store/messages.ts';
import type { RunHandle, Tell } from './runtime/actor.ts';
import { runTool } from './chat-tools.ts';
import type { ChatCommand, ChatMsg } from './chat-protocol.ts';
import { failCall, prepareChat, storeAnswer, storeInterrupted } from './run-storage.ts';

export async function executeChat(cmd: ChatCommand, deps: RunDeps, tell: Tell<ChatMsg>, run: RunHandle): Promise<ChatMsg> {
  switch (cmd.c) {
    case 'prepare':
      // The start's first statement answered, either way: the start leaves the host's backlog
      // (OVERLOAD_START_BACKLOG counts a chat start until then, so a database falling behind the starts
      // refuses the next ones).
      return prepareChat(cmd.req, deps).finally(() => run.startSettled()).then(
        (p): ChatMsg => {
          // Stored with its fencing token: from now on its streamed text is checkpointed (CHECKPOINT_MS).
          const { callId, chatId } = cmd.req;
          // A takeover's call already holds the resumed text it streams first (store/takeover.ts).
          if (p.runToken !== null && callId && chatId) deps.checkpoints?.track(run, { callId, chatId, runToken: p.runToken, stored: cmd.req.resume?.text.length });
          return { t: 'prepared', runToken: p.runToken };
        },
        (error: unknown): ChatMsg => ({ t: 'prepare_failed', error }),
      );
    case 'round': {
      const { round } = cmd;
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
    case 'tool':
      return runTool(cmd, { config: deps.config, signal: cmd.signal, cpu: deps.cpu });
    case 'store_tool': {
      const { round, index } = cmd;
      return appendMessages(deps.pool, cmd.chatId, [cmd.message], cmd.owner, cmd.runToken).then(
        (): ChatMsg => ({ t: 'tool_stored', round, index }),
        (error: unknown): ChatMsg => ({ t: 'tool_store_failed', round, index, error }),
      );
    }
    case 'store_answer':
      return storeAnswer(deps, cmd).then(
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
