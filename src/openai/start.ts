// Starting a façade run: the same registry, limits and refusals as the spec's completions
// (src/routes/completions.ts), answered in the OpenAI envelope by the router.
import type { ChatRunRequest, ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { Caller } from '../auth/caller.ts';
import type { AppContext } from '../service/context.ts';
import { outcomeError } from '../http/outcomes.ts';
import { ACTIVE_CHAT_STREAM_EXISTS } from '../base/messages.ts';

export interface StartedRun {
  runId: string;
  result: Promise<RunResult<ChatRunValue>>;
}

/**
 * The caller's budget, then the run (keyed by its chat when it has one: one run per chat). A refusal
 * throws the status the spec's API gives it (409 for a chat whose run is going).
 */
export async function startChatRun(app: AppContext, caller: Caller, request: ChatRunRequest, subscriber?: Subscriber, cancelWhenAlone = false): Promise<StartedRun> {
  const budget = app.limits.checkBudgets(caller);
  if (budget) await budget;
  const limits = app.limits.runOptions(caller);
  const started = await app.runs.start({ kind: 'chat', key: request.chatId, request, ifRunning: 'reject', label: request.provider, subscriber, cancelWhenAlone, ...limits });
  if (!started.ok) {
    if (started.outcome === 'busy') {
      app.metrics.startConflicts.inc({ kind: 'chat' });
      throw outcomeError(started, ACTIVE_CHAT_STREAM_EXISTS);
    }
    throw outcomeError(started);
  }
  return { runId: started.handle.runId, result: started.handle.result };
}
