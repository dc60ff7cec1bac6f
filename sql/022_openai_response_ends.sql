-- 022_openai_response_ends: two things the stored responses of the OpenAI-compatible API (sql/020) lacked.
--
-- A response is a turn of a chat, and goes with it: deleting a chat (DELETE /v1/chats/{id}, or its user)
-- deletes the responses that point at it, so reading one answers 404 as the chat does. No foreign key:
-- the row is written beside the run's start, before the run has stored its new chat (sql/020); a trigger
-- on the chat's deletion instead.
CREATE FUNCTION drop_openai_responses_of_chat() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM openai_responses WHERE chat_id = OLD.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER chats_drop_openai_responses
  AFTER DELETE ON chats
  FOR EACH ROW EXECUTE FUNCTION drop_openai_responses_of_chat();

-- A response that starts a new chat from an earlier turn (previous_response_id naming one that is not its
-- chat's latest) keeps the history it inherited, as its new chat does: its chain of previous responses stops
-- there, so that deleting the chat it came from (and its responses) takes nothing from this one's history.
ALTER TABLE openai_responses ADD COLUMN inherited jsonb;

-- The ended responses of chats already deleted.
DELETE FROM openai_responses r WHERE r.status <> 'in_progress' AND NOT EXISTS (SELECT 1 FROM chats c WHERE c.id = r.chat_id);

-- A response continued by a peer after its instance was lost (a takeover) ends with the continuation's
-- delta lengths in `deltas`, and here how many of its first deltas are the lost run's own, cut as that run
-- streamed them (the continuation's meta `resumedDeltas`): a resume after the end is exact through them
-- and gets `resume_point_lost` past them, as it did while the continuation ran. Null: not a continuation.
ALTER TABLE openai_responses ADD COLUMN resumed_deltas integer;
