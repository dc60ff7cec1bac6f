-- 023_continuation_indexes: two lookups that scanned whole tables. "Has this call been continued?" (a fallback's
-- split, src/store/fallback-calls.ts, on the run's path; a response's end at an instance's start,
-- failInterruptedResponses in src/openai/store.ts) reads llm_calls by continues_call_id, which only continued
-- calls carry; and that start-up read finds the instance's responses still going by instance_id.
CREATE INDEX llm_calls_continues_idx ON llm_calls (continues_call_id) WHERE continues_call_id IS NOT NULL;
CREATE INDEX openai_responses_going_instance_idx ON openai_responses (instance_id) WHERE status = 'in_progress';
