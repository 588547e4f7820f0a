/**
 * Which zones dnsplane manages, and the first sync of a zone's cache (list ids, GET each with bounded
 * concurrency, under the zone lock so that concurrent first readers sync once).
 */
import * as store from '../../store/index.js';
import type { OvhApi } from '../../ovh/client.js';
import type { OvhRecord } from '../../ovh/types.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { readCacheOf } from '../reads/read-cache.js';
import { readRecords } from '../reads/read-records.js';
import { withZoneLockQueued } from '../apply/lock-queue.js';
import { Slicer } from '../slices.js';

export { mapLimit } from '../reads/read-records.js';

/** Registers the managed zones in the database; asks OVH for the list only when none is configured. */
export async function registerZones(ctx: CoreContext): Promise<string[]> {
  const zones = ctx.settings.zones ?? (await ctx.ovh.listZones());
  await store.ensureZones(ctx.pool, zones);
  ctx.log.info({ zones, source: ctx.settings.zones ? 'DNSPLANE_ZONES' : 'GET /domain/zone' }, 'managing zones');
  return zones;
}

/** The managed zones' names, from the shared fresh read of core/reads/read-cache.ts (on every request's path). */
export async function managedZoneNames(ctx: CoreContext): Promise<string[]> {
  return [...(await readCacheOf(ctx).zoneStates.get()).keys()];
}

/** Makes sure the zone's cache holds OVH's records; costs OVH calls only the first time. */
export async function ensureSynced(ctx: CoreContext, zone: string): Promise<store.Zone> {
  const z = await store.getZone(ctx.pool, zone);
  if (!z) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
  if (z.state === 'synced') return z;
  const waiting = performance.now();
  // The sync's OVH calls go through the lock's fence: this zone's fair share of the rate (ovh/ratelimit.ts).
  return withZoneLockQueued(ctx, zone, async (tx, fence) => {
    ctx.metrics?.lockWaited(zone, 'sync', (performance.now() - waiting) / 1000);
    const again = await store.getZone(tx, zone);
    if (again && again.state === 'synced') return again; // someone synced it while we waited
    ctx.metrics?.cacheRead(zone, 'miss');
    await syncZone(ctx, fence.ovh, tx, zone);
    return (await store.getZone(tx, zone))!;
  });
}

/**
 * Reads the whole zone from OVH into the cache (readRecords: a page of records per call in OVH's
 * expanded mode, else the ids and one GET per record). The caller holds the zone lock. The SOA serial
 * is read first: a change published while the records are read moves the serial past the one
 * recorded, so the next drift check reads the zone again instead of trusting a mixed read. `ovh`: the
 * lock's fenced client (core/zones/fence.ts).
 */
export async function syncZone(ctx: CoreContext, ovh: OvhApi, tx: store.Queryable, zone: string): Promise<number> {
  const started = performance.now();
  const soa = await ovh.getSoa(zone);
  const { records, calls, mode } = await readRecords(
    ctx,
    ovh,
    zone,
    {},
    {
      progress: (done, total) => {
        if (done % 500 === 0) ctx.log.info({ zone, done, total }, 'syncing zone');
      },
    },
  );
  // 50,000 records made rows in slices (store writes them a batch per statement): nothing holds the event loop.
  await store.replaceZoneRecords(tx, zone, await new Slicer().map(records, toRow, 1024));
  await store.markSynced(tx, zone, { soaSerial: BigInt(soa.serial) });
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  ctx.log.info(
    { zone, records: records.length, calls: calls + 1, read: mode, generation: String(generation), ms: Math.round(performance.now() - started) },
    'zone synced',
  );
  return records.length;
}

export function toRow(r: OvhRecord): store.RecordRow {
  return { id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
}

export function toOvhRecord(zone: string, r: store.RecordRow): OvhRecord {
  return { ...r, zone };
}
