/**
 * The admin use cases (AdminService), gathered in one surface: each lives with its concern and
 * refuses a caller without the `admin` scope (PermissionDenied) before it looks at anything else
 * (tenants/gate.ts).
 *
 * Admin changes of ownership (assign, TXT-registry import) and zone invalidations are written to the
 * journal, in the same transaction as the change, as finished rows whose intent holds `kind` and a
 * `summary`: the journal is the one audit log (ListJournal), applies and admin actions alike.
 */
export { DEFAULT_LIMIT, MAX_LIMIT, requireAdmin } from '../tenants/gate.js';
export { createTenant, disableTenant, listTenants, rotateTenantToken, setTenantMaxChangePercent } from './tenants.js';
export { approvePlan, getPlanAsAdmin, listPlans, planAs, planRevert, type PlanSummary } from './plans.js';
export { assignOwnership, importTxtRegistry, listOwnership, setTenantWithdrawAfter } from './ownership.js';
export { exportZoneFile, invalidateZone } from './zones.js';
export { listJournal, type JournalQuery } from './journal.js';
export type { JournalOperation, JournalView } from '../journal/journal.js';
