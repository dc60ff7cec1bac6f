-- 004_instance_heartbeats: one row per live service instance, beaten every INSTANCE_HEARTBEAT_MS.
-- Any instance fails the running LlmCalls of an instance whose beat is older than three intervals
-- (src/store/instances.ts), so a call never stays `running` after its instance died, whatever its id.
-- Times are the database's own now(), so instances' clocks never have to agree.
CREATE TABLE instances (
  id         text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_beat  timestamptz NOT NULL DEFAULT now()
);
