-- 011_checkpoints: what a running chat run has streamed, written every CHECKPOINT_MS for all of an
-- instance's runs in one statement (src/store/checkpoints.ts), so that an instance that dies without
-- a goodbye leaves its users the answer up to its last checkpoint: whoever recovers the call
-- (src/store/recovery.ts) stores that text as an interrupted assistant message.
-- `checkpoint_token` is the chat's fencing token the text was written under: the recovered message
-- goes into the chat only while the chat still holds it (no later run has started on it).
ALTER TABLE llm_calls ADD COLUMN checkpoint_text text;
ALTER TABLE llm_calls ADD COLUMN checkpoint_token integer;
ALTER TABLE llm_calls ADD COLUMN checkpoint_at timestamptz;

-- A search run has no LlmCall: while it goes, its search row names the instance running it (set when
-- its engine calls start, cleared when its outcome is stored), so a lost instance's search runs are
-- found too and read as failed with the "instance lost" error instead of silently as never run.
ALTER TABLE searches ADD COLUMN run_instance_id text;
ALTER TABLE searches ADD COLUMN run_started_at timestamptz;
CREATE INDEX searches_running_instance_idx ON searches (run_instance_id) WHERE run_instance_id IS NOT NULL;
