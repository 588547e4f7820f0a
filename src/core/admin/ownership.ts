/**
 * The ownership use cases of AdminService: the ownership listing (with each shared target's health
 * state), an assignment, the TXT-registry import, a tenant's withdraw_after. Assignments and imports
 * are journalled as admin actions in the same transaction as the change (journal/audit.ts). Each
 * refuses a caller without the admin scope first (tenants/gate.ts).
 */
import { normalizeName } from '../../dns/names.js';
import type { Endpoint } from '../../dns/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { auditAdminAction } from '../journal/audit.js';
import { healthTargetState } from '../reads/health-view.js';
import { managedZone, requireAdmin, tenantNamed } from '../tenants/gate.js';
import { setTenantWithdrawAfter as runSetWithdrawAfter, type Tenant } from '../tenants/tenants.js';
import { assignOwnership as runAssign, listOwnership as runList, type AssignInput, type AssignResult } from './assign.js';
import { importTxtRegistry as runImport, type ImportInput, type ImportResult } from './import-txt.js';
import { restoreSilent } from '../withdrawals/liveness.js';

export async function listOwnership(
  ctx: CoreContext,
  actor: Tenant,
  q: { zone: string; tenant: string; includeUnowned: boolean },
): Promise<{ rows: store.OwnershipRow[]; unowned: Endpoint[] }> {
  requireAdmin(actor);
  const zones = q.zone === '' ? await store.listZoneNames(ctx.pool) : [await managedZone(ctx, q.zone, 'zone')];
  const tenantId = q.tenant === '' ? undefined : (await tenantNamed(ctx, q.tenant, 'tenant')).id;
  const listed = await runList(ctx, { zones, includeUnowned: q.includeUnowned, ...(tenantId === undefined ? {} : { tenantId }) });
  // A shared target not withdrawn shows its state by its health check (core/reads/health-view.ts).
  const health = new Map<string, store.TargetHealthRow[]>();
  for (const zone of new Set(listed.rows.map((r) => r.zone))) health.set(zone, await store.listTargetHealth(ctx.pool, zone));
  const rows = listed.rows.map((r) => {
    if (r.targetState) return r;
    const targetState = healthTargetState(r, health.get(r.zone)!);
    return targetState ? { ...r, targetState } : r;
  });
  return { ...listed, rows };
}

export async function assignOwnership(ctx: CoreContext, actor: Tenant, input: AssignInput): Promise<AssignResult> {
  requireAdmin(actor);
  const result = await runAssign(ctx, input, (tx, zone, summary, rows) =>
    auditAdminAction(tx, zone, actor, 'assign-ownership', summary, {
      rows: rows.map((r) => ({ dnsName: r.dnsName, recordType: r.recordType, target: r.target, tenant: r.tenantName, shared: r.shared })),
    }),
  );
  ctx.log.info({ zone: result.zone, by: actor.name, summary: result.summary }, 'ownership assigned');
  return result;
}

export async function importTxtRegistry(ctx: CoreContext, actor: Tenant, input: ImportInput): Promise<ImportResult> {
  requireAdmin(actor);
  const zone = input.zone === '' ? '' : normalizeName(input.zone, 'zone');
  // The row names the first adopted sets (all of a small import), and counts them all (import-judge.ts AUDIT_SAMPLE).
  const result = await runImport(ctx, actor, input, (tx, summary, adopted) =>
    auditAdminAction(tx, zone, actor, 'import-txt-registry', summary, {
      adopted: adopted.sample.map((a) => ({ dnsName: a.dnsName, recordType: a.recordType, tenant: a.tenant, ownerId: a.ownerId })),
      adoptedCount: adopted.count,
      byTenant: adopted.byTenant,
    }),
  );
  // Counted, not filtered into a list: 50,000 outcomes were a block of ~10 ms between two slices.
  let adopted = 0;
  for (const a of result.adoptions) if (a.outcome === 'adopted') adopted++;
  ctx.log.info({ zone: result.zone, by: actor.name, dryRun: result.dryRun, adopted }, 'TXT registry import');
  return result;
}

/**
 * The tenant's withdraw_after (core/withdrawals/liveness.ts), or off; turned off, what was withdrawn for its
 * silence is restored now (its next call would do it too).
 */
export async function setTenantWithdrawAfter(ctx: CoreContext, actor: Tenant, name: string, ms: number | null): Promise<Tenant> {
  requireAdmin(actor);
  const t = await runSetWithdrawAfter(ctx.pool, name, ms);
  ctx.log.info(
    { tenant: name, withdrawAfterSeconds: ms === null ? null : ms / 1000, by: actor.name },
    ms === null ? 'tenant withdraw-after off' : 'tenant withdraw-after set',
  );
  if (ms === null) await restoreSilent(ctx, t.id);
  return t;
}
