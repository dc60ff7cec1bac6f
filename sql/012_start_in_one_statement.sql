-- 012_start_in_one_statement: a run's start on an existing chat in one round trip (src/store/chats.ts,
-- startChatRun). Before, the run read the whole transcript (one statement) to find which of the
-- client's supplied messages were new, then appended them with its LlmCall and took the fencing token
-- (a second one). The rule that picks the new messages is sequential (each supplied message matched
-- against the stored ones after the previous match), which a data-modifying CTE cannot say; a
-- function can, on Postgres and on the embedded PGlite alike.
--
-- The chat row is updated (and so locked) first: the transcript is then read under that lock with a
-- fresh snapshot, so a concurrent start or append on the chat is either seen whole or waits.
--
-- Arguments: the chat and its owner (another user's chat is absent: NULL, nothing written); the
-- provider and model used; `msgs`, a JSON array of {id, ord, role, content, name, metadata} (ids made
-- by the caller, `ord` fixes the order); `supplied`: true when `msgs` is the client's whole history, of
-- which only the messages not yet stored are appended (assistant messages are never sent); false
-- appends every one; `call_id` (NULL: no LlmCall) and `instance`. Returns the run's fencing token.
CREATE FUNCTION start_chat_run(p_chat text, p_owner text, p_provider text, p_model text, p_msgs json,
                               p_supplied boolean, p_call text, p_instance text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  token integer;
  -- A supplied message (its ord) with the positions of the stored messages equal to it, ascending.
  m record;
  k bigint;
  hit bigint;
  -- The position of the last stored message matched so far.
  last_match bigint := 0;
  -- The ords of the supplied messages found stored: not appended again.
  stored int[] := '{}';
BEGIN
  -- lastUsed* every time, initiated* only while unset: the spec's "first call, successful or failed".
  UPDATE chats
     SET last_used_provider = p_provider,
         last_used_model = p_model,
         initiated_model = CASE WHEN initiated_provider IS NULL THEN p_model ELSE initiated_model END,
         initiated_provider = COALESCE(initiated_provider, p_provider),
         updated_at = now(),
         run_token = run_token + 1
   WHERE id = p_chat AND owner_id = p_owner
  RETURNING run_token INTO token;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;

  IF p_supplied THEN
    -- Clients send the whole history each time: each supplied message is matched, in order, against
    -- the stored transcript (role and content), skipping stored messages the client left out (hidden
    -- system messages, tool logs, answers). One hash join finds every candidate position; the walk
    -- below keeps the first one after the previous match.
    FOR m IN
      SELECT x.ord, array_agg(c.pos ORDER BY c.pos) FILTER (WHERE c.pos IS NOT NULL) AS positions
        FROM json_to_recordset(p_msgs) AS x(ord int, role text, content text)
        LEFT JOIN (SELECT row_number() OVER (ORDER BY seq) AS pos, role, content
                     FROM messages
                    WHERE chat_id = p_chat AND role <> 'assistant'
                      AND (role, metadata->>'kind') IS DISTINCT FROM ('tool', 'tool_call')) c
          ON c.role = x.role AND c.content = x.content
       GROUP BY x.ord
       ORDER BY x.ord
    LOOP
      hit := NULL;
      IF m.positions IS NOT NULL THEN
        FOREACH k IN ARRAY m.positions LOOP
          IF k > last_match THEN
            hit := k;
            EXIT;
          END IF;
        END LOOP;
      END IF;
      IF hit IS NOT NULL THEN
        last_match := hit;
        stored := stored || m.ord;
      END IF;
    END LOOP;
  END IF;

  INSERT INTO messages (id, chat_id, role, content, name, metadata)
  SELECT x.id, p_chat, x.role, x.content, x.name, x.metadata
    FROM json_to_recordset(p_msgs) AS x(id text, ord integer, role text, content text, name text, metadata jsonb)
   WHERE x.ord <> ALL (stored)
   ORDER BY x.ord;

  IF p_call IS NOT NULL THEN
    INSERT INTO llm_calls (id, chat_id, provider, model, instance_id, owner_id)
    VALUES (p_call, p_chat, p_provider, p_model, p_instance, p_owner);
  END IF;
  RETURN token;
END
$$;
