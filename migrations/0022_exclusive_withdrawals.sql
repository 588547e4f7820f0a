-- Withdrawn targets of exclusive record sets (issue 30, health checks): an exclusive set has one
-- ownership row, of target '', whatever its targets; a target of it withdrawn by its health check
-- cannot reference a row of its own. owner_target is the ownership row a withdrawal row hangs on:
-- the target's own for a shared set, '' (the set's owner row) for an exclusive one. Same cascade as
-- before: an ownership row dropped takes its withdrawal rows with it.
ALTER TABLE target_withdrawals ADD COLUMN owner_target text;
UPDATE target_withdrawals SET owner_target = target;
ALTER TABLE target_withdrawals ALTER COLUMN owner_target SET NOT NULL;
-- Filled on insert (so that a replica of the release before, which does not name it, still writes
-- rows during a rolling upgrade): the target's own row if it has one, else the set's exclusive row.
CREATE FUNCTION target_withdrawals_owner_target() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.owner_target IS NULL THEN
    NEW.owner_target := (SELECT o.target FROM ownership o
                          WHERE o.zone = NEW.zone AND o.dns_name = NEW.dns_name AND o.record_type = NEW.record_type AND o.target IN (NEW.target, '')
                          ORDER BY o.target DESC LIMIT 1);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER target_withdrawals_owner_target BEFORE INSERT ON target_withdrawals
  FOR EACH ROW EXECUTE FUNCTION target_withdrawals_owner_target();
ALTER TABLE target_withdrawals DROP CONSTRAINT target_withdrawals_zone_dns_name_record_type_target_fkey;
ALTER TABLE target_withdrawals ADD CONSTRAINT target_withdrawals_owner_fkey
  FOREIGN KEY (zone, dns_name, record_type, owner_target) REFERENCES ownership (zone, dns_name, record_type, target) ON DELETE CASCADE;
ALTER TABLE target_withdrawals ADD CONSTRAINT target_withdrawals_owner_target CHECK (owner_target = target OR owner_target = '');
-- Only health takes targets of exclusive sets off OVH (a silent tenant's exclusive set has no other target to send anyone to).
ALTER TABLE target_withdrawals ADD CONSTRAINT target_withdrawals_exclusive_health CHECK (owner_target <> '' OR reason = 'health');
COMMENT ON COLUMN target_withdrawals.owner_target IS 'The ownership row this row hangs on (ON DELETE CASCADE): target for a shared set, '''' for an exclusive one.';
COMMENT ON TABLE target_withdrawals IS 'Targets kept off OVH while owned and desired (one row per reason; exclusive sets: health only); a target is published iff it has no row.';
