-- Which service instance runs a call, so that an instance restarting fails only its own
-- interrupted calls, not the live calls of other instances sharing this database.
ALTER TABLE llm_calls ADD COLUMN instance_id text;
CREATE INDEX llm_calls_running_instance_idx ON llm_calls (instance_id) WHERE status = 'running';
