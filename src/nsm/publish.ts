/**
 * PublishDomain / UnpublishDomain as core calls: a SYNC desired state of the domain's record sets,
 * scoped to what belongs to the domain (spec.ts, domainScope), planned and applied by core (zone
 * lock, journal, minimal operations, one refresh).
 *
 * Unlike ZoneService's Apply, where a conflict on one record set never blocks the others, a domain
 * is published all or nothing:
 *   1. the domain belongs to one tenant: when another tenant owns any of its record sets, the call is
 *      PermissionDenied and nothing is sent;
 *   2. a dry plan over the cache (no OVH call) must have no conflict (e.g. a record made by hand at
 *      one of the names), else PermissionDenied and nothing is sent; no operation -> NO_CHANGES and
 *      nothing is sent (no lock, no refresh);
 *   3. core's apply recomputes the plan under the zone lock as an all-or-nothing request: should
 *      another tenant have taken one of the names between 2 and 3 (two tenants both granted the
 *      domain), the zone is refused under the lock, nothing is sent, and the call is
 *      PermissionDenied naming the conflict.
 */
import { apply, type ZoneApplyResult } from '../core/apply.js';
import type { CoreContext } from '../core/context.js';
import { PermissionDeniedError } from '../core/errors.js';
import { computeZonePlan, inSyncScope, routeInput, type PlanInput, type SyncScope } from '../core/plan.js';
import { records } from '../core/records.js';
import { checkNameAllowed, type Tenant } from '../core/tenants.js';
import { ensureSynced, managedZones } from '../core/zones.js';
import { InvalidInputError } from '../dns/errors.js';
import { findZone } from '../dns/names.js';
import type { Conflict } from '../dns/types.js';
import { domainEndpoints, domainScope, parseDomain, validatePublish, type PublishInput, type PublishedService } from './spec.js';

export interface DomainResult {
  domain: string;
  zone: string;
  /** Status applied or no_changes; the generation, changes and OVH calls. */
  result: ZoneApplyResult;
}

export interface PublishResult extends DomainResult {
  services: PublishedService[];
}

export async function publishDomain(ctx: CoreContext, tenant: Tenant, input: PublishInput): Promise<PublishResult> {
  const spec = validatePublish(input);
  const zone = await zoneOfDomain(ctx, tenant, spec.domain);
  const result = await syncDomain(ctx, tenant, spec.domain, zone, {
    kind: 'desired',
    zones: [zone],
    endpoints: domainEndpoints(spec),
    policy: 'sync',
    scope: domainScope(spec.domain),
    allOrNothing: true,
  });
  if (result.status === 'applied') ctx.log.info({ tenant: tenant.name, domain: spec.domain, zone, changes: result.changes.length }, 'nsm domain published');
  return { domain: spec.domain, zone, result, services: spec.services };
}

export async function unpublishDomain(ctx: CoreContext, tenant: Tenant, input: { domain: string }): Promise<DomainResult> {
  const domain = parseDomain(input.domain);
  const zone = await zoneOfDomain(ctx, tenant, domain);
  const result = await syncDomain(ctx, tenant, domain, zone, { kind: 'desired', zones: [zone], endpoints: [], policy: 'sync', scope: domainScope(domain), allOrNothing: true });
  if (result.status === 'applied') ctx.log.info({ tenant: tenant.name, domain, zone, changes: result.changes.length }, 'nsm domain unpublished');
  return { domain, zone, result };
}

/** The managed zone holding the domain, checked against the tenant's zones and suffixes. */
async function zoneOfDomain(ctx: CoreContext, tenant: Tenant, domain: string): Promise<string> {
  const zones = (await managedZones(ctx)).map((z) => z.name);
  const zone = findZone(domain, zones);
  if (zone === undefined) throw new InvalidInputError('domain', `"${domain}" is not in any zone dnsplane manages (${zones.join(', ') || 'none'})`);
  checkNameAllowed(tenant, zone, domain, 'domain');
  return zone;
}

async function syncDomain(ctx: CoreContext, tenant: Tenant, domain: string, zone: string, input: PlanInput & { kind: 'desired'; scope: SyncScope }): Promise<ZoneApplyResult> {
  await ensureSynced(ctx, zone);
  await assertDomainOwner(ctx, tenant, domain, zone, input.scope);

  const routed = await routeInput(ctx, tenant, input);
  const dry = await computeZonePlan(ctx, ctx.pool, tenant, zone, routed);
  if (dry.conflicts.length > 0) throw conflictError(domain, dry.conflicts);
  if (dry.operations.length === 0) return { zone, status: 'no_changes', generation: dry.baseGeneration, calls: [], changes: [], conflicts: [] };

  const applied = (await apply(ctx, tenant, { input })).zones.find((z) => z.zone === zone);
  if (applied === undefined) throw new Error(`apply returned no result for zone ${zone}`);
  if (applied.status === 'refused') throw conflictError(domain, applied.conflicts);
  if (applied.error) throw applied.error;
  return applied;
}

/** PermissionDenied when another tenant owns any record set of the domain. */
async function assertDomainOwner(ctx: CoreContext, tenant: Tenant, domain: string, zone: string, scope: SyncScope): Promise<void> {
  const [z] = await records(ctx, tenant, { zones: [zone], knownGenerations: new Map(), includeForeign: true });
  const foreign = (z?.endpoints ?? []).find((e) => inSyncScope(scope, e.dnsName, e.recordType) && (e.labels?.['owner'] ?? '') !== '' && e.labels?.['owner'] !== tenant.name);
  if (foreign) {
    const owner = foreign.labels?.['owner'] ?? '';
    throw new PermissionDeniedError('domain', `NSM domain "${domain}" belongs to tenant "${owner}" (it owns ${foreign.dnsName} ${foreign.recordType}); only that tenant may publish or unpublish it`);
  }
}

function conflictError(domain: string, conflicts: Conflict[]): PermissionDeniedError {
  const what = conflicts.map((c) => `${c.endpoint.dnsName} ${c.endpoint.recordType}: ${c.owner ? `owned by tenant "${c.owner}"` : c.reason}`).join('; ');
  return new PermissionDeniedError('domain', `cannot publish NSM domain "${domain}": ${what}; nothing was sent to OVH`);
}
