-- 003_run_control: stop a run, start it idempotently, and read how a chat's last run ended.

-- A run the user stopped is neither a success nor a failure: its partial answer is kept.
-- (The inline CHECK of 001 got Postgres's default name, llm_calls_status_check.)
ALTER TABLE llm_calls DROP CONSTRAINT llm_calls_status_check;
ALTER TABLE llm_calls ADD CONSTRAINT llm_calls_status_check
  CHECK (status IN ('running', 'succeeded', 'failed', 'stopped'));

-- What a call was for: a chat completion (a run), or a title suggestion (which is no answer of the chat,
-- so chat.lastRun skips it).
ALTER TABLE llm_calls ADD COLUMN purpose text NOT NULL DEFAULT 'completion' CHECK (purpose IN ('completion', 'title'));

-- chat.lastRun is the newest completion call of the chat: one backward index probe. It also serves the
-- ON DELETE SET NULL lookups by chat_id, so the narrower index of 001 goes.
CREATE INDEX llm_calls_chat_started_idx ON llm_calls (chat_id, started_at DESC);
DROP INDEX llm_calls_chat_idx;

-- Idempotency-Key of a completion request, kept 24 hours (rows older than that are ignored, and
-- reclaimed by the next request with the same key, or purged in small batches by created_at).
-- The run's outcome lives in llm_calls (+ the assistant message); `response` keeps the finished
-- answer so a retry gets byte-for-byte the body the first request got.
CREATE TABLE idempotency_keys (
  key          text PRIMARY KEY,
  -- sha256 of the endpoint and the canonical JSON body: the same key with another request is 422.
  request_hash text NOT NULL,
  -- what the key started: the endpoint's mode, and the chat and LlmCall of its run
  mode         text NOT NULL CHECK (mode IN ('whole', 'stream')),
  chat_id      text,
  call_id      text,
  status       text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed', 'stopped')),
  -- the finished answer: {status, body} for a whole completion, the stream's outcome for a stream
  response     jsonb,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
