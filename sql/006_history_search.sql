-- 006_history_search: GET /v1/workspace-items?q=… finds chats and searches by the words of their titles,
-- search queries, user and assistant messages and search answers, through GIN indexes over tsvectors.
--
-- Configuration 'simple' (lowercase, nothing else): users write in many languages and a chat does not say
-- which, so a language's stemmer or stop-word list ('english', …) would mangle the others, and dropping
-- stop words would make a quoted phrase like "to be or not" unfindable. Prefix matching of the last word
-- covers most of what stemming would. 'simple' is built into every Postgres, PGlite included, and
-- lowercases non-ASCII letters too (ÉCOLE finds école) on both.
--
-- Long text (messages, answers) keeps its tsvector in a stored generated column: ranking reads it
-- instead of parsing the text again for every matching row (at 100,000 messages, parsing on read made a
-- common word cost seconds), and a write parses once, as an expression index would. Short text (titles,
-- queries) is indexed by expression: parsing a few words again is cheaper than storing them twice.
-- Adding the columns rewrites the tables and CREATE INDEX reads the rows already there: that is the
-- backfill. The store (src/store/history-search.ts) repeats these expressions exactly, or the planner
-- cannot use the indexes.

-- Only what a person said or read: system prompts and tool output are not "history" (NULL: no entry).
ALTER TABLE messages ADD COLUMN search_tsv tsvector
  GENERATED ALWAYS AS (CASE WHEN role IN ('user', 'assistant') THEN to_tsvector('simple', content) END) STORED;
CREATE INDEX messages_search_idx ON messages USING gin (search_tsv);

ALTER TABLE searches ADD COLUMN answer_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', answer_text)) STORED;
CREATE INDEX searches_answer_search_idx ON searches USING gin (answer_tsv);

CREATE INDEX chats_title_search_idx ON chats USING gin (to_tsvector('simple', title));
CREATE INDEX searches_title_search_idx ON searches USING gin (to_tsvector('simple', title));
CREATE INDEX searches_query_search_idx ON searches USING gin (to_tsvector('simple', query));
