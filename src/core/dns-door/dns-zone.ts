/**
 * What the DNS door serves of a zone (queries, AXFR): every record set of the cache — the same sets
 * Records serves, whoever owns them, with a name's TXT, SPF, DKIM and DMARC sets as the one TXT set
 * resolvers read (dns/txt-family.ts) —, an index to answer queries from (dns/zone-index.ts) and the
 * zone's SOA. From memory: the zone's current generation comes from the read cache's shared fresh
 * read (core/reads/read-cache.ts), its records from the base kept for that generation; the index is built
 * once per generation and process, in slices. Zero OVH calls, except the first read of a zone never synced
 * (shared by the callers waiting for it, and not tried again for 10 s after it failed: anyone may
 * send a query).
 *
 * The SOA served is dnsplane's, not OVH's: its serial is the zone's generation modulo 2^32, so it
 * increases with every apply (every change of the cache bumps the generation) and a client comparing
 * serials (RFC 1982) sees the change. MNAME is the zone's first apex NS (the servers that publish the
 * zone are OVH's: dnsplane is where changes go in, not where resolvers ask), RNAME hostmaster.<zone>,
 * and the negative-answer TTL is short (60 s), so that a client that asked for a name just before
 * creating it does not cache its absence for long.
 *
 * The SOA question never fails (issue 43: external-dns's OVH provider asks the served SOA's `server`
 * for it and reads the first answer unchecked): every zone read here leaves its SOA in memory
 * (rememberedSoa), and the DNS door answers an apex SOA from it when the fresh read fails or is slow.
 */
import { zoneFinder } from '../../dns/names.js';
import { dnsViewSteps } from '../../dns/txt-family.js';
import type { Endpoint } from '../../dns/types.js';
import { indexZoneSteps, type ZoneIndex } from '../../dns/zone-index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { readCacheOf } from '../reads/read-cache.js';
import type { ZoneBase } from '../reads/zone-base.js';
import { Slicer } from '../slices.js';
import { ensureSynced } from '../zones/zones.js';
import type * as store from '../../store/index.js';

export interface SoaFields {
  mname: string;
  rname: string;
  serial: number;
  refresh: number;
  retry: number;
  expire: number;
  /** The negative-answer TTL (RFC 2308). */
  minimum: number;
  /** The SOA record's own TTL. */
  ttl: number;
}

export interface DnsZone {
  zone: string;
  generation: bigint;
  soa: SoaFields;
  /** Every record set of the zone as resolvers see it (a name's TXT, SPF, DKIM and DMARC as one TXT set), by name (shared: never mutate). */
  endpoints: readonly Endpoint[];
  index: ZoneIndex;
}

/** The last SOA of each zone this process answered or read the generation of (per context). */
const remembered = new WeakMap<CoreContext, Map<string, SoaFields>>();

function remember(ctx: CoreContext, zone: string, soa: SoaFields): void {
  let m = remembered.get(ctx);
  if (!m) remembered.set(ctx, (m = new Map()));
  m.set(zone, soa);
}

/** The SOA last known of a managed zone, from memory (no read): what the door answers when a fresh read fails. */
export function rememberedSoa(ctx: CoreContext, zone: string): SoaFields | undefined {
  return remembered.get(ctx)?.get(zone);
}

/** The SOA timers dnsplane serves (seconds); the serial comes from the generation. */
export const SOA_TIMERS = { refresh: 3600, retry: 600, expire: 1_209_600, minimum: 60, ttl: 3600 } as const;

/** The SOA serial of a generation: it grows by one per change, modulo 2^32 (RFC 1982 arithmetic). */
export function soaSerial(generation: bigint): number {
  return Number(generation % 2n ** 32n);
}

/**
 * The managed zones as they are now (one fresh, shared read: `states`, for dnsZone) and the zone a name
 * belongs to. Always read from Postgres (ZoneStateSource.fresh), never from the states kept in memory:
 * a DNS client that updated a zone through one replica may ask another for its SOA at once.
 */
export async function dnsZones(ctx: CoreContext): Promise<{ names: string[]; zoneOf(name: string): string | undefined; states: ZoneStates }> {
  const states = await readCacheOf(ctx).zoneStates.fresh();
  const names = [...states.keys()];
  for (const [zone, s] of states) {
    const known = rememberedSoa(ctx, zone);
    const serial = soaSerial(s.generation);
    if (known?.serial !== serial) remember(ctx, zone, { ...(known ?? { mname: `ns.${zone}`, rname: `hostmaster.${zone}`, ...SOA_TIMERS }), serial });
  }
  const find = zoneFinder(names);
  return { names, zoneOf: (name) => find(name), states };
}

/** One fresh read of every zone's generation (ReadCache.zoneStates). */
export type ZoneStates = ReadonlyMap<string, store.ZoneGeneration>;

/** Per kept base (one generation), its DnsZone: built once, in slices, shared by the callers meanwhile. */
const built = new WeakMap<ZoneBase, Promise<DnsZone>>();

/**
 * The zone as it is now (its current generation), from memory when that generation is kept. `states`:
 * a fresh read the caller made for this request (dnsZones), used instead of another.
 */
export async function dnsZone(ctx: CoreContext, zone: string, states?: ZoneStates): Promise<DnsZone> {
  const cache = readCacheOf(ctx);
  // baseAt answers undefined when the zone moved past the generation just read: read it again.
  for (let attempt = 0; attempt < 5; attempt++) {
    const state = (attempt === 0 && states ? states : await cache.zoneStates.fresh()).get(zone);
    if (!state) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
    const generation = state.state === 'synced' ? state.generation : await firstRead(ctx, zone);
    const base = await cache.baseExactlyAt(zone, generation);
    if (!base) continue;
    let z = built.get(base);
    if (!z) {
      built.set(base, (z = build(zone, base)));
      z.catch(() => built.delete(base));
    }
    const done = await z;
    remember(ctx, zone, done.soa);
    return done;
  }
  throw new Error(`zone "${zone}" kept changing while it was read; try again`);
}

/**
 * A zone's first read from OVH, when a DNS message is the first to need it. Anyone may send a query,
 * so its cost is bounded: the callers waiting at once share one read, and after a failed read (OVH
 * refusing or away) the next 10 s fail at once, with the same error, instead of each calling OVH.
 */
async function firstRead(ctx: CoreContext, zone: string): Promise<bigint> {
  let reads = firstReads.get(ctx);
  if (!reads) firstReads.set(ctx, (reads = { running: new Map(), failed: new Map() }));
  const failed = reads.failed.get(zone);
  if (failed && failed.until > performance.now()) throw failed.error;
  let running = reads.running.get(zone);
  if (!running) {
    const r = reads;
    running = ensureSynced(ctx, zone)
      .then((z) => z.generation)
      .catch((error: unknown) => {
        r.failed.set(zone, { until: performance.now() + FAILED_READ_MS, error });
        throw error;
      })
      .finally(() => r.running.delete(zone));
    reads.running.set(zone, running);
  }
  return running;
}

/** How long a failed first read of a zone is answered from memory. */
const FAILED_READ_MS = 10_000;
const firstReads = new WeakMap<CoreContext, { running: Map<string, Promise<bigint>>; failed: Map<string, { until: number; error: unknown }> }>();

/** The index of a zone of 50,000 record sets is built in slices (core/slices.ts): no caller waits behind it. */
async function build(zone: string, base: ZoneBase): Promise<DnsZone> {
  const apexNs = base.endpoints.find((e) => e.dnsName === zone && e.recordType === 'NS');
  const slicer = new Slicer();
  const endpoints = await slicer.run(dnsViewSteps(base.endpoints));
  return {
    zone,
    generation: base.generation,
    endpoints,
    index: await slicer.run(indexZoneSteps(zone, endpoints)),
    soa: { mname: apexNs?.targets[0] ?? `ns.${zone}`, rname: `hostmaster.${zone}`, serial: soaSerial(base.generation), ...SOA_TIMERS },
  };
}
