-- Withdrawn targets (issue 30): a target its owner still owns and still desires, but that is not
-- published on OVH — its tenant went silent past its withdraw_after ('silent'), or its health check
-- failed ('health'). One row per reason: a target is published iff it has no row; it leaves OVH when
-- its first reason appears and comes back (POST of sub_domain/field_type/ovh_target/ttl) when its
-- last goes. The ownership row stays while a target is withdrawn (ON DELETE CASCADE: a target its
-- owner stops desiring, or an admin takes away, takes its withdrawal rows with it); the records
-- (cache) row goes, as on OVH. Written only under the zone lock, in an apply's transaction
-- (core/withdrawals.ts), so the zone's generation moves with them.
CREATE TABLE target_withdrawals (
  zone          text        NOT NULL,
  dns_name      text        NOT NULL,
  record_type   text        NOT NULL,
  target        text        NOT NULL,
  reason        text        NOT NULL,
  tenant_id     bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  detail        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  sub_domain    text        NOT NULL,
  field_type    text        NOT NULL,
  ovh_target    text        NOT NULL,
  ttl           integer     NOT NULL,
  withdrawn_at  timestamptz NOT NULL DEFAULT now(),
  journal_id    bigint,
  PRIMARY KEY (zone, dns_name, record_type, target, reason),
  FOREIGN KEY (zone, dns_name, record_type, target) REFERENCES ownership (zone, dns_name, record_type, target) ON DELETE CASCADE,
  CONSTRAINT target_withdrawals_reason CHECK (reason IN ('silent', 'health')),
  CONSTRAINT target_withdrawals_shared_target CHECK (target <> ''),
  CONSTRAINT target_withdrawals_ttl CHECK (ttl >= 0)
);
COMMENT ON TABLE target_withdrawals IS 'Targets of shared sets kept off OVH while owned (one row per reason); a target is published iff it has no row.';
COMMENT ON COLUMN target_withdrawals.detail IS 'Why, for people: {"detail": "tenant c2 silent since …", "evidence": …} (a health check''s last answers).';
COMMENT ON COLUMN target_withdrawals.ovh_target IS 'The target as OVH stores it: what the restore POSTs back, with sub_domain, field_type and ttl.';

-- Tenant liveness: every authenticated call is a sign of life, written coarsely (core/liveness.ts);
-- withdraw_after NULL = off. A tenant silent longer than withdraw_after has its targets of shared sets
-- withdrawn (reason 'silent') until it calls again.
ALTER TABLE tenants ADD COLUMN last_seen_at timestamptz;
ALTER TABLE tenants ADD COLUMN withdraw_after interval;
ALTER TABLE tenants ADD CONSTRAINT tenants_withdraw_after_positive CHECK (withdraw_after IS NULL OR withdraw_after >= interval '1 second');
COMMENT ON COLUMN tenants.last_seen_at IS 'The tenant''s latest authenticated call (coalesced: at most one write a minute per process, the first at once).';
COMMENT ON COLUMN tenants.withdraw_after IS 'Silent this long: its targets of shared sets are withdrawn from OVH until it calls again; NULL: never.';
