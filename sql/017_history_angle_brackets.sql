-- 017_history_angle_brackets: words between angle brackets are found.
--
-- The text search parser takes anything shaped like an XML tag, `<…>`, as one token of type "tag",
-- which the 'simple' configuration does not index: "#include <stdio.h>" had no 'stdio.h',
-- "List<String>" no 'string', "<Button>" and "x<y and z>w" lost every word inside. Chats are full of
-- code and markup, and a q such as "<Button>" had no words at all. Every text is now indexed (and q
-- split) with '<' and '>' read as the private-use characters U+E002 and U+E003, which the parser takes
-- as separators, so the words inside are words; the store highlights the same text and puts the
-- brackets back for the snippet (src/store/history-search.ts). Same bound of 65,536 characters as in
-- 014, same tsquery rules as in 016. Re-adding the generated columns rewrites messages and searches
-- (as 014 did): on a large database this migration takes a while, once.

CREATE OR REPLACE FUNCTION history_tsquery(q text) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  WITH words AS (
    SELECT t.lexeme, (SELECT max(p) FROM unnest(t.positions) p) AS pos
      FROM unnest(to_tsvector('simple'::regconfig, translate(q, '<>', E'\uE002\uE003'))) t
  ),
  last_part AS (SELECT lexeme, pos FROM words ORDER BY pos DESC LIMIT 1),
  typed AS (SELECT t.lexeme FROM unnest(to_tsvector('simple'::regconfig, translate(substring(q FROM '(\S+)\s*$'), '<>', E'\uE002\uE003'))) t)
  SELECT string_agg('''' || replace(replace(w.lexeme, '\', '\\'), '''', '''''') || ''''
                      || CASE WHEN w.pos = l.pos
                                 OR (w.lexeme IN (SELECT lexeme FROM typed) AND right(w.lexeme, length(l.lexeme)) = l.lexeme)
                              THEN ':*' ELSE '' END,
                    ' & ')::tsquery
    FROM words w CROSS JOIN last_part l
$$;

ALTER TABLE messages DROP COLUMN search_tsv;
ALTER TABLE messages ADD COLUMN search_tsv tsvector
  GENERATED ALWAYS AS (CASE WHEN role IN ('user', 'assistant')
                            THEN to_tsvector('simple', translate(left(content, 65536), '<>', E'\uE002\uE003')) END) STORED;
CREATE INDEX messages_search_idx ON messages USING gin (search_tsv);

ALTER TABLE searches DROP COLUMN answer_tsv;
ALTER TABLE searches ADD COLUMN answer_tsv tsvector
  GENERATED ALWAYS AS (to_tsvector('simple', translate(left(answer_text, 65536), '<>', E'\uE002\uE003'))) STORED;
CREATE INDEX searches_answer_search_idx ON searches USING gin (answer_tsv);

DROP INDEX chats_title_search_idx;
CREATE INDEX chats_title_search_idx ON chats USING gin (to_tsvector('simple', translate(left(title, 65536), '<>', E'\uE002\uE003')));
DROP INDEX searches_title_search_idx;
CREATE INDEX searches_title_search_idx ON searches USING gin (to_tsvector('simple', translate(left(title, 65536), '<>', E'\uE002\uE003')));
DROP INDEX searches_query_search_idx;
CREATE INDEX searches_query_search_idx ON searches USING gin (to_tsvector('simple', translate(left(query, 65536), '<>', E'\uE002\uE003')));
