-- 007_fencing: a chat's fencing token. Every run start on a chat (its first storage statement, which
-- only the holder of the chat's lease reaches) sets it one higher and keeps the value; the run's later
-- writes (tool messages, the answer) land only while the chat still holds that value. An owner that
-- lost its lease without knowing it (a long GC pause, a frozen VM, a partition) finds its writes
-- refused once another run has started on the chat: a chat never holds answers of two overlapping runs.
ALTER TABLE chats ADD COLUMN run_token integer NOT NULL DEFAULT 0;
