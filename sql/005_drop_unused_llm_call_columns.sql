-- llm_calls.request_id and tool_rounds were created in 001 but never written by any code path:
-- providers' request ids are not kept per call, and tool rounds show as tool messages. Dropping them
-- keeps the table saying only what is true.
ALTER TABLE llm_calls DROP COLUMN request_id;
ALTER TABLE llm_calls DROP COLUMN tool_rounds;
