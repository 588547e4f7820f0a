-- A cluster's whole life (issue 46): handover, drain, retire, orphans, write quotas.
--
-- Handover needs no schema: ownership rows change owner (and the withdrawal rows that hang on them),
-- one journal row says what moved, so `journal revert` can move it back.
--
-- Drain: a tenant's targets of shared sets withdrawn on an admin's word, reason 'drained', restored
-- by undrain (the withdrawal mechanism of 0019; never an exclusive set's target: 0022's check).
ALTER TABLE target_withdrawals DROP CONSTRAINT target_withdrawals_reason;
ALTER TABLE target_withdrawals ADD CONSTRAINT target_withdrawals_reason CHECK (reason IN ('silent', 'health', 'drained'));

-- Write quotas: OVH writes (creates and updates) caused by the tenant's applies, a token bucket of
-- write_burst tokens refilled at writes_per_day a day; NULL: off. Deletions and withdrawals are never
-- counted. The bucket is a row, so every replica spends from the same count.
ALTER TABLE tenants ADD COLUMN writes_per_day integer;
ALTER TABLE tenants ADD COLUMN write_burst integer;
ALTER TABLE tenants ADD CONSTRAINT tenants_write_quota CHECK (
  (writes_per_day IS NULL AND write_burst IS NULL)
  OR (writes_per_day BETWEEN 1 AND 100000000 AND write_burst BETWEEN 1 AND 100000000)
);
COMMENT ON COLUMN tenants.writes_per_day IS 'OVH writes (not deletions) its applies may send a day, refilled continuously; NULL: no quota.';
COMMENT ON COLUMN tenants.write_burst IS 'The most writes its quota holds at once (the bucket''s size); NULL with writes_per_day.';

CREATE TABLE tenant_write_quota (
  tenant_id    bigint           PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  tokens       double precision NOT NULL,
  refilled_at  timestamptz      NOT NULL,
  spent_total  bigint           NOT NULL DEFAULT 0,
  refused_total bigint          NOT NULL DEFAULT 0
);
COMMENT ON TABLE tenant_write_quota IS 'Each quota''s bucket, shared by every replica: tokens left as of refilled_at (the database''s clock).';

-- Retire: a tenant ended on purpose (its records handed over or deleted, then disabled).
ALTER TABLE tenants ADD COLUMN retired_at timestamptz;
COMMENT ON COLUMN tenants.retired_at IS 'When `dnsplane tenant retire` ended it (disabled too); NULL: not retired.';
