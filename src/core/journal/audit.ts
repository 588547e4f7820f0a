/**
 * The journal as the audit log of admin actions: each is one finished row whose intent holds its
 * `kind` and a `summary` in words, written in the same transaction as the change it records, so that
 * AdminService.ListJournal shows applies and admin actions alike.
 */
import * as store from '../../store/index.js';
import type { Tenant } from '../tenants/tenants.js';
import { workloadOf } from '../tenants/caller.js';

/**
 * Writes one finished audit row for an admin action, in the caller's transaction. `zone` null: the
 * action concerns no zone; `actor` null: made from the command line (database access, no token).
 */
export async function auditAdminAction(...args: Parameters<typeof auditAdminActionWithId>): Promise<void> {
  await auditAdminActionWithId(...args);
}

/** auditAdminAction, returning the row's id (what a caller names for a later revert: core/admin/handover.ts). */
export async function auditAdminActionWithId(
  tx: store.Queryable,
  zone: string | null,
  actor: Tenant | null,
  kind: string,
  summary: string,
  detail: unknown = {},
): Promise<string> {
  return store.insertAdminAction(tx, { zone, tenantId: actor?.id ?? null, intent: { kind, summary, detail, operations: [], names: [] }, result: { summary } });
}

/** "by <admin>" (with the workload subject that authenticated it, if one did), or "from the command line" (database access, no acting tenant). */
export function actedBy(actor: Tenant | null): string {
  if (!actor) return 'from the command line';
  const w = workloadOf(actor);
  return w ? `by ${actor.name} (workload ${w.subject} of issuer ${w.issuer})` : `by ${actor.name}`;
}
