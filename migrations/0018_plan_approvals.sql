-- The two-person rule (`dnsplane plan approve PLAN_ID`, AdminService.ApprovePlan): a stored plan the
-- change threshold refuses may be approved by an admin who is not the one who asked for it; its tenant
-- then applies it and the threshold does not stop it. Who approved, when, and the digest approved (the
-- plan's own, recorded so that the approval names exactly what was judged). All three NULL until
-- approved; an approval is written once (core/approvals.ts: `UPDATE … WHERE approved_by IS NULL`).
-- A plan that goes stale cannot be applied, so its approval is void with it; a new plan has none.
ALTER TABLE plans ADD COLUMN approved_by bigint REFERENCES tenants (id) ON DELETE RESTRICT;
ALTER TABLE plans ADD COLUMN approved_at timestamptz;
ALTER TABLE plans ADD COLUMN approved_digest text;
ALTER TABLE plans ADD CONSTRAINT plans_approval_whole CHECK ((approved_by IS NULL) = (approved_at IS NULL) AND (approved_by IS NULL) = (approved_digest IS NULL));
ALTER TABLE plans ADD CONSTRAINT plans_approval_two_persons CHECK (approved_by IS NULL OR approved_by <> requested_by);
COMMENT ON COLUMN plans.approved_by IS 'The admin who approved the plan over the change threshold (never requested_by); NULL: not approved.';
COMMENT ON COLUMN plans.approved_digest IS 'The plan digest the approval was given for.';
