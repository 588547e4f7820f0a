/**
 * PublishDomain / UnpublishDomain as core calls: a SYNC desired state of the domain's record sets,
 * scoped to what belongs to the domain (spec.ts, domainScope), planned and applied by core (zone
 * lock, journal, minimal operations, one refresh).
 *
 * Unlike ZoneService's Apply, where a conflict on one record set never blocks the others, a domain
 * is published all or nothing:
 *   1. the domain belongs to one tenant: when another tenant owns any of its record sets, the call is
 *      PermissionDenied and nothing is sent;
 *   2. core's apply plans under the zone lock as an all-or-nothing request: any conflict (a record
 *      made by hand at one of the names, a set another tenant took since step 1) refuses the zone,
 *      nothing is sent, and the call is PermissionDenied naming it; no operation -> NO_CHANGES with
 *      no OVH call.
 */
import { apply, type ZoneApplyResult } from '../core/apply/index.js';
import type { CoreContext } from '../core/context.js';
import { PermissionDeniedError } from '../core/errors.js';
import { listOwnership } from '../core/admin/assign.js';
import { inSyncScope, type PlanInput, type SyncScope } from '../core/plan/input.js';
import { checkNameAllowed, type Tenant } from '../core/tenants/tenants.js';
import { managedZoneNames } from '../core/zones/zones.js';
import { InvalidInputError } from '../dns/errors.js';
import { findZone } from '../dns/names.js';
import { isRecordType, type Conflict } from '../dns/types.js';
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

/** `from`: the client address of the request (its journal row says it). */
export async function publishDomain(ctx: CoreContext, tenant: Tenant, input: PublishInput, from?: string): Promise<PublishResult> {
  const spec = validatePublish(input);
  const zone = await zoneOfDomain(ctx, tenant, spec.domain);
  const result = await syncDomain(
    ctx,
    tenant,
    spec.domain,
    zone,
    {
      kind: 'desired',
      zones: [zone],
      endpoints: domainEndpoints(spec),
      policy: 'sync',
      scope: domainScope(spec.domain),
      allOrNothing: true,
    },
    from,
  );
  if (result.status === 'applied') ctx.log.info({ tenant: tenant.name, domain: spec.domain, zone, changes: result.changes.length }, 'nsm domain published');
  return { domain: spec.domain, zone, result, services: spec.services };
}

export async function unpublishDomain(ctx: CoreContext, tenant: Tenant, input: { domain: string }, from?: string): Promise<DomainResult> {
  const domain = parseDomain(input.domain);
  const zone = await zoneOfDomain(ctx, tenant, domain);
  const result = await syncDomain(
    ctx,
    tenant,
    domain,
    zone,
    {
      kind: 'desired',
      zones: [zone],
      endpoints: [],
      policy: 'sync',
      scope: domainScope(domain),
      allOrNothing: true,
    },
    from,
  );
  if (result.status === 'applied') ctx.log.info({ tenant: tenant.name, domain, zone, changes: result.changes.length }, 'nsm domain unpublished');
  return { domain, zone, result };
}

/** The managed zone holding the domain, checked against the tenant's zones and suffixes. */
async function zoneOfDomain(ctx: CoreContext, tenant: Tenant, domain: string): Promise<string> {
  const zones = await managedZoneNames(ctx);
  const zone = findZone(domain, zones);
  if (zone === undefined) throw new InvalidInputError('domain', `"${domain}" is not in any zone dnsplane manages (${zones.join(', ') || 'none'})`);
  checkNameAllowed(tenant, zone, domain, 'domain');
  return zone;
}

async function syncDomain(
  ctx: CoreContext,
  tenant: Tenant,
  domain: string,
  zone: string,
  input: PlanInput & { kind: 'desired'; scope: SyncScope },
  from: string | undefined,
): Promise<ZoneApplyResult> {
  await assertDomainOwner(ctx, tenant, domain, zone, input.scope);

  // allOrNothing: a conflict (a hand-made record at one of the names, a set taken meanwhile) is found
  // under the zone lock and refuses the zone with nothing sent; nothing to change costs no OVH call.
  const applied = (await apply(ctx, tenant, { input, ...(from !== undefined ? { from } : {}) })).zones.find((z) => z.zone === zone);
  if (applied === undefined) throw new Error(`apply returned no result for zone ${zone}`);
  if (applied.status === 'refused') throw conflictError(domain, applied.conflicts);
  if (applied.error) throw applied.error;
  return applied;
}

/**
 * PermissionDenied when another tenant owns any record set of the domain, even one this publish
 * would not touch: the domain belongs to one tenant. Reads ownership rows only, not the zone.
 */
async function assertDomainOwner(ctx: CoreContext, tenant: Tenant, domain: string, zone: string, scope: SyncScope): Promise<void> {
  const { rows } = await listOwnership(ctx, { zones: [zone], includeUnowned: false });
  const foreign = rows.find((r) => r.tenantId !== tenant.id && isRecordType(r.recordType) && inSyncScope(scope, r.dnsName, r.recordType));
  if (foreign) {
    throw new PermissionDeniedError(
      'domain',
      `NSM domain "${domain}" belongs to tenant "${foreign.tenantName}" (it owns ${foreign.dnsName} ${foreign.recordType}); only that tenant may publish or unpublish it`,
    );
  }
}

function conflictError(domain: string, conflicts: Conflict[]): PermissionDeniedError {
  const what = conflicts.map((c) => `${c.endpoint.dnsName} ${c.endpoint.recordType}: ${c.owner ? `owned by tenant "${c.owner}"` : c.reason}`).join('; ');
  return new PermissionDeniedError('domain', `cannot publish NSM domain "${domain}": ${what}; nothing was sent to OVH`);
}
