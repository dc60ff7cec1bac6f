// The hidden `system` message a chat started from a search is seeded with (POST
// /v1/searches/:searchId/chat): the query, the answer with its citations, and the top results, as
// plain text a model reads well. The UI hides it by role; `metadata.kind` says where it came from.
import type { NewMessage } from '../store/messages.ts';
import type { SearchDetail } from '../base/types.ts';
import { sliceUnits } from '../base/text.ts';

/** How many ranked results go into the seed (the answer's citations all do). */
export const SEED_TOP_RESULTS = 5;
const FIELD_CHARS = 500;

export const SEARCH_CONTEXT_KIND = 'search_context';

function clip(text: string, max = FIELD_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${sliceUnits(flat, max)}…` : flat;
}

export function defaultSearchChatTitle(search: Pick<SearchDetail, 'query' | 'title'>): string {
  const subject = search.query.trim() || search.title.trim();
  return subject ? `Search: ${subject}` : 'Search';
}

export function searchSeedText(search: SearchDetail): string {
  const lines: string[] = [
    'Context from a web search the user ran before starting this chat. Use it to answer follow-up questions, ' +
      'and cite the URLs below when you rely on them.',
    '',
    `Query: ${search.query || search.title || '(none)'}`,
  ];

  lines.push('', 'Answer:');
  if (search.answerText) lines.push(search.answerText.trim());
  else lines.push(search.answerError ? `(no answer: ${search.answerError})` : '(no answer)');

  if (search.answerCitations.length) {
    lines.push('', 'Answer citations:');
    search.answerCitations.forEach((c, i) => {
      const meta = [c.author, c.publishedDate?.slice(0, 10)].filter(Boolean).join(', ');
      lines.push(`${i + 1}. ${c.title ? clip(c.title, 200) : '(untitled)'} — ${c.url}${meta ? ` (${meta})` : ''}`);
    });
  }

  const top = search.results.slice(0, SEED_TOP_RESULTS);
  lines.push('', top.length ? `Top results (${top.length} of ${search.results.length}):` : 'Top results:');
  if (!top.length) lines.push(search.error ? `(no results: ${search.error})` : '(no results)');
  top.forEach((r, i) => {
    lines.push(`${i + 1}. ${r.title ? clip(r.title, 200) : '(untitled)'}`, `   URL: ${r.url}`);
    if (r.publishedDate) lines.push(`   Published: ${r.publishedDate.slice(0, 10)}`);
    if (r.summary) lines.push(`   Summary: ${clip(r.summary)}`);
    if (r.snippet && r.snippet !== r.summary) lines.push(`   Snippet: ${clip(r.snippet)}`);
  });
  return lines.join('\n');
}

export function searchSeedMessage(search: SearchDetail): NewMessage {
  return {
    role: 'system',
    content: searchSeedText(search),
    metadata: { kind: SEARCH_CONTEXT_KIND, searchId: search.id },
  };
}
