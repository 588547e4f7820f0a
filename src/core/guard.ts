/**
 * The guard rail against mass changes (like octoDNS's safety thresholds): an apply that would update
 * or delete more than `maxPercent` of the record sets a tenant owns in a zone, when it owns at least
 * MIN_OWNED there, is refused unless the request says `force`. A typo'd desired state, an empty list
 * from a broken source of truth, or a cluster pointed at the wrong zone then stops before OVH is called.
 *
 * Plans compute it (ZonePlan.threshold) so that they show the counts; Apply computes it again under
 * the zone lock from the recomputed plan (thresholdRefusal), which is what decides.
 */
import type { Change } from '../dns/types.js';
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import { ThresholdError } from './errors.js';
import type { Tenant } from './tenants.js';

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

/** The threshold of one zone's changes for this tenant, who owns `owned` record sets there (ownedSets, or an index's count). */
export async function zoneThreshold(ctx: CoreContext, q: store.Queryable, tenant: Tenant, owned: number, changes: readonly Change[], forced: boolean): Promise<ChangeThreshold> {
  return assessThreshold(changes, owned, await maxChangePercent(ctx, q, tenant), forced);
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

/**
 * Under the zone lock, with the recomputed plan: the error to refuse this zone with, or undefined.
 * Logs the refusal (warn) and counts it (dnsplane_threshold_refusals_total).
 */
export function thresholdRefusal(ctx: CoreContext, tenant: Tenant, zone: string, t: ChangeThreshold | undefined): ThresholdError | undefined {
  if (!t?.exceeded || t.forced) return undefined;
  const message = describeRefusal(zone, tenant.name, t);
  ctx.log.warn({ zone, tenant: tenant.name, owned: t.owned, updates: t.updates, deletes: t.deletes, maxPercent: t.maxPercent }, message);
  ctx.metrics?.thresholdRefused(zone, tenant.name);
  return new ThresholdError(message, zone, t);
}
