-- 015_instance_dead_after: each instance's own dead-after span (three of its INSTANCE_HEARTBEAT_MS),
-- written with its every beat. A sweeper judged every instance by its own interval instead, so an
-- instance that beats less often than its peers (its interval raised, as during a rolling change of the
-- setting) read as dead between two of its beats, and its live runs were recovered as lost. NULL (a row
-- of an earlier version): the sweeper's own span, as before.
ALTER TABLE instances ADD COLUMN dead_after_ms integer;
