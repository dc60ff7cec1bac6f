-- 001_init: the whole first schema. Forward-only: never edit this file once released, add 002_… instead.
-- Runs inside one transaction (src/db/migrate.ts) on both real Postgres (15+) and PGlite.
-- Timestamps default to now() (transaction start), so rows written together share one instant; order
-- that must be stable (a transcript) uses an identity column, never a timestamp.

CREATE TABLE chats (
  id                       text PRIMARY KEY,
  title                    text,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  initiated_provider       text,
  initiated_model          text,
  last_used_provider       text,
  last_used_model          text,
  additional_system_prompt text,
  enabled_tools            text[] NOT NULL DEFAULT '{}'
);
-- GET /v1/chats and the workspace list: newest first, id as a stable tie-break.
CREATE INDEX chats_updated_at_idx ON chats (updated_at DESC, id DESC);

CREATE TABLE messages (
  -- Transcript order: several messages written in one transaction share created_at.
  seq        bigint GENERATED ALWAYS AS IDENTITY,
  id         text PRIMARY KEY,
  chat_id    text NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  role       text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  content    text NOT NULL,
  name       text,
  metadata   jsonb
);
CREATE INDEX messages_chat_seq_idx ON messages (chat_id, seq);

CREATE TABLE llm_calls (
  id            text PRIMARY KEY,
  -- Kept after the chat is deleted: usage records outlive transcripts.
  chat_id       text REFERENCES chats (id) ON DELETE SET NULL,
  provider      text NOT NULL,
  model         text NOT NULL,
  status        text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed')),
  started_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz,
  latency_ms    integer,
  input_tokens  integer,
  output_tokens integer,
  total_tokens  integer,
  error         text,
  request_id    text,
  tool_rounds   integer,
  message_id    text REFERENCES messages (id) ON DELETE SET NULL
);
-- ON DELETE SET NULL from chats and messages would otherwise scan the table.
CREATE INDEX llm_calls_chat_idx ON llm_calls (chat_id);
CREATE INDEX llm_calls_message_idx ON llm_calls (message_id);
-- markInterruptedLlmCalls at start touches only the few running rows.
CREATE INDEX llm_calls_running_idx ON llm_calls (id) WHERE status = 'running';

CREATE TABLE searches (
  id                text PRIMARY KEY,
  title             text,
  query             text,
  -- trim + lowercase of query, for POST /v1/searches reuseByQuery.
  normalized_query  text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  -- null until the first run is stored.
  last_run_at       timestamptz,
  request_id        text,
  latency_ms        integer,
  error             text,
  answer_text       text,
  answer_request_id text,
  answer_citations  jsonb NOT NULL DEFAULT '[]',
  answer_error      text,
  results           jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX searches_updated_at_idx ON searches (updated_at DESC, id DESC);
CREATE INDEX searches_normalized_query_idx ON searches (normalized_query, updated_at DESC);

CREATE TABLE projects (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- The spec's reserved project: membership in it is what "starred" means.
INSERT INTO projects (id, name) VALUES ('starred', 'Starred') ON CONFLICT (id) DO NOTHING;

-- item_id points at chats or searches depending on item_type, so no foreign key can guard it:
-- src/store deletes memberships in the same statement that deletes the item.
CREATE TABLE project_members (
  project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  item_type  text NOT NULL CHECK (item_type IN ('chat', 'search')),
  item_id    text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, item_type, item_id)
);
-- Deleting an item removes its memberships in every project.
CREATE INDEX project_members_item_idx ON project_members (item_type, item_id);
