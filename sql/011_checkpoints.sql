-- 011_checkpoints: what a running chat run has streamed, written every CHECKPOINT_MS for all of an
-- instance's runs in one statement (src/store/checkpoints.ts), so that an instance that dies without
-- a goodbye leaves its users the answer up to its last checkpoint: whoever recovers the call
-- (src/store/recovery.ts) stores that text as an interrupted assistant message.
-- `checkpoint_token` is the chat's fencing token the text was written under: the recovered message
-- goes into the chat only while the chat still holds it (no later run has started on it).
ALTER TABLE llm_calls ADD COLUMN checkpoint_text text;
ALTER TABLE llm_calls ADD COLUMN checkpoint_token integer;
ALTER TABLE llm_calls ADD COLUMN checkpoint_at timestamptz;
