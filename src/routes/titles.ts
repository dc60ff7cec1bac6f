// POST /v1/chats/title/suggest: a short title for an untitled chat, from TITLE_MODEL on provider_a.
// A chat that already has a title is returned as it is, without a model call. The title is stored
// only while the chat is still untitled (setChatTitleIfEmpty, one atomic statement), so a title the
// user sets while generation is in flight is kept. A failed generation changes nothing in the chat.
import type { AppContext } from '../context.ts';
import { readJson } from '../http/body.ts';
import { badRequest, HttpError, notFound, CHAT_NOT_FOUND } from '../http/errors.ts';
import type { Route } from '../http/router.ts';
import { isAbortError, providerKeyVariable } from '../providers/index.ts';
import type { ProviderAdapter, Usage } from '../providers/types.ts';
import { suggestTitleSchema } from '../schemas.ts';
import { getChat, setChatTitleIfEmpty } from '../store/chats.ts';
import { finishLlmCall, recordLlmCallFailure, startLlmCall } from '../store/llm-calls.ts';
import { sliceUnits } from '../text.ts';

export const TITLE_INSTRUCTION =
  'You write titles for chat conversations. Reply with a title for the conversation that starts with the ' +
  "user's message: one line, about 4 words at most, in the message's language, no quotes, no trailing punctuation. " +
  'Reply with the title only.';

export const TITLE_MAX_WORDS = 6;
export const TITLE_MAX_CHARS = 80;
/** The start of the message is enough to name it; the rest would only cost tokens. */
const CONTENT_CHARS = 4000;
export const TITLE_TIMEOUT_MS = 30_000;

const QUOTES = `"'\`“”‘’«»„`;
const EDGE_QUOTES = new RegExp(`^[${QUOTES}]+|[${QUOTES}]+$`, 'g');
const TRAILING_PUNCT = /[\s.,;:!?…。、，！？]+$/u;

/**
 * The model's reply as a title: its first non-blank line without a `Title:` label, markdown marks or
 * surrounding quotes, no trailing punctuation, at most TITLE_MAX_WORDS words and TITLE_MAX_CHARS
 * characters. Empty when nothing usable is left.
 */
export function cleanTitle(raw: string): string {
  const line = raw.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '') ?? '';
  let t = line
    .replace(/^#+\s*/, '')
    .replace(/\*\*|__/g, '')
    .replace(/^title\s*[:：-]\s*/i, '')
    .trim();
  for (let prev = ''; prev !== t; ) {
    prev = t;
    t = t.replace(EDGE_QUOTES, '').replace(TRAILING_PUNCT, '').trim();
  }
  t = t.replace(/\s+/g, ' ');
  const words = t.split(' ');
  if (words.length > TITLE_MAX_WORDS) t = words.slice(0, TITLE_MAX_WORDS).join(' ');
  if (t.length > TITLE_MAX_CHARS) {
    const cut = sliceUnits(t, TITLE_MAX_CHARS);
    const space = cut.lastIndexOf(' ');
    t = space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut;
  }
  return t.replace(TRAILING_PUNCT, '').replace(EDGE_QUOTES, '').trim();
}

async function generateTitle(adapter: ProviderAdapter, model: string, content: string, signal: AbortSignal): Promise<{ text: string; usage: Usage | null }> {
  const session = adapter.startSession({
    model,
    messages: [
      { role: 'system', content: TITLE_INSTRUCTION },
      { role: 'user', content: sliceUnits(content, CONTENT_CHARS) },
    ],
    tools: [],
    stream: false,
    signal,
  });
  let text = '';
  const end = await session.round(null, (t) => {
    text += t;
  });
  return { text, usage: end.usage };
}

export function titleRoutes(app: AppContext): Route[] {
  const { pool, config } = app;
  return [
    {
      method: 'POST',
      path: '/v1/chats/title/suggest',
      handler: async (req, reply) => {
        const body = await readJson(req, suggestTitleSchema);
        const chat = await getChat(pool, body.chatId);
        if (!chat) throw notFound(CHAT_NOT_FOUND);
        if (chat.title?.trim()) return reply.json(200, { chat });
        if (!body.content.trim()) throw badRequest('content must not be blank: the title is made from it');
        const adapter = app.providers.get('provider_a');
        if (!adapter) throw new HttpError(503, `title suggestion needs provider_a: set ${providerKeyVariable('provider_a')}`);

        const model = config.TITLE_MODEL;
        const started = performance.now();
        const callId = await startLlmCall(pool, { chatId: chat.id, provider: 'provider_a', model, instanceId: config.instanceId, purpose: 'title' });
        const signal = AbortSignal.timeout(TITLE_TIMEOUT_MS);
        let title: string;
        let usage: Usage | null;
        try {
          const out = await generateTitle(adapter, model, body.content, signal);
          title = cleanTitle(out.text);
          usage = out.usage;
          if (!title) throw new Error(`${model} returned no usable title`);
        } catch (err) {
          const timedOut = signal.aborted || isAbortError(err);
          const reason = timedOut ? `timed out after ${TITLE_TIMEOUT_MS} ms` : err instanceof Error ? err.message : String(err);
          const message = `title generation failed: ${reason}`;
          await recordLlmCallFailure(pool, { callId, error: message, latencyMs: performance.now() - started });
          throw new HttpError(timedOut ? 504 : 502, message);
        }
        try {
          await finishLlmCall(pool, { callId, usage, latencyMs: performance.now() - started });
        } catch (err) {
          // The answer cannot be kept, so the call failed: say so once the database is back.
          const message = `title could not be stored: ${err instanceof Error ? err.message : String(err)}`;
          await recordLlmCallFailure(pool, { callId, error: message, latencyMs: performance.now() - started });
          throw err;
        }
        const current = await setChatTitleIfEmpty(pool, chat.id, title);
        if (!current) throw notFound(CHAT_NOT_FOUND);
        reply.json(200, { chat: current });
      },
    },
  ];
}
