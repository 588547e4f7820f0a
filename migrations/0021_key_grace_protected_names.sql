-- Rotation without an outage for TSIG and OVH keys (`dnsplane tenant tsig rotate NAME --grace 10m`,
-- `dnsplane tenant ovh-key rotate AK --grace 10m`, AdminService Rotate*Key.grace_seconds), as 0017 does
-- for tokens: the secret replaced (sealed like the current one, under the same key list) and, for an
-- OVH key, the sha-256 of the consumer key replaced, accepted until previous_valid_until. All NULL when
-- the rotation had no grace; a later rotation replaces them. core/tsig-keys.ts and core/ovh-keys.ts
-- judge the grace with the server's clock.
ALTER TABLE tsig_keys ADD COLUMN previous_secret_key_id bytea;
ALTER TABLE tsig_keys ADD COLUMN previous_secret_iv bytea;
ALTER TABLE tsig_keys ADD COLUMN previous_secret_tag bytea;
ALTER TABLE tsig_keys ADD COLUMN previous_secret_ciphertext bytea;
ALTER TABLE tsig_keys ADD COLUMN previous_valid_until timestamptz;
ALTER TABLE tsig_keys ADD CONSTRAINT tsig_keys_previous_whole CHECK (
  (previous_valid_until IS NULL) = (previous_secret_key_id IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_iv IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_tag IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_ciphertext IS NULL)
);
COMMENT ON COLUMN tsig_keys.previous_valid_until IS 'The secret the last rotation replaced (previous_secret_*, sealed) is accepted until then (its grace); NULL: none.';

ALTER TABLE ovh_keys ADD COLUMN previous_consumer_key_sha256 bytea;
ALTER TABLE ovh_keys ADD COLUMN previous_secret_key_id bytea;
ALTER TABLE ovh_keys ADD COLUMN previous_secret_iv bytea;
ALTER TABLE ovh_keys ADD COLUMN previous_secret_tag bytea;
ALTER TABLE ovh_keys ADD COLUMN previous_secret_ciphertext bytea;
ALTER TABLE ovh_keys ADD COLUMN previous_valid_until timestamptz;
ALTER TABLE ovh_keys ADD CONSTRAINT ovh_keys_previous_consumer_key_len CHECK (previous_consumer_key_sha256 IS NULL OR octet_length(previous_consumer_key_sha256) = 32);
ALTER TABLE ovh_keys ADD CONSTRAINT ovh_keys_previous_whole CHECK (
  (previous_valid_until IS NULL) = (previous_consumer_key_sha256 IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_key_id IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_iv IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_tag IS NULL)
  AND (previous_valid_until IS NULL) = (previous_secret_ciphertext IS NULL)
);
CREATE INDEX ovh_keys_previous_consumer_key_idx ON ovh_keys (previous_consumer_key_sha256) WHERE previous_consumer_key_sha256 IS NOT NULL;
COMMENT ON COLUMN ovh_keys.previous_valid_until IS 'The consumer key and application secret the last rotation replaced (previous_*) are accepted until then (its grace); NULL: none.';

-- Protected names (the two-person rule, core/approvals.ts): a plan that changes a record set at one of
-- these names (suffix: or below it) needs a second admin's approval even under the change threshold,
-- and `force` does not lift that. `dnsplane zone protect ZONE NAME…`, AdminService.ProtectNames.
CREATE TABLE protected_names (
  zone       text        NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
  name       text        NOT NULL,
  suffix     boolean     NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  created_by text,
  PRIMARY KEY (zone, name)
);
COMMENT ON TABLE protected_names IS 'Names whose changes need a second admin''s approval (core/guard.ts); suffix: the name and every name below it.';
COMMENT ON COLUMN protected_names.created_by IS 'The admin who protected it; NULL: the command line (database access).';

-- A publish that records no probe (a replica whose code records none, or whose probe could not be
-- written: core/apply/publish.ts keeps the apply then) still makes the probes of the sets it changed
-- stale: what the servers answer is now its data, so an older probe of those sets would end
-- not_visible. At COMMIT (deferred, when the row's probe, if any, is written), an apply's row that
-- became done without being published (published_at NULL: no probe) marks the older probe sets of the
-- names its intent touched superseded by it, as core/probe/record.ts does for a publish with a probe.
CREATE FUNCTION journal_done_supersedes_probes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE probe_sets ps SET superseded_by = j.id
    FROM journal j, jsonb_array_elements(j.intent->'names') n
   WHERE j.id = NEW.id AND j.state = 'done' AND j.published_at IS NULL AND jsonb_typeof(j.intent->'names') = 'array'
     AND ps.zone = j.zone AND ps.journal_id < j.id AND ps.superseded_by IS NULL
     AND ps.type = upper(n->>'fieldType')
     AND ps.name = CASE WHEN coalesce(n->>'subDomain', '') = '' THEN j.zone ELSE lower(n->>'subDomain') || '.' || j.zone END;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER journal_done_supersedes_probes AFTER UPDATE OF state ON journal
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.state = 'done' AND OLD.state IS DISTINCT FROM 'done' AND NEW.zone IS NOT NULL)
  EXECUTE FUNCTION journal_done_supersedes_probes();
