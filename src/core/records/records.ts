/**
 * Records: served from the cache. A caller that sends the generation it has gets not_modified for
 * unchanged zones. Steady-state polling costs zero OVH calls.
 */
import type { Endpoint } from '../../dns/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { InvalidInputError, PermissionDeniedError } from '../errors.js';
import { mayUseZone, type Tenant } from '../tenants/tenants.js';
import { ensureSynced, managedZoneNames } from '../zones/zones.js';
import { readCacheOf } from '../reads/read-cache.js';
import { normalizeName } from '../../dns/names.js';

export interface RecordsQuery {
  zones: string[];
  knownGenerations: Map<string, bigint>;
  includeForeign: boolean;
  /**
   * `zones` normalized, set here on first use: a poller's query is kept as it parsed it
   * (api/records-json.ts) and names the same zones thousands of times a second.
   */
  normalizedZones?: string[];
  /**
   * notModifiedNow's answers, set there: per tenant, the answer and the states it was made from. The
   * states kept in memory are a new map whenever a generation moves, and a tenant whose zones change is
   * a new object (its credentials are read again), so an answer made from the same map for the same
   * tenant is the same answer: a poll that finds it costs two identity checks.
   */
  notModified?: WeakMap<Tenant, { states: ZoneStates; answer: readonly ZoneRecords[] }>;
}

export interface ZoneRecords {
  zone: string;
  generation: bigint;
  notModified: boolean;
  /**
   * Each endpoint carries labels.owner: the owning tenant, '' when nobody owns it. Shared with the
   * read cache and every other caller of the same view: read it, never change it.
   */
  endpoints: Endpoint[];
}

/** The zones a tenant may see: the requested ones (each checked) or all of its zones. */
export async function visibleZones(ctx: CoreContext, tenant: Tenant, requested: string[], field = 'zones'): Promise<string[]> {
  return pickZones(await managedZoneNames(ctx), tenant, requested, field);
}

function pickZones(managed: readonly string[], tenant: Tenant, requested: string[], field: string, normalized?: string[]): string[] {
  if (requested.length === 0) return managed.filter((z) => mayUseZone(tenant, z));
  normalized ??= requested.map((raw, i) => normalizeName(raw, `${field}[${i}]`));
  for (const [i, zone] of normalized.entries()) {
    if (!managed.includes(zone)) throw new InvalidInputError(`${field}[${i}]`, `"${zone}" is not a zone dnsplane manages`);
    if (!mayUseZone(tenant, zone)) throw new PermissionDeniedError(`${field}[${i}]`, `zone "${zone}" is not one of tenant "${tenant.name}"'s zones`);
  }
  return normalized;
}

/** The query's zones as pickZones picks them, their normalized names kept on the query (an invalid one throws each time, naming its field). Callers only read the array. */
function zonesOf(states: ZoneStates, tenant: Tenant, q: RecordsQuery): string[] {
  q.normalizedZones ??= q.zones.map((raw, i) => normalizeName(raw, `zones[${i}]`));
  return pickZones(namesOf(states), tenant, q.zones, 'zones', q.normalizedZones);
}

/**
 * One generation read (ReadCache.zoneStates). A caller that makes several steps of one request (the
 * webhook's scope, then its records) may pass the read it got to the next step, provided the read
 * was made for this request (it started after the request arrived): the answer stays exact.
 */
export type ZoneStates = ReadonlyMap<string, store.ZoneGeneration>;

/** visibleZones from a generation read the caller already has (see ZoneStates). */
export function visibleZonesIn(states: ZoneStates, tenant: Tenant, requested: string[], field = 'zones'): string[] {
  return pickZones(namesOf(states), tenant, requested, field);
}

/** The zone names of one generation read, listed once for every call that shares that read. */
const names = new WeakMap<ReadonlyMap<string, unknown>, string[]>();

function namesOf(states: ReadonlyMap<string, unknown>): string[] {
  let list = names.get(states);
  if (!list) names.set(states, (list = [...states.keys()]));
  return list;
}

/** The zones a tenant may see, with their generation and record count (ListZones). */
export async function listVisibleZones(ctx: CoreContext, tenant: Tenant): Promise<store.ZoneWithCount[]> {
  const names = await visibleZones(ctx, tenant, []);
  return store.listZones(ctx.pool, names);
}

/**
 * Answered from memory (core/reads/read-cache.ts): the zones' generations as this replica knows them (kept
 * while its listener is live, else one shared, fresh read), then the tenant's view of each zone at its
 * current generation, built from one snapshot on a miss. A caller that names a zone not known here,
 * or says it has a generation newer than the one known here, gets a fresh read instead: it has seen
 * a change this replica has not heard of yet.
 */
export async function records(ctx: CoreContext, tenant: Tenant, q: RecordsQuery, fresh?: ZoneStates): Promise<ZoneRecords[]> {
  const cache = readCacheOf(ctx);
  const states = fresh ?? keptStates(cache, q) ?? (await cache.zoneStates.fresh());
  const zones = zonesOf(states, tenant, q);
  const out: ZoneRecords[] = [];
  for (const zone of zones) {
    const seen = states.get(zone)!;
    const z = seen.state === 'synced' ? seen : await ensureSynced(ctx, zone);
    const known = q.knownGenerations.get(zone);
    if (known !== undefined && known === z.generation) {
      ctx.metrics?.cacheRead(zone, 'not_modified');
      out.push({ zone, generation: z.generation, notModified: true, endpoints: [] });
      continue;
    }
    ctx.metrics?.cacheRead(zone, 'hit');
    // Owner labels, foreign sets only on request, shared sets split per owner: core/ownership/ownership.ts.
    const view = await cache.view(zone, z.generation, tenant.name, q.includeForeign);
    out.push({ zone, generation: view.generation, notModified: false, endpoints: view.endpoints as Endpoint[] });
  }
  return out;
}

/**
 * records() answered in this turn, without a promise, when it can be: on the states kept in memory,
 * every zone asked for synced and not modified (a cluster's poll that has the current generations).
 * Undefined otherwise: call records().
 */
export function notModifiedNow(ctx: CoreContext, tenant: Tenant, q: RecordsQuery): readonly ZoneRecords[] | undefined {
  const cache = readCacheOf(ctx);
  const made = q.notModified?.get(tenant);
  if (made !== undefined && made.states === cache.zoneStates.now()) return counted(ctx, made.answer);
  const states = keptStates(cache, q);
  if (states === undefined) return undefined;
  const zones = zonesOf(states, tenant, q);
  const out: ZoneRecords[] = [];
  for (const zone of zones) {
    const z = states.get(zone)!;
    if (z.state !== 'synced' || q.knownGenerations.get(zone) !== z.generation) return undefined;
    out.push({ zone, generation: z.generation, notModified: true, endpoints: [] });
  }
  (q.notModified ??= new WeakMap()).set(tenant, { states, answer: out });
  return counted(ctx, out);
}

/** A not-modified answer counted in the cache's reads, zone by zone. */
function counted(ctx: CoreContext, answer: readonly ZoneRecords[]): readonly ZoneRecords[] {
  for (const z of answer) ctx.metrics?.cacheRead(z.zone, 'not_modified');
  return answer;
}

/** The states kept in memory, if they may answer this request (the caller not ahead of them). */
function keptStates(cache: ReturnType<typeof readCacheOf>, q: RecordsQuery): ZoneStates | undefined {
  const states = cache.zoneStates.now();
  return states !== undefined && !aheadOf(states, q) ? states : undefined;
}

/** Whether the caller knows more than `states` (kept in memory) do: a zone they lack, a newer generation. */
function aheadOf(states: ZoneStates, q: RecordsQuery): boolean {
  for (const raw of q.zones) if (!states.has(raw) && !states.has(raw.toLowerCase().replace(/\.$/, ''))) return true;
  for (const [zone, generation] of q.knownGenerations) {
    const z = states.get(zone);
    if (z !== undefined && generation > z.generation) return true;
  }
  return false;
}
