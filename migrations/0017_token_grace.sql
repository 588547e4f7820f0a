-- A rotation that keeps the old token valid for a while (`dnsplane tenant rotate NAME --grace 10m`,
-- AdminService.RotateTenantToken.grace_seconds): external-dns treats a 401 as fatal, so a cluster whose
-- Secret is not updated yet would crash-loop. The hash of the token replaced and until when it is still
-- accepted; both NULL when the rotation had no grace. A later rotation replaces them.
ALTER TABLE tenants ADD COLUMN previous_token_sha256 bytea;
ALTER TABLE tenants ADD COLUMN previous_token_valid_until timestamptz;
ALTER TABLE tenants ADD CONSTRAINT tenants_previous_token_len CHECK (previous_token_sha256 IS NULL OR octet_length(previous_token_sha256) = 32);
ALTER TABLE tenants ADD CONSTRAINT tenants_previous_token_both CHECK ((previous_token_sha256 IS NULL) = (previous_token_valid_until IS NULL));
CREATE INDEX tenants_previous_token_idx ON tenants (previous_token_sha256) WHERE previous_token_sha256 IS NOT NULL;
COMMENT ON COLUMN tenants.previous_token_sha256 IS 'SHA-256 of the token the last rotation replaced, accepted until previous_token_valid_until (its grace).';
