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
-- Takes n writes from the tenant's bucket if it holds them (refilled first, capped at the burst), in
-- one call under the row's lock, so replicas spending at once never spend a token twice. No quota: o_quota
-- false, nothing written. A refusal takes nothing and counts one refusal.
CREATE FUNCTION tenant_write_take(p_tenant bigint, p_n integer,
  OUT o_quota boolean, OUT o_ok boolean, OUT o_tokens double precision, OUT o_per_day integer, OUT o_burst integer)
LANGUAGE plpgsql AS $$
DECLARE
  q tenant_write_quota%ROWTYPE;
  at timestamptz;
BEGIN
  SELECT writes_per_day, write_burst INTO o_per_day, o_burst FROM tenants WHERE id = p_tenant;
  o_quota := o_per_day IS NOT NULL;
  o_ok := true;
  IF NOT o_quota THEN RETURN; END IF;
  INSERT INTO tenant_write_quota (tenant_id, tokens, refilled_at) VALUES (p_tenant, o_burst, clock_timestamp()) ON CONFLICT (tenant_id) DO NOTHING;
  SELECT * INTO q FROM tenant_write_quota WHERE tenant_id = p_tenant FOR UPDATE;
  at := GREATEST(clock_timestamp(), q.refilled_at);
  o_tokens := LEAST(o_burst::double precision, q.tokens + extract(epoch FROM at - q.refilled_at) * o_per_day / 86400.0);
  o_ok := o_tokens >= p_n;
  IF o_ok THEN o_tokens := o_tokens - p_n; END IF;
  UPDATE tenant_write_quota
     SET tokens = o_tokens, refilled_at = at,
         spent_total = spent_total + CASE WHEN o_ok THEN p_n ELSE 0 END,
         refused_total = refused_total + CASE WHEN o_ok THEN 0 ELSE 1 END
   WHERE tenant_id = p_tenant;
END $$;
COMMENT ON TABLE tenant_write_quota IS 'Each quota''s bucket, shared by every replica: tokens left as of refilled_at (the database''s clock).';

-- Retire: a tenant ended on purpose (its records handed over or deleted, then disabled).
ALTER TABLE tenants ADD COLUMN retired_at timestamptz;
COMMENT ON COLUMN tenants.retired_at IS 'When `dnsplane tenant retire` ended it (disabled too); NULL: not retired.';
