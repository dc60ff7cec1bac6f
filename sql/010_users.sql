-- 010_users: several people on one service, each in their own workspace (docs/operations.md, "Users and single sign-on").
--
-- The built-in user `admin` (the ADMIN_TOKEN) has no row: it is the operator, never listed, never
-- deleted, and every row stored before users existed is its own through the owner columns' default.
-- Owner ids carry no foreign key for the same reason; deleting a user deletes its rows explicitly.
CREATE TABLE users (
  id              text PRIMARY KEY,
  name            text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  disabled        boolean NOT NULL DEFAULT false,
  -- null: the service-wide default (USER_MAX_ACTIVE_RUNS, USER_TOKENS_PER_DAY)
  max_active_runs integer CHECK (max_active_runs >= 1),
  tokens_per_day  integer CHECK (tokens_per_day >= 1),
  source          text NOT NULL DEFAULT 'key' CHECK (source IN ('key', 'jwt')),
  -- the JWT `sub` a single-sign-on user is bound to
  jwt_sub         text UNIQUE,
  -- sha-256 of the user's one current API key (the key itself is shown once and never stored);
  -- rotating replaces it, so every earlier key stops matching in the same statement
  key_hash        bytea UNIQUE
);
-- GET /v1/users: oldest first.
CREATE INDEX users_created_idx ON users (created_at, id);

ALTER TABLE chats ADD COLUMN owner_id text NOT NULL DEFAULT 'admin';
ALTER TABLE searches ADD COLUMN owner_id text NOT NULL DEFAULT 'admin';
ALTER TABLE llm_calls ADD COLUMN owner_id text NOT NULL DEFAULT 'admin';
ALTER TABLE idempotency_keys ADD COLUMN owner_id text NOT NULL DEFAULT 'admin';
ALTER TABLE project_members ADD COLUMN owner_id text NOT NULL DEFAULT 'admin';

-- Lists and the newest-first walks of history search (sql/008) read one owner's rows: the owner leads.
DROP INDEX chats_updated_at_idx;
CREATE INDEX chats_owner_updated_idx ON chats (owner_id, updated_at DESC, id DESC);
DROP INDEX searches_updated_at_idx;
CREATE INDEX searches_owner_updated_idx ON searches (owner_id, updated_at DESC, id DESC);
DROP INDEX searches_normalized_query_idx;
CREATE INDEX searches_owner_query_idx ON searches (owner_id, normalized_query, updated_at DESC);

-- The same key sent by two users is two keys.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (owner_id, key);

-- GET /v1/usage: one owner's calls of the last N days.
CREATE INDEX llm_calls_owner_started_idx ON llm_calls (owner_id, started_at DESC);

-- Tokens each user's LlmCalls used per UTC day (of the call's start), added in the statement that
-- stores a call's usage: a start checks a user's daily budget with one primary-key read instead of a
-- SUM over the user's calls.
CREATE TABLE user_day_tokens (
  owner_id     text NOT NULL,
  day          date NOT NULL,
  total_tokens bigint NOT NULL,
  PRIMARY KEY (owner_id, day)
);
