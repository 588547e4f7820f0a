/**
 * Which zones dnsplane manages, and the first sync of a zone's cache (list ids, GET each with bounded
 * concurrency, under the zone lock so that concurrent first readers sync once).
 */
import * as store from '../store/index.js';
import type { OvhRecord } from '../ovh/types.js';
import type { CoreContext } from './context.js';
import { NotFoundError } from './errors.js';

/** Registers the managed zones in the database; asks OVH for the list only when none is configured. */
export async function registerZones(ctx: CoreContext): Promise<string[]> {
  const zones = ctx.settings.zones ?? (await ctx.ovh.listZones());
  await store.ensureZones(ctx.pool, zones);
  ctx.log.info({ zones, source: ctx.settings.zones ? 'DNSPLANE_ZONES' : 'GET /domain/zone' }, 'managing zones');
  return zones;
}

export async function managedZones(ctx: CoreContext): Promise<store.Zone[]> {
  return store.listZones(ctx.pool);
}

/** Makes sure the zone's cache holds OVH's records; costs OVH calls only the first time. */
export async function ensureSynced(ctx: CoreContext, zone: string): Promise<store.Zone> {
  const z = await store.getZone(ctx.pool, zone);
  if (!z) throw new NotFoundError(`zone "${zone}" is not managed by dnsplane`);
  if (z.state === 'synced') return z;
  return store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    const again = await store.getZone(tx, zone);
    if (again && again.state === 'synced') return again; // someone synced it while we waited
    await syncZone(ctx, tx, zone);
    return (await store.getZone(tx, zone))!;
  });
}

/** Reads the whole zone from OVH into the cache. The caller holds the zone lock. */
export async function syncZone(ctx: CoreContext, tx: store.Queryable, zone: string): Promise<number> {
  const started = performance.now();
  const ids = await ctx.ovh.listRecordIds(zone);
  const records = await mapLimit(ids, ctx.settings.syncConcurrency, (id) => ctx.ovh.getRecord(zone, id, 2), (done) => {
    if (done % 500 === 0) ctx.log.info({ zone, done, total: ids.length }, 'syncing zone');
  });
  const soa = await ctx.ovh.getSoa(zone);
  await store.replaceZoneRecords(tx, zone, records.map(toRow));
  await store.markSynced(tx, zone, { soaSerial: BigInt(soa.serial) });
  const generation = await store.bumpGeneration(tx, zone);
  ctx.log.info({ zone, records: records.length, generation: String(generation), ms: Math.round(performance.now() - started) }, 'zone synced');
  return records.length;
}

export function toRow(r: OvhRecord): store.RecordRow {
  return { id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
}

export function toOvhRecord(zone: string, r: store.RecordRow): OvhRecord {
  return { ...r, zone };
}

/** Maps with at most `limit` calls in flight, keeping the order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>, progress?: (done: number) => void): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
      done++;
      progress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
