-- 008_history_search_bounded: history search ranks a bounded candidate set, the newest matches of each
-- field, instead of every match. A word in most messages (the commonest words) matched tens of thousands
-- of rows at 100,000 messages, and reading and ranking each took hundreds of milliseconds; the newest N
-- of them are found by walking an index in "newest first" order and stopping after N (the planner picks
-- that walk for a common word and the GIN index for a rare one, from the column's statistics).
--
-- Messages had no index in that order (messages_chat_seq_idx leads with chat_id); seq is the insertion
-- order. Chats and searches already have (updated_at DESC, id DESC) from 001.
CREATE INDEX messages_seq_idx ON messages (seq);

-- q → tsquery, moved here from the store's statement (same text, same rules): to_tsvector splits and
-- lowercases q like any document, each lexeme becomes a quoted operand, all ANDed, and the lexeme at the
-- last position (the word being typed) becomes a prefix; a q without words gives NULL (matches nothing).
-- IMMUTABLE (to_tsvector with an explicit configuration is), so the planner evaluates it once while
-- planning a statement whose q is a bound parameter, and chooses between the index walk and the GIN
-- index knowing how common the words are; computed inside the statement it was an unknown at plan time.
CREATE FUNCTION history_tsquery(q text) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  WITH words AS (
    SELECT t.lexeme, (SELECT max(p) FROM unnest(t.positions) p) AS pos
      FROM unnest(to_tsvector('simple'::regconfig, q)) t
  )
  SELECT string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || ''''
                      || CASE WHEN pos = (SELECT max(pos) FROM words) THEN ':*' ELSE '' END,
                    ' & ')::tsquery
    FROM words
$$;
