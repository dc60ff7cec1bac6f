-- 021_checkpoint_delta_lengths: a checkpoint keeps how its text was cut into deltas. The OpenAI-compatible
-- API numbers a response's events, one per delta, and a client resumes by that number (`starting_after`).
-- A takeover (src/service/takeover.ts) used to stream the lost run's checkpointed text as one delta, so a resume
-- from inside it could not be exact. Each chunk of a run that keeps its deltas (ChatRunRequest.keepDeltas)
-- now stores their lengths, in UTF-16 code units; the first is negative when it continues a delta the
-- previous chunk began (a chunk may end inside one). Null: the run does not keep them.
ALTER TABLE llm_call_checkpoint_chunks ADD COLUMN deltas integer[];
