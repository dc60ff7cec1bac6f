-- 019_cost: what calls cost in money (docs/operations.md, "Users and single sign-on", Prices).
--
-- An LlmCall's cached input tokens, apart from its input_tokens (which include them): read from the
-- provider's prompt cache (provider_b's cache_read_input_tokens, the others' cached_tokens) and
-- written to it (provider_b's cache_creation_input_tokens); and its cost in USD under MODEL_PRICES
-- when it ended (null: no usage, or a model without a price).
ALTER TABLE llm_calls
  ADD COLUMN cache_read_tokens integer,
  ADD COLUMN cache_write_tokens integer,
  ADD COLUMN cost double precision;

-- The daily cost budget (USER_COST_PER_DAY, a user's cost_per_day) reads the day's cost beside its tokens.
ALTER TABLE user_day_tokens ADD COLUMN cost double precision NOT NULL DEFAULT 0;

-- The W3C traceparent of a chat run's span (tracing on), written with its first checkpoint: a peer that
-- takes the run over links its own run's span to it (docs/operations.md, "Traces and GenAI metrics", Takeover).
ALTER TABLE llm_calls ADD COLUMN trace_parent text;

-- null: the service-wide default (USER_COST_PER_DAY)
ALTER TABLE users ADD COLUMN cost_per_day double precision CHECK (cost_per_day > 0);
