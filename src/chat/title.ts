// Titles for chats: the instruction given to TITLE_MODEL, the call, and the cleaning of its reply.
// The title run (actors/title-run.ts) makes the call through the runtime like any other model call.
import type { ProviderAdapter, Usage } from '../providers/types.ts';
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

/** One whole (non-streamed) call of `model` for a title; the text as the model wrote it. */
export async function generateTitle(adapter: ProviderAdapter, model: string, content: string, signal: AbortSignal): Promise<{ text: string; usage: Usage | null }> {
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
