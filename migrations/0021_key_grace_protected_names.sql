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
