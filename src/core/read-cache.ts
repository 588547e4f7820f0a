/**
 * The hot reads from memory, exact across replicas.
 *
 * What a zone holds at a generation never changes: every change of its records or ownership bumps
 * the generation in the same transaction. So a Records answer can be kept in memory keyed by
 * (zone, generation, the caller's view) and is exact for as long as the generation is current; the
 * only question is how a replica knows the current generation. It asks Postgres, but not once per
 * request: FreshRead shares one `SELECT … FROM zones` among every caller that arrived while it was
 * waiting for its turn, and never hands a caller a read that started before the caller arrived. A
 * change committed (on any replica) before a Records request arrived is therefore in its answer,
 * and a not-modified poll costs a share of one small query instead of a query of its own.
 *
 * Views are built once per (zone, generation, tenant, includeForeign) from one REPEATABLE READ
 * snapshot of the zone (records and ownership at the generation the snapshot saw), shared by every
 * caller of that view, and dropped when a newer generation of the same view is built (or when more
 * than maxViews views are kept, least recently used first).
 */
import type pg from 'pg';
import type { Endpoint, RecordSetKey } from '../dns/types.js';
import { recordsToEndpointsSteps } from '../ovh/mapping.js';
import type { OvhRecord } from '../ovh/types.js';
import * as store from '../store/index.js';
import { visibleRecordSetsSteps } from './ownership.js';
import { Slicer } from './slices.js';

/**
 * Coalesces a read: get() resolves with the result of a read that started at or after the call.
 * While one read runs, every new caller waits for the next one, which starts when it ends: at most
 * one read runs at a time and each caller waits at most about two reads.
 *
 * The next read starts in the check phase after the current one ends (setImmediate), not in the
 * microtask that sees it end: requests whose bytes arrived in the same turn of the event loop as the
 * read's answer are handled first and share it, instead of each waiting for a read of its own
 * (under load that halves the reads per request; a caller waits at most one more loop turn).
 */
export class FreshRead<T> {
  private running: Promise<T> | undefined;
  private queued: Promise<T> | undefined;
  /** Reads started (for tests and metrics). */
  reads = 0;

  constructor(private readonly read: () => Promise<T>) {}

  get(): Promise<T> {
    // A queued read has not started yet: it is fresh for this caller too.
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    const after = this.running.then(
      () => new Promise<void>((resolve) => setImmediate(resolve)),
      () => new Promise<void>((resolve) => setImmediate(resolve)),
    );
    this.queued = after.then(() => {
      this.queued = undefined;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<T> {
    this.reads++;
    const p: Promise<T> = this.read().finally(() => {
      if (this.running === p) this.running = undefined;
    });
    this.running = p;
    return p;
  }
}

/**
 * One zone as a snapshot saw it: the base every view of the zone at that generation is cut from, and
 * what a Plan diffs against (core/plan.ts). Shared: never mutate it.
 */
export interface ZoneBase {
  generation: bigint;
  records: OvhRecord[];
  /** The records of each record set (RecordMapping.recordsByKey). */
  recordsByKey: ReadonlyMap<RecordSetKey, readonly OvhRecord[]>;
  endpoints: Endpoint[];
  ownership: store.OwnershipRow[];
}

/** A zone's records and ownership rows, as read, made a ZoneBase in slices (a zone may hold 20,000 records). */
export async function zoneBaseOf(zone: string, generation: bigint, rows: readonly store.RecordRow[], ownership: store.OwnershipRow[], slicer: Slicer): Promise<ZoneBase> {
  const records = await slicer.map(rows, (r): OvhRecord => ({ ...r, zone }), 256);
  const { endpoints, recordsByKey } = await slicer.run(recordsToEndpointsSteps(records, zone));
  return { generation, records, recordsByKey, endpoints, ownership };
}

/** Reads a zone's base from `q` (a snapshot, or a transaction that sees its own changes). */
export async function readZoneBase(q: store.Queryable, zone: string, slicer: Slicer): Promise<ZoneBase> {
  const read = await readZoneRows(q, zone);
  return zoneBaseOf(zone, read.generation, read.rows, read.ownership, slicer);
}

/** What a base is made of, as `q` sees it: the generation, the records and the ownership rows. */
async function readZoneRows(q: store.Queryable, zone: string): Promise<{ generation: bigint; rows: store.RecordRow[]; ownership: store.OwnershipRow[] }> {
  const current = await store.getZone(q, zone);
  if (!current) throw new Error(`zone "${zone}" vanished from the database`);
  return { generation: current.generation, rows: await store.listRecords(q, zone), ownership: await store.listOwnership(q, zone) };
}

/** A tenant's view of a zone at a generation. The endpoints array is shared: never mutate it. */
export interface ZoneView {
  generation: bigint;
  endpoints: readonly Endpoint[];
}

interface Entry<T> {
  generation: bigint;
  value: Promise<T>;
  /** The value once built (a caller that must not wait for a build reads this). */
  settled?: T;
}

export interface ReadCacheOptions {
  /** Views kept at most (tenant × zone × includeForeign); least recently used dropped first. Default 1,000. */
  maxViews?: number;
  /** Called at each fresh read of the zones' states (metrics). */
  onZoneStatesRead?: () => void;
}

export class ReadCache {
  /** Every zone's generation and state, read fresh (see FreshRead). */
  readonly zoneStates: FreshRead<Map<string, store.ZoneGeneration>>;
  private readonly bases = new Map<string, Entry<ZoneBase>>();
  private readonly views = new Map<string, Entry<ZoneView>>();
  private readonly maxViews: number;
  /** Views built (misses), for tests and the bench. */
  builds = 0;

  constructor(private readonly pool: pg.Pool, opts: ReadCacheOptions = {}) {
    this.maxViews = opts.maxViews ?? 1_000;
    this.zoneStates = new FreshRead(async () => {
      opts.onZoneStatesRead?.();
      return new Map((await store.listZoneStates(pool)).map((z) => [z.name, z]));
    });
  }

  /**
   * The tenant's view of the zone at `generation` (the current one, as zoneStates just read it) or
   * later: built from Postgres on a miss, shared by concurrent callers.
   */
  view(zone: string, generation: bigint, tenant: string, includeForeign: boolean): Promise<ZoneView> {
    const key = `${zone}\u0000${tenant}\u0000${includeForeign ? 1 : 0}`;
    const hit = this.views.get(key);
    if (hit && hit.generation >= generation) {
      this.views.delete(key); // most recently used last
      this.views.set(key, hit);
      return hit.value;
    }
    const entry: Entry<ZoneView> = {
      generation,
      value: this.base(zone, generation).then(async (b) => {
        this.builds++;
        entry.generation = b.generation;
        return {
          generation: b.generation,
          endpoints: await new Slicer().run(visibleRecordSetsSteps(tenant, zone, b.endpoints, b.ownership, b.recordsByKey, includeForeign)),
        };
      }),
    };
    entry.value.catch(() => {
      if (this.views.get(key) === entry) this.views.delete(key);
    });
    this.views.delete(key);
    this.views.set(key, entry);
    while (this.views.size > this.maxViews) this.views.delete(this.views.keys().next().value!);
    return entry.value;
  }

  /** Views kept now (for tests). */
  get size(): number {
    return this.views.size;
  }

  /**
   * The zone's base at exactly `generation` (committed: what a snapshot at that generation sees), from
   * memory or built now; undefined when the zone has moved past it meanwhile (the caller reads its own).
   */
  async baseAt(zone: string, generation: bigint): Promise<ZoneBase | undefined> {
    const b = await this.base(zone, generation);
    return b.generation === generation ? b : undefined;
  }

  /**
   * The zone's base kept at exactly `generation`, if it is built: never waits for a build (a caller
   * inside a transaction must not wait for a connection another build may be waiting for).
   */
  kept(zone: string, generation: bigint): ZoneBase | undefined {
    const hit = this.bases.get(zone);
    return hit?.settled?.generation === generation ? hit.settled : undefined;
  }

  /**
   * Keeps a base a caller read from a committed snapshot (a Plan's), unless one as new is kept: the
   * next Plan or Records view of that generation takes it instead of reading the zone again.
   */
  keep(zone: string, base: ZoneBase): void {
    const hit = this.bases.get(zone);
    if (hit && hit.generation >= base.generation) return;
    this.bases.set(zone, { generation: base.generation, value: Promise.resolve(base), settled: base });
  }

  private base(zone: string, generation: bigint): Promise<ZoneBase> {
    const hit = this.bases.get(zone);
    if (hit && hit.generation >= generation) return hit.value;
    const build = async (): Promise<ZoneBase> => {
      // Read in one snapshot, then mapped outside it, in slices.
      const read = await store.withSnapshot(this.pool, (q) => readZoneRows(q, zone));
      entry.generation = read.generation;
      return (entry.settled = await zoneBaseOf(zone, read.generation, read.rows, read.ownership, new Slicer()));
    };
    const entry: Entry<ZoneBase> = { generation, value: build() };
    entry.value.catch(() => {
      if (this.bases.get(zone) === entry) this.bases.delete(zone);
    });
    this.bases.set(zone, entry);
    return entry.value;
  }
}

/** One ReadCache per pool (per database) unless the context brings its own. */
const byPool = new WeakMap<pg.Pool, ReadCache>();

export function readCacheOf(ctx: { pool: pg.Pool; reads?: ReadCache }): ReadCache {
  if (ctx.reads) return ctx.reads;
  let c = byPool.get(ctx.pool);
  if (!c) byPool.set(ctx.pool, (c = new ReadCache(ctx.pool)));
  return c;
}
