-- Safe by default.
--
-- tenants.max_change_percent: the tenant's own change threshold (core/guard.ts), set by an admin;
-- NULL: the server's DNSPLANE_MAX_CHANGE_PERCENT.
ALTER TABLE tenants ADD COLUMN max_change_percent integer;
ALTER TABLE tenants ADD CONSTRAINT tenants_max_change_percent_range CHECK (max_change_percent BETWEEN 0 AND 100);
COMMENT ON COLUMN tenants.max_change_percent IS
  'Change threshold of this tenant (0-100): an apply updating or deleting more than this share of the record sets it owns in a zone (when it owns 10 or more there) needs force. NULL: the server default.';

-- journal times: now() is the start of the transaction, so a row finished in the transaction that
-- took the zone lock showed finished_at before started_at (written on another connection later).
-- Both are now the wall clock of the moment (store/journal.ts uses clock_timestamp() too); existing
-- rows are left as they were, new ones must be in order.
ALTER TABLE journal ALTER COLUMN started_at SET DEFAULT clock_timestamp();
ALTER TABLE journal ADD CONSTRAINT journal_finished_after_started CHECK (finished_at IS NULL OR finished_at >= started_at) NOT VALID;
