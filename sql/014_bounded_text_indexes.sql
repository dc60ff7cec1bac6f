-- 014_bounded_text_indexes: text of any length the API accepts can be stored. Two index limits made
-- long text a 500 (and a chat run that had already called its provider lost its answer):
-- - Postgres refuses a tsvector over 1 MB: a message, answer or title of a few MB of distinct words
--   (pasted logs) could not be written. History search now reads the first 65,536 characters of each
--   text (a tsvector of at most about 400 KB, whatever the text), as Postgres itself stops recording
--   word positions past 16,383.
-- - A btree entry is at most 2,704 bytes: a search query of about 2.7 KB (900 characters of Chinese)
--   could not be created or run. The reuse look-up now finds the query through its md5 and then
--   compares the text itself (src/store/searches.ts).
-- The store (src/store/history-search.ts) repeats these expressions exactly, or the planner cannot use
-- the indexes. Re-adding the generated columns rewrites messages and searches: on a large database
-- this migration takes a while, once.

ALTER TABLE messages DROP COLUMN search_tsv;
ALTER TABLE messages ADD COLUMN search_tsv tsvector
  GENERATED ALWAYS AS (CASE WHEN role IN ('user', 'assistant') THEN to_tsvector('simple', left(content, 65536)) END) STORED;
CREATE INDEX messages_search_idx ON messages USING gin (search_tsv);

ALTER TABLE searches DROP COLUMN answer_tsv;
ALTER TABLE searches ADD COLUMN answer_tsv tsvector
  GENERATED ALWAYS AS (to_tsvector('simple', left(answer_text, 65536))) STORED;
CREATE INDEX searches_answer_search_idx ON searches USING gin (answer_tsv);

DROP INDEX chats_title_search_idx;
CREATE INDEX chats_title_search_idx ON chats USING gin (to_tsvector('simple', left(title, 65536)));
DROP INDEX searches_title_search_idx;
CREATE INDEX searches_title_search_idx ON searches USING gin (to_tsvector('simple', left(title, 65536)));
DROP INDEX searches_query_search_idx;
CREATE INDEX searches_query_search_idx ON searches USING gin (to_tsvector('simple', left(query, 65536)));

DROP INDEX searches_owner_query_idx;
CREATE INDEX searches_owner_query_idx ON searches (owner_id, md5(normalized_query), updated_at DESC);
