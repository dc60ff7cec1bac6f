// The title run: one whole call of TITLE_MODEL on provider_a with its LlmCall (purpose `title`), the
// reply cleaned, and the title stored only while the chat is still untitled (setChatTitleIfEmpty,
// one atomic statement), so a title the user sets meanwhile is kept. A failure changes nothing in
// the chat. Keyed by chatId with `join`: two suggestions at once share one model call.
import { cleanTitle, generateTitle, TITLE_TIMEOUT_MS } from '../src/chat/title.ts';
import { CHAT_NOT_FOUND } from '../src/messages.ts';
import type { Usage } from '../src/providers/types.ts';
import type { RunDeps } from '../src/run-deps.ts';
import { setChatTitleIfEmpty } from '../src/store/chats.ts';
import type { ChatSummary } from '../src/types.ts';
import type { RunContext } from './runtime/actor.ts';
import { failureOf, RunError } from './run-failure.ts';
import { failCall, finishCall, startCall } from './run-storage.ts';

export interface TitleRunRequest {
  chatId: string;
  /** The conversation's first user message, which the title names. */
  content: string;
}

export interface TitleRunValue {
  /** The chat as it now is: with the generated title, or the one a user set meanwhile. */
  chat: ChatSummary;
}

export async function titleRun(ctx: RunContext<TitleRunValue>, req: TitleRunRequest, deps: RunDeps): Promise<void> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(TITLE_TIMEOUT_MS);
  const model = deps.config.TITLE_MODEL;
  let callId: string | null = null;
  try {
    const adapter = deps.providers.get('provider_a');
    if (!adapter) throw new RunError('provider_a is not configured', 'unavailable');
    callId = await startCall(deps, { chatId: req.chatId, provider: 'provider_a', model, purpose: 'title' });
    let title: string;
    let usage: Usage | null;
    try {
      const out = await generateTitle(adapter, model, req.content, AbortSignal.any([ctx.signal, timeout]));
      title = cleanTitle(out.text);
      usage = out.usage;
    } catch (err) {
      if (!timeout.aborted || ctx.signal.aborted) throw err;
      throw new RunError(`timed out after ${TITLE_TIMEOUT_MS} ms`, 'provider_timeout');
    }
    if (!title) throw new RunError(`${model} returned no usable title`, 'provider_error');
    try {
      await finishCall(deps, { callId, usage, started });
    } catch (err) {
      // The answer cannot be kept, so the call failed: say so once the database is back.
      throw new RunError(`title could not be stored: ${err instanceof Error ? err.message : String(err)}`, 'internal');
    }
    const chat = await setChatTitleIfEmpty(deps.pool, req.chatId, title);
    if (!chat) {
      ctx.finish('error', { message: CHAT_NOT_FOUND }, { ok: false, outcome: 'not_found', message: CHAT_NOT_FOUND });
      return;
    }
    ctx.finish('done', { chat }, { ok: true, value: { chat } });
  } catch (err) {
    const failure = failureOf(err, ctx.signal);
    failure.message = `title generation failed: ${failure.message}`;
    if (callId) await failCall(deps, { callId, error: failure.message, started });
    ctx.finish('error', { message: failure.message }, failure);
  }
}
