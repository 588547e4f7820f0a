-- Fencing of applies (issue: correct when Postgres goes away).
-- An in_flight journal row names the lock session that wrote it and how long its writes to OVH may
-- still land, so that the zone's next lock holder does not roll it back while the holder may still be
-- sending (its lock can be lost while it runs: a terminated backend, a restart, a failover).

ALTER TABLE journal
  ADD COLUMN holder     text,
  ADD COLUMN lock_pid   integer,
  ADD COLUMN live_until timestamptz,
  ADD COLUMN fence_ms   integer;

COMMENT ON COLUMN journal.holder IS 'Who runs (or ran) this apply or recovery: dnsplane process instance, host and pid, and the lock session''s backend pid.';
COMMENT ON COLUMN journal.lock_pid IS 'Backend pid of the zone-lock session of the holder; with the session''s backend_start it fences the holder''s journal writes.';
COMMENT ON COLUMN journal.live_until IS 'The holder''s lease: no OVH call of the holder can land after this time. Renewed only while the holder''s zone lock is held. NULL: written before fencing existed (recoverable at once).';
COMMENT ON COLUMN journal.fence_ms IS 'The holder''s OVH call timeout plus a margin: a call it started before losing its lock has ended this long after the loss.';
