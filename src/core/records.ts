/**
 * Records: served from the cache. A caller that sends the generation it has gets not_modified for
 * unchanged zones. Steady-state polling costs zero OVH calls.
 */
import type { Endpoint } from '../dns/types.js';
import { recordsToEndpoints } from '../ovh/mapping.js';
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import { InvalidInputError, PermissionDeniedError } from './errors.js';
import { mayUseZone, type Tenant } from './tenants.js';
import { ensureSynced, managedZoneNames, toOvhRecord } from './zones.js';
import { visibleRecordSets } from './ownership.js';
import { normalizeName } from '../dns/names.js';

export interface RecordsQuery {
  zones: string[];
  knownGenerations: Map<string, bigint>;
  includeForeign: boolean;
}

export interface ZoneRecords {
  zone: string;
  generation: bigint;
  notModified: boolean;
  /** Each endpoint carries labels.owner: the owning tenant, '' when nobody owns it. */
  endpoints: Endpoint[];
}

/** The zones a tenant may see: the requested ones (each checked) or all of its zones. */
export async function visibleZones(ctx: CoreContext, tenant: Tenant, requested: string[], field = 'zones'): Promise<string[]> {
  const managed = await managedZoneNames(ctx);
  if (requested.length === 0) return managed.filter((z) => mayUseZone(tenant, z));
  return requested.map((raw, i) => {
    const zone = normalizeName(raw, `${field}[${i}]`);
    if (!managed.includes(zone)) throw new InvalidInputError(`${field}[${i}]`, `"${zone}" is not a zone dnsplane manages`);
    if (!mayUseZone(tenant, zone)) throw new PermissionDeniedError(`${field}[${i}]`, `zone "${zone}" is not one of tenant "${tenant.name}"'s zones`);
    return zone;
  });
}

/** The zones a tenant may see, with their generation and record count (ListZones). */
export async function listVisibleZones(ctx: CoreContext, tenant: Tenant): Promise<store.ZoneWithCount[]> {
  const names = await visibleZones(ctx, tenant, []);
  return store.listZones(ctx.pool, names);
}

export async function records(ctx: CoreContext, tenant: Tenant, q: RecordsQuery): Promise<ZoneRecords[]> {
  const zones = await visibleZones(ctx, tenant, q.zones);
  const out: ZoneRecords[] = [];
  for (const zone of zones) {
    const z = await ensureSynced(ctx, zone);
    const known = q.knownGenerations.get(zone);
    if (known !== undefined && known === z.generation) {
      ctx.metrics?.cacheRead(zone, 'not_modified');
      out.push({ zone, generation: z.generation, notModified: true, endpoints: [] });
      continue;
    }
    ctx.metrics?.cacheRead(zone, 'hit');
    out.push(
      await store.withSnapshot(ctx.pool, async (tx) => {
        const current = (await store.getZone(tx, zone))!;
        const records = (await store.listRecords(tx, zone)).map((r) => toOvhRecord(zone, r));
        const { endpoints } = recordsToEndpoints(records, zone);
        // Owner labels, foreign sets only on request, shared sets split per owner: ownership.ts.
        const shown = visibleRecordSets(tenant.name, zone, endpoints, await store.listOwnership(tx, zone), records, q.includeForeign);
        return { zone, generation: current.generation, notModified: false, endpoints: shown };
      }),
    );
  }
  return out;
}
