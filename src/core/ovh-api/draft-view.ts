/**
 * What a tenant's tools read through the OVH API dnsplane serves (ovhapi/): the records of a zone as
 * that tenant sees them — its own published records (the sets it owns, its targets of shared sets)
 * from the read cache at the zone's current generation, with its staged writes laid over them (a
 * staged create under its staged id, an update in place, a delete hiding the record), as OVH shows a
 * draft to the account that edits it. No OVH call: the cache and one indexed query of the draft.
 *
 * Records are in the form OVH answers them (TXT quoted: the cache keeps OVH's answers, and a staged
 * TXT is quoted the same way), each under its served id: the id the tool was given, for as long as the
 * record exists — the staged id of a create (before and after its refresh, whatever OVH id the record
 * has now), else the OVH id the record had when the tenant first saw it (store ovh_record_ids holds the
 * ids that differ from the OVH ids, written with the refresh that made them differ). Other tenants'
 * records and records nobody owns are not shown: a tool acts only on what is its own.
 */
import { isRecordType, type RecordType } from '../../dns/types.js';
import type { OvhRecord } from '../../ovh/types.js';
import { txtForAnswer } from '../../ovhwire/records.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { baseIndexOf } from '../reads/base-index.js';
import { canonicalOf } from '../ownership/ownership.js';
import { compareRecords, type ZoneIndex } from '../reads/sets-index.js';
import { readCacheOf } from '../reads/read-cache.js';
import type { ZoneBase } from '../reads/zone-base.js';
import { visibleZones } from '../records/records.js';
import { mayUseZone, type Tenant } from '../tenants/tenants.js';
import { ensureSynced } from '../zones/zones.js';

/** A record as the tenant's tools see it. */
export interface DraftRecord extends OvhRecord {
  /** A staged write not yet published (a create, or an update of a published record). */
  staged: boolean;
}

/** The zone of a call, if the tenant may use it; NotFound otherwise (OVH: "This service does not exist"), never saying whose it is. */
export async function tenantZone(ctx: CoreContext, tenant: Tenant, raw: string): Promise<string> {
  const zone = raw.toLowerCase().replace(/\.$/, '');
  const zones = await visibleZones(ctx, tenant, []);
  if (!zones.includes(zone) || !mayUseZone(tenant, zone)) throw new NotFoundError('zone', zone, `zone "${zone}" is not one of tenant "${tenant.name}"'s zones`);
  return zone;
}

/** The zone's base at its current generation (read cache; the zone synced first when it never was). */
export async function currentBase(ctx: CoreContext, zone: string): Promise<ZoneBase> {
  const cache = readCacheOf(ctx);
  for (let attempt = 0; ; attempt++) {
    // Read fresh, not from the states kept in memory: an OVH API client writes and refreshes through
    // one replica and lists through another in the same breath (go-ovh).
    const seen = (await cache.zoneStates.fresh()).get(zone);
    if (!seen) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
    const generation = seen.state === 'synced' ? seen.generation : (await ensureSynced(ctx, zone)).generation;
    const base = await cache.baseExactlyAt(zone, generation);
    if (base) return base;
    // The zone moved past that generation while its base was read: read its state again.
    if (attempt >= 10) throw new Error(`zone "${zone}" changed on every read of its records (10 times)`);
  }
}

/** The ids a tenant's records are served under where they differ from their OVH ids, both ways. */
export interface ServedIds {
  /** OVH id -> served id. */
  servedOf: ReadonlyMap<string, string>;
  /** Served id -> OVH id. */
  ovhOf: ReadonlyMap<string, string>;
}

export function servedIdsOf(rows: readonly store.ServedId[]): ServedIds {
  return { servedOf: new Map(rows.map((r) => [r.ovhId, r.servedId])), ovhOf: new Map(rows.map((r) => [r.servedId, r.ovhId])) };
}

/** A tenant's served ids at a base's generation, kept once read (they change only with the generation). */
const servedAt = new WeakMap<ZoneBase, Map<string, ServedIds>>();

/**
 * The zone's base at its current generation and the tenant's served ids as of that generation (read
 * in one snapshot with the generation: a refresh writes them in the transaction that moves it).
 */
export async function tenantBase(ctx: CoreContext, tenant: Tenant, zone: string): Promise<{ base: ZoneBase; ids: ServedIds }> {
  for (let attempt = 0; ; attempt++) {
    const base = await currentBase(ctx, zone);
    const knownIds = servedAt.get(base)?.get(tenant.id);
    if (knownIds) return { base, ids: knownIds };
    const read = await store.withSnapshot(ctx.pool, async (q) => ({
      generation: (await store.getZone(q, zone))?.generation,
      rows: await store.listServedIds(q, tenant.id, zone),
    }));
    if (read.generation === base.generation) {
      const ids = servedIdsOf(read.rows);
      let byTenant = servedAt.get(base);
      if (!byTenant) servedAt.set(base, (byTenant = new Map()));
      byTenant.set(tenant.id, ids);
      return { base, ids };
    }
    if (attempt >= 10) throw new Error(`zone "${zone}" changed on every read of its served ids (10 times)`);
  }
}

/** The tenant's own published records of a base, by served id (each with its served id); computed once per base and tenant. */
const owned = new WeakMap<ZoneBase, Map<string, Map<string, OvhRecord>>>();

/**
 * The tenant's published records: the records of the sets it owns whole, and its own targets of
 * shared sets. From the base's index (core/reads/base-index.ts: made once per generation), the tenant's
 * sets only: what it costs follows what the tenant owns, not what the zone holds.
 */
export async function ownRecords(base: ZoneBase, tenant: Tenant, zone: string, ids: ServedIds): Promise<Map<string, OvhRecord>> {
  const index = await baseIndexOf(base, zone);
  let byTenant = owned.get(base);
  if (!byTenant) owned.set(base, (byTenant = new Map()));
  const hit = byTenant.get(tenant.id);
  if (hit) return hit;
  const ownById = ownRecordsIn(index, tenant, zone, ids);
  byTenant.set(tenant.id, ownById);
  return ownById;
}

/** ownRecords from an index of the zone (a base's, or the apply path's view under the lock: not kept). */
export function ownRecordsIn(index: ZoneIndex, tenant: Tenant, zone: string, ids: ServedIds): Map<string, OvhRecord> {
  const records: OvhRecord[] = [];
  for (const [key, name] of index.tenantSetsOf(tenant.id)) {
    const type = key.slice(name.length + 1);
    if (!isRecordType(type)) continue;
    const owners = index.ownersAt(name).filter((o) => o.recordType === type);
    const shared = owners.some((o) => o.shared);
    for (const r of index.recordsAt(name)) {
      if (r.fieldType.toUpperCase() !== type) continue;
      if (shared && !owners.some((o) => o.tenantId === tenant.id && o.target === canonicalOf(r, type as RecordType, zone))) continue;
      records.push(r);
    }
  }
  // In the cache's order (store.listRecords), as a walk of the whole zone would give them.
  const ownById = new Map<string, OvhRecord>();
  for (const r of records.sort(compareRecords)) {
    const served = ids.servedOf.get(r.id);
    if (served === undefined) ownById.set(r.id, r);
    else ownById.set(served, { ...r, id: served });
  }
  return ownById;
}

/** A staged record in the form OVH answers it. */
export function servedRecordOf(zone: string, id: string, r: store.DraftRecord): OvhRecord {
  return {
    id,
    zone,
    subDomain: r.subDomain,
    fieldType: r.fieldType,
    target: r.fieldType === 'TXT' || r.fieldType === 'SPF' ? txtForAnswer(r.target) : r.target,
    ttl: r.ttl,
  };
}

/**
 * The tenant's records: `own` with `draft` laid over it in order. A staged update or delete of a
 * record that is no longer the tenant's (deleted meanwhile, given to another) is left out.
 */
export function ownWithDraft(zone: string, own: ReadonlyMap<string, OvhRecord>, draft: readonly store.DraftRow[]): Map<string, DraftRecord> {
  const out = new Map<string, DraftRecord>();
  for (const [id, r] of own) out.set(id, { ...r, staged: false });
  for (const d of draft) {
    if (d.action === 'delete') out.delete(d.recordId);
    else if (d.action === 'create' || own.has(d.recordId)) out.set(d.recordId, { ...servedRecordOf(zone, d.recordId, d.record!), staged: true });
  }
  return out;
}

export interface RecordFilter {
  fieldType?: string;
  /** Compared without regard to case, as OVH does. */
  subDomain?: string;
}

/** The tenant's records of the zone (published and staged), filtered, by id. */
export async function draftRecords(ctx: CoreContext, tenant: Tenant, zone: string, filter: RecordFilter = {}): Promise<DraftRecord[]> {
  const { base, ids } = await tenantBase(ctx, tenant, zone);
  const draft = await store.listDraft(ctx.pool, tenant.id, zone);
  const sub = filter.subDomain?.toLowerCase();
  return [...ownWithDraft(zone, await ownRecords(base, tenant, zone, ids), draft).values()]
    .filter((r) => (filter.fieldType === undefined || r.fieldType === filter.fieldType) && (sub === undefined || r.subDomain.toLowerCase() === sub))
    .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0));
}

/** What an id names for the tenant: its record (`published`: in OVH; else a staged create), another's, or nothing. */
export type RecordLookup = { kind: 'own'; record: DraftRecord; published: boolean } | { kind: 'foreign' } | { kind: 'absent' };

/**
 * One record by the id a client holds: its served id (a published record's, or a staged create's).
 * The OVH id of one of the tenant's records served under another id names nothing: one id per record.
 */
export async function draftRecord(ctx: CoreContext, tenant: Tenant, zone: string, id: string): Promise<RecordLookup> {
  const { base, ids } = await tenantBase(ctx, tenant, zone);
  const own = await ownRecords(base, tenant, zone, ids);
  const draft = await store.listDraft(ctx.pool, tenant.id, zone, id);
  const drafted = ownWithDraft(zone, own, draft).get(id);
  if (drafted) return { kind: 'own', record: drafted, published: own.has(id) };
  if (draft.some((d) => d.action === 'delete') || ids.servedOf.has(id)) return { kind: 'absent' };
  return (await (await baseIndexOf(base, zone)).hasId(id)) ? { kind: 'foreign' } : { kind: 'absent' };
}

/** What the OVH API says of a zone, from the cache. */
export interface ZoneFacts {
  zone: string;
  /** Moves with every change of the zone's records or ownership (the served SOA's serial). */
  generation: bigint;
  /** The apex NS records' hosts, without the trailing dot (OVH: the zone's name servers). */
  nameServers: string[];
  /** When the cache last matched OVH (its first read, or a drift check). */
  lastSync: Date | null;
}

export async function zoneFacts(ctx: CoreContext, tenant: Tenant, raw: string): Promise<ZoneFacts> {
  const zone = await tenantZone(ctx, tenant, raw);
  const base = await currentBase(ctx, zone);
  const { nameServers } = await baseIndexOf(base, zone);
  const z = await store.getZone(ctx.pool, zone);
  return { zone, generation: base.generation, nameServers, lastSync: z?.lastSync ?? null };
}
