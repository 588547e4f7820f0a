-- What the drift checks (core/drift.ts) found, per zone, so that operators (the console, ListZones)
-- see a zone's drift state without reading logs. Written by the check itself, under the zone lock, in
-- the same transaction as the cache changes it read.
ALTER TABLE zones
  ADD COLUMN drift_checked_at timestamptz,
  ADD COLUMN drift_found_at   timestamptz,
  ADD COLUMN drift_added      integer NOT NULL DEFAULT 0,
  ADD COLUMN drift_removed    integer NOT NULL DEFAULT 0,
  ADD COLUMN drift_updated    integer NOT NULL DEFAULT 0,
  ADD CONSTRAINT zones_drift_counts_nonneg CHECK (drift_added >= 0 AND drift_removed >= 0 AND drift_updated >= 0),
  ADD CONSTRAINT zones_drift_found_after_check CHECK (drift_found_at IS NULL OR drift_checked_at >= drift_found_at);
COMMENT ON COLUMN zones.drift_checked_at IS 'End of the last drift check of this zone (any replica); NULL: never checked.';
COMMENT ON COLUMN zones.drift_found_at IS 'When a drift check last found records changed outside dnsplane; NULL: never.';
COMMENT ON COLUMN zones.drift_added IS 'Records added outside dnsplane, as found by the check at drift_found_at (likewise drift_removed, drift_updated).';
