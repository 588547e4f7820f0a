-- Health checks per target (issue 30, docs/failover.md). A record set's owner may give it a check
-- (the label dnsplane/health-check: a URL with an EMPTY host, meaning each target of the set); it is
-- kept on the owner's ownership rows, so that a change of the check alone is an ownership change and
-- no OVH call. A new owner of a row starts without a check (store/ownership.ts setOwner).
ALTER TABLE ownership ADD COLUMN health_check text;
ALTER TABLE ownership ADD CONSTRAINT ownership_health_check_form CHECK (
  health_check IS NULL
  OR (length(health_check) <= 256 AND health_check ~ '^(https?://:[0-9]{1,5}(/[!-~]*)?|tcp://:[0-9]{1,5})$')
);
COMMENT ON COLUMN ownership.health_check IS
  'The owner''s check of its targets of the set (http://:PORT/PATH, https://:PORT/PATH, tcp://:PORT; the host is each target); NULL: none.';

-- Which replica checks a record set now: one at a time, for a lease it renews every round; a lease
-- that lapsed (its replica died) is taken by the next replica's round (core/health/checker.ts).
CREATE TABLE health_leases (
  zone        text        NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
  dns_name    text        NOT NULL,
  record_type text        NOT NULL,
  holder      text        NOT NULL,
  lease_until timestamptz NOT NULL,
  PRIMARY KEY (zone, dns_name, record_type)
);
COMMENT ON TABLE health_leases IS 'The replica checking a record set, until lease_until (renewed each round it checks).';

-- Each checked target's state, kept in the database so that a replica taking a set over goes on
-- counting where the last one stopped. Written only by the lease's holder (fenced in the statement).
CREATE TABLE target_health (
  zone        text        NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
  dns_name    text        NOT NULL,
  record_type text        NOT NULL,
  target      text        NOT NULL,
  state       text        NOT NULL,
  failures    integer     NOT NULL DEFAULT 0,
  successes   integer     NOT NULL DEFAULT 0,
  flaps       integer     NOT NULL DEFAULT 0,
  held_until  timestamptz,
  since       timestamptz NOT NULL DEFAULT now(),
  checked_at  timestamptz NOT NULL DEFAULT now(),
  answers     jsonb       NOT NULL DEFAULT '[]',
  PRIMARY KEY (zone, dns_name, record_type, target),
  CONSTRAINT target_health_state CHECK (state IN ('healthy', 'failing', 'down')),
  CONSTRAINT target_health_counts CHECK (failures >= 0 AND successes >= 0 AND flaps >= 0)
);
COMMENT ON TABLE target_health IS
  'The checker''s view of each checked target: healthy, failing (failures in a row, not yet withdrawn) or down (withdrawn, or held as the last: see answers); its last answers.';
COMMENT ON COLUMN target_health.flaps IS 'Times the target went down within the flap window: past the limit it is held down until held_until.';
