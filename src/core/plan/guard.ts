/**
 * The guard rail against mass changes (like octoDNS's safety thresholds): an apply that would update
 * or delete more than `maxPercent` of the record sets a tenant owns in a zone, when it owns at least
 * MIN_OWNED there, is refused unless the request says `force`. A typo'd desired state, an empty list
 * from a broken source of truth, or a cluster pointed at the wrong zone then stops before OVH is called.
 *
 * Plans compute it (ZonePlan.threshold) so that they show the counts; Apply computes it again under
 * the zone lock from the recomputed plan (thresholdRefusal), which is what decides.
 */
import type { Change } from '../../dns/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ThresholdError } from '../errors.js';
import { protectedNamesTouched } from './protected-names.js';
import type { Tenant } from '../tenants/tenants.js';

/**
 * How a refusal by the threshold shows on the wire (api/errors.ts sets it as response metadata on the
 * FailedPrecondition; the webhook sidecar reads it to answer 503 rather than 500).
 */
export const REFUSAL_HEADER = 'dnsplane-refusal';
export const REFUSAL_CHANGE_THRESHOLD = 'change-threshold';
/** The zone the refusal is about, beside REFUSAL_HEADER (a multi-zone Apply fails with one zone's error). */
export const REFUSAL_ZONE_HEADER = 'dnsplane-refusal-zone';

/** Below this many owned record sets in a zone, any change goes (a percentage of 3 sets means little). */
export const MIN_OWNED = 10;
export const DEFAULT_MAX_CHANGE_PERCENT = 30;

export interface ChangeThreshold {
  owned: number;
  updates: number;
  deletes: number;
  maxPercent: number;
  /** updates + deletes > maxPercent % of owned, and owned >= MIN_OWNED. */
  exceeded: boolean;
  forced: boolean;
  /**
   * Protected names (core/plan/protected-names.ts) the changes touch: a second admin must approve the plan,
   * under the threshold and with force too. Absent or empty: none.
   */
  protectedNames?: string[];
}

/** Whether an apply of these changes is refused unless a second admin approved it (`approved`). */
export function needsApproval(t: ChangeThreshold | undefined, approved = false): boolean {
  if (!t || approved) return false;
  return (t.exceeded && !t.forced) || (t.protectedNames?.length ?? 0) > 0;
}

/** The record sets (name, type) the tenant owns in the zone: exclusive sets and shared sets it has targets in. */
export function ownedSets(rows: readonly store.OwnershipRow[], tenantId: string): number {
  return new Set(rows.filter((r) => r.tenantId === tenantId).map((r) => `${r.dnsName} ${r.recordType}`)).size;
}

export function assessThreshold(changes: readonly Change[], owned: number, maxPercent: number, forced: boolean): ChangeThreshold {
  const updates = changes.filter((c) => c.action === 'update').length;
  const deletes = changes.filter((c) => c.action === 'delete').length;
  const exceeded = owned >= MIN_OWNED && (updates + deletes) * 100 > owned * maxPercent;
  return { owned, updates, deletes, maxPercent, exceeded, forced };
}

/** The limit for this tenant: its own (an admin set it), else the server's. */
export async function maxChangePercent(ctx: CoreContext, q: store.Queryable, tenant: Tenant): Promise<number> {
  const own = await store.getTenantMaxChangePercent(q, tenant.id);
  return own ?? ctx.settings.maxChangePercent ?? DEFAULT_MAX_CHANGE_PERCENT;
}

/**
 * The threshold of one zone's changes for this tenant, who owns `owned` record sets there (ownedSets,
 * or an index's count), with the protected names they touch.
 */
export async function zoneThreshold(
  ctx: CoreContext,
  q: store.Queryable,
  tenant: Tenant,
  zone: string,
  owned: number,
  changes: readonly Change[],
  forced: boolean,
): Promise<ChangeThreshold> {
  const t = assessThreshold(changes, owned, await maxChangePercent(ctx, q, tenant), forced);
  const touched = await protectedNamesTouched(q, zone, changes);
  return touched.length > 0 ? { ...t, protectedNames: touched } : t;
}

/** What to tell a caller whose apply the threshold stopped: the counts, and the ways forward. */
export function describeRefusal(zone: string, tenant: string, t: ChangeThreshold): string {
  const what = [t.updates ? `update ${t.updates}` : '', t.deletes ? `delete ${t.deletes}` : ''].filter(Boolean).join(' and ');
  const pct = t.owned ? Math.round(((t.updates + t.deletes) * 100) / t.owned) : 0;
  return (
    `change threshold: this apply would ${what} of the ${t.owned} record sets tenant "${tenant}" owns in zone ${zone} ` +
    `(${pct}%, over the limit of ${t.maxPercent}%); nothing was sent. If this is intended, apply again with force ` +
    `(PlanRequest.force / ApplyRequest.force, \`dnsplane apply --force\`), or have an admin raise the tenant's limit ` +
    `(SetTenantMaxChangePercent, \`dnsplane tenant set-max-change\`), or have an admin other than the one who asked ` +
    `approve the stored plan (ApprovePlan, \`dnsplane plan approve PLAN_ID\`)`
  );
}

/** What to tell a caller whose apply touches protected names: which, and the way forward. */
export function describeProtectedRefusal(zone: string, names: readonly string[]): string {
  const shown = names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ');
  return (
    `protected names: this apply changes ${shown}, protected in zone ${zone} by an admin (\`dnsplane zone protected ${zone}\`); ` +
    `nothing was sent. Have an admin other than the one who asked approve the stored plan ` +
    `(ApprovePlan, \`dnsplane plan approve PLAN_ID\`); force does not lift this`
  );
}

/**
 * Under the zone lock, with the recomputed plan: the error to refuse this zone with, or undefined
 * (`approved`: a second admin approved the stored plan). Logs the refusal (warn) and counts it
 * (dnsplane_threshold_refusals_total).
 */
export function thresholdRefusal(ctx: CoreContext, tenant: Tenant, zone: string, t: ChangeThreshold | undefined, approved = false): ThresholdError | undefined {
  if (!t || !needsApproval(t, approved)) return undefined;
  const over = t.exceeded && !t.forced;
  const message = over ? describeRefusal(zone, tenant.name, t) : describeProtectedRefusal(zone, t.protectedNames ?? []);
  ctx.log.warn(
    {
      zone,
      tenant: tenant.name,
      owned: t.owned,
      updates: t.updates,
      deletes: t.deletes,
      maxPercent: t.maxPercent,
      ...(t.protectedNames?.length ? { protectedNames: t.protectedNames } : {}),
    },
    message,
  );
  ctx.metrics?.thresholdRefused(zone, tenant.name);
  return new ThresholdError(message, zone, t);
}
