/**
 * The zone routes of the served OVH API, from the cache (no OVH call): GET /domain/zone (the tenant's
 * zones), GET /domain/zone/{zone}, …/soa, …/status, and POST …/refresh — the tenant's staged writes
 * published as one apply (core/ovh-api/staging.ts), answered 204 as OVH answers a refresh.
 *
 * What OVH's answers hold that dnsplane does not keep is answered as follows: the name servers are the
 * zone's apex NS records; the SOA serial is the zone's generation (it moves with every change of the
 * records or ownership) and its `server` the DNS door where it is advertised (settings.ovhApi.soaServer),
 * which answers that same serial — so a client that compares the two, external-dns, reads the zone
 * again after each change and only then (without a door: the zone's first name server, which answers
 * OVH's serial: it reads every loop); the SOA's other values and `dnssecSupported`/`hasDnsAnycast` are OVH's usual
 * ones (assumed); `isDeployed` is true: a refresh here returns once its apply is published.
 */
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { zoneFacts } from '../core/ovh-api/draft-view.js';
import { visibleZones } from '../core/records/records.js';
import { refreshDraft } from '../core/ovh-api/staging.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { notGrantedCall } from '../ovhwire/errors.js';
import type { Answer } from './http.js';

/** OVH's usual SOA values for a zone it hosts (assumed: no public source lists them). */
const SOA = { email: 'tech@ovh.net', refresh: 86400, expire: 3600000, nxDomainTtl: 86400, ttl: 86400 } as const;

export async function zonesCall(ctx: CoreContext, tenant: Tenant): Promise<Answer> {
  return { json: [...(await visibleZones(ctx, tenant, []))].sort() };
}

export async function zoneCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  const z = await zoneFacts(ctx, tenant, rawZone);
  return {
    // domain.ZoneWithIAM: every property, `iam` null (dnsplane has no IAM resource of the zone to name).
    json: {
      dnssecActivated: false,
      dnssecSupported: true,
      hasDnsAnycast: false,
      iam: null,
      lastUpdate: (z.lastSync ?? new Date(0)).toISOString(),
      name: z.zone,
      nameServers: z.nameServers,
    },
  };
}

export async function soaCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  const z = await zoneFacts(ctx, tenant, rawZone);
  const serial = Number(z.generation % 4294967296n);
  return {
    json: {
      email: SOA.email,
      expire: SOA.expire,
      nxDomainTtl: SOA.nxDomainTtl,
      refresh: SOA.refresh,
      serial,
      server: soaServer(ctx, z.nameServers),
      ttl: SOA.ttl,
    },
  };
}

/**
 * PUT …/soa: refused as OVH refuses a call the key was not granted — the SOA a tool would edit is
 * dnsplane's (its serial the zone's generation, named by the DNS door), OVH's is its own.
 */
export async function soaUpdateCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  const z = await zoneFacts(ctx, tenant, rawZone);
  throw notGrantedCall(
    `PUT /domain/zone/${z.zone}/soa: the SOA of a zone behind dnsplane is dnsplane's (its serial moves with every change) and OVH's is OVH's; neither is edited through this API`,
  );
}

export async function statusCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  await zoneFacts(ctx, tenant, rawZone);
  return { json: { errors: [], isDeployed: true, warnings: [] } };
}

/**
 * POST …/refresh: 204 once the draft is published (or when nothing was staged). Record sets the apply
 * refused (their ownership moved since the write) are left out and named in OVH's 403, the rest published.
 */
export async function refreshCall(ctx: CoreContext, tenant: Tenant, rawZone: string, log: Logger, applicationKey: string, from: string): Promise<Answer> {
  const outcome = await refreshDraft(ctx, tenant, rawZone, applicationKey, from);
  if (outcome.status !== 'nothing_staged') {
    log.info(
      { tenant: tenant.name, zone: outcome.zone, writes: outcome.writes, calls: outcome.calls, status: outcome.status, refused: outcome.refused.length },
      'OVH API refresh: staged writes published',
    );
  }
  if (outcome.refused.length > 0) throw notGrantedCall(`refresh of ${outcome.zone}: the rest was published, not ${outcome.refused.join('; ')}`);
  return { empty: 204 };
}

/** Who answers the served serial on port 53: the DNS door as advertised, else the zone's first name server (OVH's serial). */
function soaServer(ctx: CoreContext, nameServers: readonly string[]): string {
  const door = ctx.settings.ovhApi?.soaServer;
  if (door !== undefined) return `${door}.`;
  return nameServers[0] ? `${nameServers[0]}.` : '';
}
