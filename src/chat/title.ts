// Titles for chats: the instruction given to TITLE_MODEL, the call, and the cleaning of its reply.
// The title run (actors/title-run.ts) makes the call through the runtime like any other model call.
import type { ProviderAdapter, RoundEnd, Usage } from '../providers/types.ts';
import { sliceUnits } from '../base/text.ts';

export const TITLE_INSTRUCTION =
  'You write titles for chat conversations. Reply with a title for the conversation that starts with the ' +
  "user's message: one line, about 4 words at most, in the message's language, no quotes, no trailing punctuation. " +
  'Reply with the title only.';

export const TITLE_MAX_WORDS = 6;
export const TITLE_MAX_CHARS = 80;
/** The start of the message is enough to name it; the rest would only cost tokens. */
const CONTENT_CHARS = 4000;
export const TITLE_TIMEOUT_MS = 30_000;

/** Each quote mark and the marks that can close (or open) a quotation with it. */
const PARTNERS: Record<string, string> = { '"': '"', "'": "'", '`': '`', '“': '”„', '”': '“„', '„': '“”', '‘': '’', '’': '‘', '«': '»', '»': '«' };
const TRAILING_PUNCT = /[\s.,;:!?…。、，！？]+$/u;

/**
 * `t` without the quotes around it: a pair around the whole title (with no other of those marks inside),
 * or a mark at either end with no partner anywhere in it. Quotes that belong to the title stay, as in
 * `Review of "Dune"` or `"Dune" Explained`.
 */
function unquote(t: string): string {
  for (;;) {
    const first = t[0] ?? '';
    const last = t.at(-1) ?? '';
    const inner = t.slice(1, -1);
    if (t.length >= 2 && PARTNERS[first]?.includes(last) && !inner.includes(first) && !inner.includes(last)) t = inner.trim();
    else if (PARTNERS[first] && ![...t.slice(1)].some((c) => PARTNERS[first]!.includes(c))) t = t.slice(1).trim();
    else if (PARTNERS[last] && ![...t.slice(0, -1)].some((c) => PARTNERS[last]!.includes(c))) t = t.slice(0, -1).trim();
    else return t;
  }
}

/**
 * The model's reply as a title: its first non-blank line (after any lead-in ending with a colon) without
 * a `Title:` label, markdown marks or surrounding quotes, no trailing punctuation, at most TITLE_MAX_WORDS
 * words and TITLE_MAX_CHARS characters. Empty when nothing usable is left.
 */
export function cleanTitle(raw: string): string {
  const lines = raw.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  // A line ending with a colon that has a line after it only announces the title ("Here is a title:").
  const line = lines.find((l, i) => !/[:：][*_]*$/.test(l) || i === lines.length - 1) ?? '';
  let t = line
    .replace(/^#+\s*/, '')
    .replace(/\*\*|__/g, '')
    .replace(/^title\s*[:：-]\s*/i, '')
    .trim();
  for (let prev = ''; prev !== t; ) {
    prev = t;
    t = unquote(t).replace(TRAILING_PUNCT, '').trim();
  }
  t = t.replace(/\s+/g, ' ');
  const words = t.split(' ');
  if (words.length > TITLE_MAX_WORDS) t = words.slice(0, TITLE_MAX_WORDS).join(' ');
  if (t.length > TITLE_MAX_CHARS) {
    const cut = sliceUnits(t, TITLE_MAX_CHARS);
    const space = cut.lastIndexOf(' ');
    t = space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut;
  }
  return unquote(t.replace(TRAILING_PUNCT, '').trim());
}

/** One whole (non-streamed) call of `model` for a title; the text as the model wrote it. */
export async function generateTitle(adapter: ProviderAdapter, model: string, content: string, signal: AbortSignal): Promise<{ text: string; usage: Usage | null; end: RoundEnd }> {
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
  // `end` whole: the provider call's span reads its finish reason, response model and id (actor-spans.ts).
  return { text, usage: end.usage, end };
}
