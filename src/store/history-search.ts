// History search (GET /v1/workspace-items?q=…): the chats and searches one of whose fields holds every
// word of q, found by the GIN indexes of sql/006_history_search.sql. The database filters and ranks (the
// newest CANDIDATES matches of each field, sql/008); this module builds no query text from user input
// (Postgres splits q with the same parser it used on the documents, in history_tsquery) and only maps the
// rows it gets back, cutting each snippet around the hit Postgres marked.
import type { Queryable } from '../db/types.ts';
import { sliceUnits } from '../base/text.ts';
import type { ChatSummary, SearchSummary } from '../base/types.ts';
import { toChatSummary, type ChatRow } from './chat-rows.ts';
import { toSearchSummary, type SearchSummaryRow } from './search-rows.ts';

export type MatchField = 'title' | 'query' | 'message' | 'answer';

export interface HistoryMatch {
  field: MatchField;
  /** Up to SNIPPET_UNITS UTF-16 units of the field, around its first hit. */
  snippet: string;
}

export type HistoryItem = (({ type: 'chat' } & ChatSummary) | ({ type: 'search' } & SearchSummary)) & { match: HistoryMatch };

export const SNIPPET_UNITS = 200;
/** How much of the snippet comes before the hit, so the reader sees what led up to it. */
const SNIPPET_LEAD = 60;

// ts_headline marks every hit with these (private-use code points, which text almost never holds);
// the service keeps the position of the first and drops them all.
const START = '\uE000';
const STOP = '\uE001';
const HEADLINE_OPTIONS = `HighlightAll=true, StartSel=${START}, StopSel=${STOP}`;

/**
 * How many of the newest matches of each field (chat titles, messages, search titles, queries, answers)
 * are ranked. Ranking reads each candidate's tsvector, so ranking every match made a word found in most
 * messages cost hundreds of milliseconds at 100,000 messages; bounded, the worst case costs about what a
 * rare word does. The trade-off: relevance orders the newest CANDIDATES matches of each field, not all of
 * them, so an older, more relevant match of a very common word can be passed over (adding a word narrows
 * the matches and brings it back). A word in fewer than CANDIDATES rows of every field is ranked in full.
 */
export const CANDIDATES = 1000;

// Each tsvector is a stored column or exactly the expression its index was built on (sql/006), or the
// planner cannot use the index. Each field's candidates are its newest matches (chats and searches by
// their (updated_at DESC, id DESC) index, messages by seq: sql/008), taken in a subquery with its own
// LIMIT ($4, a constant at plan time like $1) so the rank is computed only for them, above it.
// history_tsquery($1) is folded to a constant at plan time too (sql/008), so the planner walks the
// newest-first index for a common word and takes the GIN index for a rare one. A title or query matches
// at full weight, a message or an answer (long text, where a word is more often a passing mention) at half.
const TQ = 'history_tsquery($1::text)';

// The text that is indexed, searched and highlighted: a field's first 65,536 characters (sql/014; its
// first hit is always there) with '<' and '>' read as U+E002 and U+E003 (sql/017), separators to the
// parser, which would otherwise take `<…>` as a tag and drop every word inside. Same length, so the
// snippet can put the brackets back (snippetAround).
const LT = '\uE002';
const GT = '\uE003';
const indexedText = (field: string) => `translate(left(${field}, 65536), '<>', E'${LT}${GT}')`;
const tsv = (field: string) => `to_tsvector('simple', ${indexedText(field)})`;
const SOURCES = `
  SELECT 'chat' AS type, c.id AS item_id, 'title' AS field, NULL::text AS message_id, 0::bigint AS place,
         ts_rank(${tsv('c.title')}, ${TQ}, 1) AS rank
    FROM (SELECT id, title FROM chats WHERE owner_id = $5 AND ${tsv('title')} @@ ${TQ}
           ORDER BY updated_at DESC, id DESC LIMIT $4) c
  UNION ALL
  SELECT 'chat', m.chat_id, 'message', m.id, m.seq, ts_rank(m.search_tsv, ${TQ}, 1) * 0.5::real
    FROM (SELECT id, chat_id, seq, search_tsv FROM messages
           WHERE search_tsv @@ ${TQ} AND chat_id IN (SELECT id FROM chats WHERE owner_id = $5)
           ORDER BY seq DESC LIMIT $4) m
  UNION ALL
  SELECT 'search', s.id, 'title', NULL, 0, ts_rank(${tsv('s.title')}, ${TQ}, 1)
    FROM (SELECT id, title FROM searches WHERE owner_id = $5 AND ${tsv('title')} @@ ${TQ}
           ORDER BY updated_at DESC, id DESC LIMIT $4) s
  UNION ALL
  SELECT 'search', s.id, 'query', NULL, 1, ts_rank(${tsv('s.query')}, ${TQ}, 1)
    FROM (SELECT id, query FROM searches WHERE owner_id = $5 AND ${tsv('query')} @@ ${TQ}
           ORDER BY updated_at DESC, id DESC LIMIT $4) s
  UNION ALL
  SELECT 'search', s.id, 'answer', NULL, 2, ts_rank(s.answer_tsv, ${TQ}, 1) * 0.5::real
    FROM (SELECT id, answer_tsv FROM searches WHERE owner_id = $5 AND answer_tsv @@ ${TQ}
           ORDER BY updated_at DESC, id DESC LIMIT $4) s`;


const SEARCH_SQL = `
  WITH hits AS (${SOURCES}),
  -- One row per item: its best field (ties: title, query, answer, then the earliest message).
  best AS (
    SELECT DISTINCT ON (type, item_id) type, item_id, field, message_id, rank
      FROM hits ORDER BY type, item_id, rank DESC, place
  ),
  top AS (
    SELECT b.*, coalesce(c.updated_at, s.updated_at) AS updated_at
      FROM best b
      LEFT JOIN chats c ON b.type = 'chat' AND c.id = b.item_id
      LEFT JOIN searches s ON b.type = 'search' AND s.id = b.item_id
     ORDER BY b.rank DESC, updated_at DESC, b.item_id DESC
     LIMIT $2
  )
  SELECT t.type, t.field, t.item_id AS id, coalesce(c.title, s.title) AS title,
         coalesce(c.created_at, s.created_at) AS created_at, t.updated_at,
         c.initiated_provider, c.initiated_model, c.last_used_provider, c.last_used_model,
         c.additional_system_prompt, c.enabled_tools, s.query, star.created_at AS starred_at,
         -- Highlighted in the indexed text only: the whole field (a pasted log of megabytes) cost ~0.35 s
         -- per megabyte and item, in the service's own thread on the embedded database, all sent back.
         ts_headline('simple',
                     ${indexedText(`CASE t.field WHEN 'message' THEN m.content WHEN 'query' THEN s.query
                                                 WHEN 'answer' THEN s.answer_text ELSE coalesce(c.title, s.title) END`)},
                     ${TQ}, $3) AS highlighted
    FROM top t
    LEFT JOIN chats c ON t.type = 'chat' AND c.id = t.item_id
    LEFT JOIN searches s ON t.type = 'search' AND s.id = t.item_id
    LEFT JOIN messages m ON m.id = t.message_id
    LEFT JOIN project_members star ON star.project_id = 'starred' AND star.item_type = t.type AND star.item_id = t.item_id
   ORDER BY t.rank DESC, t.updated_at DESC, t.item_id DESC`;

/** A chat's columns or a search's (the other's are null), and where and how the hit matched. */
interface HitRow extends ChatRow, SearchSummaryRow {
  type: 'chat' | 'search';
  field: MatchField;
  highlighted: string;
}

/**
 * The chats and searches matching `q` (already trimmed and checked: 1–200 characters), most relevant
 * first, at most `limit`. A message matches once its insert has committed: the GIN index takes it in
 * the same transaction (its pending list, which every search reads too), and, being the newest, is
 * always among the candidates. `candidates` is the bound per field (tests make it small; null, LIMIT NULL,
 * ranks every match, as before sql/008, for the bench to compare).
 */
export async function searchHistory(db: Queryable, q: string, limit: number, owner: string, candidates: number | null = CANDIDATES): Promise<HistoryItem[]> {
  const { text, values } = historySearchStatement(q, limit, owner, candidates);
  const { rows } = await db.query<HitRow>(text, values);
  return rows.map(toHistoryItem);
}

/** The one statement searchHistory sends (exported so a test can EXPLAIN it and see the indexes used). */
export function historySearchStatement(q: string, limit: number, owner: string, candidates: number | null = CANDIDATES): { text: string; values: unknown[] } {
  return { text: SEARCH_SQL, values: [q, limit, HEADLINE_OPTIONS, candidates, owner] };
}

function toHistoryItem(row: HitRow): HistoryItem {
  const match: HistoryMatch = { field: row.field, snippet: snippetAround(row.highlighted) };
  if (row.type === 'search') return { type: 'search', ...toSearchSummary(row), match };
  return { type: 'chat', ...toChatSummary(row), match };
}

/**
 * The field text (markers removed) cut to SNIPPET_UNITS around its first marked hit, never between
 * the two halves of a surrogate pair at either end.
 */
export function snippetAround(highlighted: string): string {
  // No STOP comes before the first START, so its index is the hit's offset in the unmarked text.
  const hit = Math.max(highlighted.indexOf(START), 0);
  const text = highlighted.replaceAll(START, '').replaceAll(STOP, '').replaceAll(LT, '<').replaceAll(GT, '>');
  if (text.length <= SNIPPET_UNITS) return text;
  let from = Math.max(0, Math.min(hit - SNIPPET_LEAD, text.length - SNIPPET_UNITS));
  if (isLowSurrogate(text.charCodeAt(from))) from += 1;
  return sliceUnits(text.slice(from), SNIPPET_UNITS);
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
