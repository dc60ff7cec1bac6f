-- 013_takeover: a live peer continues a lost instance's provider_b chat run from its checkpoint
-- (src/store/takeover.ts) under a new LlmCall. `continues_call_id` names the lost call it continues:
-- a continuation whose own instance dies is recovered as interrupted text, never taken over again,
-- so a run is taken over at most once.
ALTER TABLE llm_calls ADD COLUMN continues_call_id text;
