-- llm_calls_running_idx (id WHERE status = 'running', from 001) duplicates what
-- llm_calls_running_instance_idx (instance_id WHERE status = 'running', from 002) serves: every
-- statement that looks for running calls (the start's and the sweeper's `markInterrupted`, the dead
-- instances' sweep) reads the same partial set through either, and a call by id goes through the
-- primary key. The spare index cost every run a write of its own (one of the 22 index entries a
-- persisted run makes; docs/performance.md, seventh round).
DROP INDEX llm_calls_running_idx;
