-- 006_history_search: GET /v1/workspace-items?q=… finds chats and searches by the words of their titles,
-- search queries, user and assistant messages and search answers, through GIN indexes over tsvectors.
--
-- Configuration 'simple' (lowercase, nothing else): users write in many languages and a chat does not say
-- which, so a language's stemmer or stop-word list ('english', …) would mangle the others, and dropping
-- stop words would make a quoted phrase like "to be or not" unfindable. Prefix matching of the last word
-- covers most of what stemming would. 'simple' is built into every Postgres, PGlite included, and
-- lowercases non-ASCII letters too (ÉCOLE finds école) on both.
--
-- Expression indexes, not stored tsvector columns: a write pays only the index entry (no second copy of
-- the text in the heap), existing columns and `SELECT *` stay as they were, and CREATE INDEX fills the
-- index from the rows already there, which is the backfill. The store (src/store/history-search.ts)
-- repeats these expressions exactly, or the planner cannot use the indexes.

-- Only what a person said or read: system prompts and tool output are not "history".
CREATE INDEX messages_search_idx ON messages USING gin (to_tsvector('simple', content))
  WHERE role IN ('user', 'assistant');

CREATE INDEX chats_title_search_idx ON chats USING gin (to_tsvector('simple', title));

CREATE INDEX searches_title_search_idx ON searches USING gin (to_tsvector('simple', title));
CREATE INDEX searches_query_search_idx ON searches USING gin (to_tsvector('simple', query));
CREATE INDEX searches_answer_search_idx ON searches USING gin (to_tsvector('simple', answer_text));
