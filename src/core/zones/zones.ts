/**
 * Which zones dnsplane manages, and the first sync of a zone's cache: read from OVH (a page of records
 * per call, or the ids and a GET each), then written under the zone lock; this process's first syncs
 * shared per zone and bounded in number (first-syncs.ts).
 */
import * as store from '../../store/index.js';
import type { OvhApi } from '../../ovh/client.js';
import { recordOf, type OvhRecord } from '../../ovh/types.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { estateFit, readCacheOf } from '../reads/read-cache.js';
import { readSideRows } from '../reads/zone-base.js';
import { readRecords } from './read-records.js';
import { withZoneLockQueued } from './lock-queue.js';
import { firstSyncsOf } from './first-syncs.js';

export { mapLimit } from './read-records.js';

/**
 * Registers the managed zones in the database; asks OVH for the list only when none is configured.
 * Says what the zones would take in the read cache and whether its bound holds them (a zone never
 * synced counts as empty until it is).
 */
export async function registerZones(ctx: CoreContext): Promise<string[]> {
  const zones = ctx.settings.zones ?? (await ctx.ovh.listZones());
  await store.ensureZones(ctx.pool, zones);
  ctx.log.info({ zones, source: ctx.settings.zones ? 'DNSPLANE_ZONES' : 'GET /domain/zone' }, 'managing zones');
  const cache = readCacheOf(ctx);
  const counts = (await store.listZones(ctx.pool, zones)).map((z) => z.recordCount);
  const fit = estateFit(cache.maxBytes, counts);
  const records = counts.reduce((a, b) => a + b, 0);
  const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
  const fields = { zones: fit.zones, records, estimate: fit.bytes, bound: cache.maxBytes, fit: fit.fit };
  if (fit.fit === fit.zones) {
    ctx.log.info(
      fields,
      `read cache: bound ${mib(cache.maxBytes)}; the ${fit.zones} zone(s), ${records} records, take about ${mib(fit.bytes)} read whole: all fit`,
    );
  } else {
    ctx.log.warn(
      fields,
      `read cache: bound ${mib(cache.maxBytes)}; the ${fit.zones} zones, ${records} records, take about ${mib(fit.bytes)} read whole: only ${fit.fit} of them fit at once, the others are read again from Postgres when asked (raise DNSPLANE_READ_CACHE_BYTES, and the memory, to hold them all)`,
    );
  }
  return zones;
}

/** The managed zones' names, from the shared fresh read of core/reads/read-cache.ts (on every request's path). */
export async function managedZoneNames(ctx: CoreContext): Promise<string[]> {
  return [...(await readCacheOf(ctx).zoneStates.get()).keys()];
}

/**
 * Makes sure the zone's cache holds OVH's records; costs OVH calls only the first time. A first sync
 * waits its turn among this process's (first-syncs.ts): callers of one zone share it.
 */
export async function ensureSynced(ctx: CoreContext, zone: string): Promise<store.Zone> {
  const z = await store.getZone(ctx.pool, zone);
  if (!z) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
  if (z.state === 'synced') return z;
  return firstSyncsOf(ctx).run(ctx, zone, () => firstSync(ctx, zone));
}

/**
 * One zone's first sync: read from OVH with no database connection held (nobody writes a zone that is
 * not synced: every writer syncs it first), then written under the zone lock — unless another replica
 * synced it meanwhile (its read stands, this one is dropped).
 */
async function firstSync(ctx: CoreContext, zone: string): Promise<store.Zone> {
  const before = await store.getZone(ctx.pool, zone);
  if (before?.state === 'synced') return before;
  ctx.metrics?.cacheRead(zone, 'miss');
  // Reads only: the zone's fair share of the rate (ovh/ratelimit.ts), no fence needed.
  const read = await readZone(ctx, ctx.ovh.scoped({ flow: { zone } }), zone);
  const waiting = performance.now();
  let side: Awaited<ReturnType<typeof readSideRows>> | undefined;
  const synced = await withZoneLockQueued(ctx, zone, async (tx) => {
    ctx.metrics?.lockWaited(zone, 'sync', (performance.now() - waiting) / 1000);
    const again = await store.getZone(tx, zone);
    if (again && again.state === 'synced') return again; // another replica synced it while this one read
    await writeZone(ctx, tx, zone, read);
    side = await readSideRows(tx, zone);
    return (await store.getZone(tx, zone))!;
  });
  // Committed: the records just written are the zone's base at this generation, made from what is in
  // hand (a zone's 50,000 rows not read back, parsed and allocated a second time); its first readers share it.
  if (side) readCacheOf(ctx).adopt(zone, { generation: synced.generation, records: read.records, ...side });
  return synced;
}

/** What a sync read of a zone: its SOA serial (read first) and its records. */
interface ZoneRead {
  serial: number;
  records: OvhRecord[];
  calls: number;
  mode: string;
  startedAt: number;
}

/**
 * Reads the whole zone from OVH (readRecords: a page of records per call in OVH's expanded mode, else
 * the ids and one GET per record). The SOA serial is read first: a change published while the records
 * are read moves the serial past the one recorded, so the next drift check reads the zone again
 * instead of trusting a mixed read.
 */
async function readZone(ctx: CoreContext, ovh: OvhApi, zone: string): Promise<ZoneRead> {
  const startedAt = performance.now();
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
  return { serial: soa.serial, records, calls, mode, startedAt };
}

/** Replaces the zone's cache with what was read, marks it synced, bumps its generation; in `tx`, under the zone lock. */
async function writeZone(ctx: CoreContext, tx: store.Queryable, zone: string, read: ZoneRead): Promise<void> {
  // 50,000 records made rows in slices (store writes them a batch per statement): nothing holds the event loop.
  // The records are the rows (an OvhRecord is a RecordRow and its zone): written as they are, no copy
  // made. Their types are one string each already: JSON.parse internalizes short strings.
  await store.replaceZoneRecords(tx, zone, read.records);
  await store.markSynced(tx, zone, { soaSerial: BigInt(read.serial) });
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  ctx.log.info(
    {
      zone,
      records: read.records.length,
      calls: read.calls + 1,
      read: read.mode,
      generation: String(generation),
      ms: Math.round(performance.now() - read.startedAt),
    },
    'zone synced',
  );
}

/**
 * Reads the whole zone from OVH into the cache, in `tx` (the caller holds the zone lock: an admin's
 * invalidation). `ovh`: the client the calls go through.
 */
export async function syncZone(ctx: CoreContext, ovh: OvhApi, tx: store.Queryable, zone: string): Promise<number> {
  const read = await readZone(ctx, ovh, zone);
  await writeZone(ctx, tx, zone, read);
  return read.records.length;
}

export function toRow(r: OvhRecord): store.RecordRow {
  return { id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
}

export function toOvhRecord(zone: string, r: store.RecordRow): OvhRecord {
  return recordOf(zone, r);
}
