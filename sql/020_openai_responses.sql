-- 020_openai_responses: the stored responses of the OpenAI-compatible API (src/openai/). Each is a turn of
-- a chat of its owner: `input` holds the messages it added, `output_text` and `tool_calls` its answer, and
-- `deltas` the lengths of the deltas it streamed, so that a stream resumed by sequence number after the run
-- ended replays the very events a live reader got. `previous_response_id` links the turns (responses form a
-- tree, chats stay lines).
CREATE TABLE openai_responses (
  id text PRIMARY KEY,
  owner_id text NOT NULL,
  -- No foreign key: the row is written beside the run's start, before the run has stored its new chat.
  chat_id text NOT NULL,
  call_id text NOT NULL,
  -- The instance that started it (and writes its end): a response of a dead one is settled by a peer.
  instance_id text NOT NULL,
  previous_response_id text,
  status text NOT NULL,
  input jsonb NOT NULL,
  request jsonb NOT NULL,
  output_text text,
  tool_calls jsonb,
  deltas jsonb,
  usage jsonb,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX openai_responses_chat_latest ON openai_responses (chat_id, created_at DESC);
