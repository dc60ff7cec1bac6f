-- 016_history_prefix_compound: the word being typed is a prefix however many parts it has.
--
-- The parser indexes a word of several parts (a hyphenated word, a URL) as the whole and then each
-- part: "state-of-the" gives 'state-of-the', 'state', 'of', 'the'. history_tsquery (sql/008) made only
-- the lexeme at the last position a prefix, the last part, so the whole stayed exact: "state-of-the"
-- did not find "state-of-the-art", nor "covid-1" "covid-19", nor a URL typed up to its middle, until
-- the word was complete (a search as you type that empties mid-word). Now the lexemes of the last
-- whitespace-separated word that end with its last part (the whole, and that part) are prefixes, and
-- the lexeme at the last position still is (the last word when punctuation without words follows it);
-- the earlier parts and the earlier words stay exact. Same text, quoting and plan-time folding
-- (IMMUTABLE) as in 008.
CREATE OR REPLACE FUNCTION history_tsquery(q text) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  WITH words AS (
    SELECT t.lexeme, (SELECT max(p) FROM unnest(t.positions) p) AS pos
      FROM unnest(to_tsvector('simple'::regconfig, q)) t
  ),
  last_part AS (SELECT lexeme, pos FROM words ORDER BY pos DESC LIMIT 1),
  typed AS (SELECT t.lexeme FROM unnest(to_tsvector('simple'::regconfig, substring(q FROM '(\S+)\s*$'))) t)
  SELECT string_agg('''' || replace(replace(w.lexeme, '\', '\\'), '''', '''''') || ''''
                      || CASE WHEN w.pos = l.pos
                                 OR (w.lexeme IN (SELECT lexeme FROM typed) AND right(w.lexeme, length(l.lexeme)) = l.lexeme)
                              THEN ':*' ELSE '' END,
                    ' & ')::tsquery
    FROM words w CROSS JOIN last_part l
$$;
