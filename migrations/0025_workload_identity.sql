-- Workload identity (issue 45): a cluster proves who it is with a JWT its platform gives it (a
-- Kubernetes projected ServiceAccount token, a SPIRE JWT-SVID) instead of a dnsplane token. An issuer
-- is trusted while some tenant trusts one of its subjects; where its keys come from is the issuer's
-- (one source per issuer, so that no issuer's keys ever verify another's tokens): its discovery
-- document (NULL jwks_url and jwks), a JWKS URL, or a JWKS uploaded (a cluster whose issuer dnsplane
-- cannot reach). Everything here is public: keys, CA certificates, names; no secret.
CREATE TABLE trusted_issuers (
  issuer      text        PRIMARY KEY,
  jwks_url    text,
  jwks        jsonb,
  ca_pem      text,
  -- Bumped by every change of the key source: a replica holding keys fetched for an older version drops them.
  version     bigint      NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT trusted_issuers_one_source CHECK (jwks_url IS NULL OR jwks IS NULL)
);
COMMENT ON TABLE trusted_issuers IS 'Issuers whose JWTs some tenant trusts, and where their keys come from (discovery when jwks_url and jwks are NULL).';

-- A subject (the token's sub, exactly) of an issuer, bound to exactly one tenant: two tenants trusting
-- the same issuer and subject is refused by the primary key.
CREATE TABLE trusted_subjects (
  id            bigserial   UNIQUE,
  issuer        text        NOT NULL REFERENCES trusted_issuers (issuer) ON DELETE CASCADE,
  subject       text        NOT NULL,
  tenant_id     bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  audience      text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz,
  PRIMARY KEY (issuer, subject)
);
CREATE INDEX trusted_subjects_tenant_idx ON trusted_subjects (tenant_id);
COMMENT ON TABLE trusted_subjects IS 'Which tenant a token of (issuer, sub) acts as, for which audience; last_seen_at written coarsely.';
