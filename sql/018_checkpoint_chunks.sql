-- 018_checkpoint_chunks: a checkpoint costs what it adds. Until now each checkpoint rewrote the run's
-- whole text so far (`left(checkpoint_text, from) || text`, `length()` over it): its cost grew with the
-- answer and the sum over an answer's life with its square (4 runs streaming 6 MB answers held other
-- runs' starts for seconds). Now each checkpoint appends the text streamed since the previous one as a
-- row of its own (src/store/checkpoints.ts); recovery and takeover join a call's rows in order
-- (src/store/recovery.ts).
--
-- `pos` is where the chunk starts in the run's streamed text, in UTF-16 code units (JavaScript's
-- string length): the chunks join in its order, and a checkpoint sent again (its reply lost) writes
-- the same key, so it replaces the chunk rather than doubling it.
CREATE TABLE llm_call_checkpoint_chunks (
  call_id text NOT NULL,
  pos     integer NOT NULL,
  text    text NOT NULL,
  PRIMARY KEY (call_id, pos)
);
-- Stored as sent, never compressed: a chunk lives only while its run runs, and pglz took ~10 times
-- the rest of a checkpoint's cost in Postgres (a checkpoint is written far more often than read).
ALTER TABLE llm_call_checkpoint_chunks ALTER COLUMN text SET STORAGE EXTERNAL;

-- A call's chunks go when it stops running, however it ends (its answer stored, failed, recovered as
-- interrupted text or handed to a peer), so the table holds the text of running calls only. A trigger
-- rather than a clause in each statement that ends a call: one of those statements may have waited
-- for a checkpoint's row lock, and only a fresh snapshot (each statement of a plpgsql function takes
-- one) sees the chunks that checkpoint just committed. A checkpoint that comes after the end finds
-- the call no longer running and writes nothing. Only calls that were checkpointed pay for it.
CREATE FUNCTION drop_checkpoint_chunks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM llm_call_checkpoint_chunks WHERE call_id = NEW.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER llm_calls_drop_checkpoint_chunks
  AFTER UPDATE OF status ON llm_calls
  FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running' AND OLD.checkpoint_at IS NOT NULL)
  EXECUTE FUNCTION drop_checkpoint_chunks();

-- A running call's text checkpointed before this migration becomes its first chunk. Ended calls' text
-- was never read again: dropped. `checkpoint_text` is no longer written; recovery still reads it as
-- the text before the chunks, for an instance of the previous version that keeps writing it during a
-- rolling upgrade.
INSERT INTO llm_call_checkpoint_chunks (call_id, pos, text)
SELECT id, 0, checkpoint_text FROM llm_calls
 WHERE status = 'running' AND checkpoint_text IS NOT NULL AND checkpoint_text <> '';
UPDATE llm_calls SET checkpoint_text = NULL WHERE checkpoint_text IS NOT NULL;
