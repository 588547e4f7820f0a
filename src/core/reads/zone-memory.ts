/**
 * The zone as the apply path plans on it: a base of the zone (core/reads/zone-base.ts) with its index
 * (core/reads/base-index.ts), and on top of it what the applies wrote since, per pool (per replica, as
 * the zone lock's in-process queue is: core/zones/lock-queue.ts), at the generation it was last made
 * current at. Used only under the zone lock (core/apply/prepare.ts through core/plan/plan.ts
 * computeLockedZonePlan), where it lets a plan read the record sets it touches (by name) instead of the
 * whole zone:
 *
 * - At each plan, the lock holder reads the zone's row (its generation) in the lock's transaction. When
 *   the read cache holds the base at exactly that generation, the view is that base and its index, with
 *   nothing on top (made anew: it costs the index, which Plans and the served OVH API share). Else the
 *   view kept is used when it is at that generation. Behind it, the view catches up in the
 *   transaction: when this replica heard (NOTIFY, heardZoneChange) every generation in between with
 *   what it changed — another replica's apply says which record ids and ownership sets — only those
 *   are re-read; otherwise (first use, a NOTIFY missed, a sync, a rollback, a recovery, drift, a
 *   change too large for a NOTIFY: anything that moved the generation without saying what it changed) the
 *   whole zone is read again, as a base of its own. Every change of a zone's records or ownership bumps
 *   its generation in the same transaction, so an equal generation means an equal zone: NOTIFY only
 *   makes catching up cheaper, a view that missed one is read again, never trusted.
 * - An apply keeps it current itself: what a member of a group wrote (core/apply/send.ts: the records
 *   after its operations, its ownership rows re-read for the sets it changed) and the generation it
 *   bumped to; what a rollback left (its names' records as re-read); after a failed refresh, the
 *   group's names re-read. Those writes are not committed yet: if the lock's transaction ends in any
 *   other way than a commit, the view is dropped (core/apply/holder.ts), never left ahead of the DB.
 *   They go on top of the base (`names`, `owners`, `tenants` below), never into it: a base is shared.
 *
 * Cost (`npm run bench:kept-forms`): on the read cache's base, only what the applies wrote since (a
 * few hundred bytes a name written). The base it stands on is kept alive by it once the cache moves to
 * a newer one — most of a patched base's objects are its predecessor's, so that costs what the newer
 * one does not share (PINNED_BYTES_PER_RECORD) until the next apply stands on the newer base; a base
 * the cache drops to make room takes the view with it (core/reads/read-cache.ts). Read from Postgres
 * (no base in the cache at its generation), the view owns its base: a base's bytes and its index's.
 * It was, until issue 42's sixth session, maps of its own by name, by id and by tenant: ~0.3 KB a
 * record on top of the base, 15 MB for each 50,000-record zone applied to.
 */
import type pg from 'pg';
import { recordSetKey, type RecordSetKey } from '../../dns/types.js';
import { ovhRecordSetName } from '../../ovh/mapping.js';
import { recordOf, type OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import { Slicer } from '../slices.js';
import { baseIndexOf, INDEX_BYTES_PER_RECORD, type BaseIndex } from './base-index.js';
import { HeardChanges } from './heard-changes.js';
import { compareOwners, compareRecords, sliceAt, type ZoneIndex, type ZoneSlice } from './sets-index.js';
import { baseBytes, readZoneBase, type ZoneBase } from './zone-base.js';

export type { ZoneSlice } from './sets-index.js';

/** Records scanned between two checks of the slice. */
const SLICE_ITEMS = 1024;

/**
 * What a base a view stands on holds that the read cache's newer base (patched from it:
 * core/reads/base-patch.ts) does not share, per record: its arrays, its sets' map and the index's rows
 * (`npm run bench:kept-forms`: 33 B at bench/estate's zone). What the view costs while it keeps such a base alive.
 */
export const PINNED_BYTES_PER_RECORD = 40;
/** What the view holds on top of its base, per name (records or rows) or tenant's set it wrote. */
const WRITTEN_BYTES_PER_ITEM = 300;

/** A record set as the ownership rows name it. */
export interface OwnedSet {
  dnsName: string;
  recordType: string;
}

export class ZoneMemory implements ZoneIndex {
  /** The records at each name the applies wrote since the base (every type; never changed in place). */
  private readonly names = new Map<string, readonly OvhRecord[]>();
  /** The ownership rows at each name whose rows the applies wrote since the base (by type, then target). */
  private readonly owners = new Map<string, readonly store.OwnershipRow[]>();
  /** The record sets of each tenant whose rows the applies wrote since the base, each with its name. */
  private readonly tenants = new Map<string, Map<RecordSetKey, string>>();
  /** The name of each record the applies wrote since the base. */
  private readonly written = new Map<string, string>();
  private records: number;

  private constructor(
    readonly zone: string,
    public generation: bigint,
    /** The base it stands on, and that base's index. */
    readonly base: ZoneBase,
    private readonly index: BaseIndex,
    /** Read from Postgres for this view alone (not the read cache's). */
    readonly ownsBase: boolean,
  ) {
    this.records = base.records.length;
  }

  /** The zone as the read cache's base at the same generation says it (core/reads/zone-base.ts): no read of Postgres, nothing copied. */
  static async fromBase(zone: string, base: ZoneBase, slicer = new Slicer()): Promise<ZoneMemory> {
    return new ZoneMemory(zone, base.generation, base, await baseIndexOf(base, zone, slicer), false);
  }

  /** The zone as `q` sees it (under the lock: the lock's transaction), read a page at a time and made a base in slices. */
  static async read(q: store.Queryable, zone: string, slicer = new Slicer()): Promise<ZoneMemory> {
    const base = await readZoneBase(q, zone, slicer);
    return new ZoneMemory(zone, base.generation, base, await baseIndexOf(base, zone, slicer), true);
  }

  /** Records held. */
  get size(): number {
    return this.records;
  }

  /** What it holds, as the read cache's bound counts it (core/reads/read-cache.ts keepView). */
  keptBytes(): number {
    const own = this.ownsBase ? baseBytes(this.base) + this.base.records.length * INDEX_BYTES_PER_RECORD : this.base.records.length * PINNED_BYTES_PER_RECORD;
    let tenantSets = 0;
    for (const sets of this.tenants.values()) tenantSets += sets.size;
    return own + (this.names.size + this.owners.size + tenantSets) * WRITTEN_BYTES_PER_ITEM;
  }

  /** The records at a name (every type). */
  recordsAt(name: string): readonly OvhRecord[] {
    return this.names.get(name) ?? this.index.recordsAt(name);
  }

  /** The ownership rows at a name (every type), by type then target. */
  ownersAt(name: string): readonly store.OwnershipRow[] {
    return this.owners.get(name) ?? this.index.ownersAt(name);
  }

  /** The records and ownership rows at these names (normalized). */
  slice(names: Iterable<string>): ZoneSlice {
    return sliceAt(this, names);
  }

  /** The record sets the tenant has ownership rows in, each with its name. */
  tenantSetsOf(tenantId: string): ReadonlyMap<RecordSetKey, string> {
    return this.tenants.get(tenantId) ?? this.index.tenantSetsOf(tenantId);
  }

  /** How many record sets the tenant has ownership rows in (core/plan/guard.ts ownedSets). */
  ownedSets(tenantId: string): number {
    return this.tenants.get(tenantId)?.size ?? this.index.ownedSets(tenantId);
  }

  /** The names of the record sets the tenant has ownership rows in. */
  tenantNames(tenantId: string): string[] {
    const sets = this.tenants.get(tenantId);
    return sets ? [...new Set(sets.values())] : this.index.tenantNames(tenantId);
  }

  /** Every record held, in store.listRecords's order (tests compare it with the DB). */
  allRecords(): store.RecordRow[] {
    const out: store.RecordRow[] = [];
    const row = (r: OvhRecord) => out.push({ id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl });
    for (const r of this.base.records) if (!this.names.has(ovhRecordSetName(r.subDomain, this.zone))) row(r);
    for (const at of this.names.values()) for (const r of at) row(r);
    return out.sort((a, b) => compareRecords({ ...a, zone: this.zone }, { ...b, zone: this.zone }));
  }

  /** Every ownership row held (tests). */
  allOwnership(): store.OwnershipRow[] {
    return [...this.base.ownership.filter((o) => !this.owners.has(o.dnsName)), ...[...this.owners.values()].flat()];
  }

  /**
   * Records written (as store.upsertRecords and store.deleteRecords wrote them). `before`: the records
   * the written ids were before the writes (an apply's: the records at its names, read under the lock),
   * so that each is taken from where it was; an id neither written here before nor in `before` is new.
   */
  write(upserts: readonly store.RecordRow[], deletes: readonly string[], before: readonly Pick<OvhRecord, 'id' | 'subDomain'>[] = []): void {
    const was = new Map(before.map((r) => [r.id, ovhRecordSetName(r.subDomain, this.zone)] as const));
    for (const id of deletes) this.remove(id, was.get(id));
    for (const r of upserts) this.put(r, was.get(r.id));
  }

  /** The records of these record sets are now `rows` (as store.replaceRecordsForNames, or re-read). */
  replaceSets(names: readonly store.RecordName[], rows: readonly store.RecordRow[]): void {
    for (const n of names) {
      const name = ovhRecordSetName(n.subDomain, this.zone);
      const at = this.recordsAt(name);
      const kept = at.filter((r) => r.subDomain !== n.subDomain || r.fieldType !== n.fieldType);
      if (kept.length === at.length) continue;
      for (const r of at) if (!kept.includes(r)) this.written.delete(r.id);
      this.records -= at.length - kept.length;
      this.names.set(name, kept);
    }
    for (const r of rows) this.put(r, ovhRecordSetName(r.subDomain, this.zone));
  }

  /** The ownership rows of these record sets are now `rows` (re-read in the transaction that wrote them). */
  replaceOwnership(sets: readonly OwnedSet[], rows: readonly store.OwnershipRow[]): void {
    const gone = new Set(sets.map((s) => recordSetKey(s.dnsName, s.recordType)));
    for (const name of new Set(sets.map((s) => s.dnsName))) {
      const owners = this.ownersAt(name);
      const kept = owners.filter((o) => !gone.has(recordSetKey(o.dnsName, o.recordType)));
      for (const o of owners) if (!kept.includes(o)) this.setsOf(o.tenantId).delete(recordSetKey(o.dnsName, o.recordType));
      this.owners.set(name, kept);
    }
    for (const o of rows) {
      this.owners.set(o.dnsName, [...this.ownersAt(o.dnsName), o].sort(compareOwners));
      this.setsOf(o.tenantId).set(recordSetKey(o.dnsName, o.recordType), o.dnsName);
    }
  }

  /** Re-reads these record sets (records and ownership) and the generation from `q`: what a rollback left. */
  async reread(q: store.Queryable, names: readonly store.RecordName[], sets: readonly OwnedSet[]): Promise<void> {
    this.replaceSets(names, await store.listRecordsForNames(q, this.zone, [...names]));
    this.replaceOwnership(sets, await store.listOwnershipForSets(q, this.zone, sets));
    const z = await store.getZone(q, this.zone);
    if (!z) throw new Error(`zone "${this.zone}" vanished from the database`);
    this.generation = z.generation;
  }

  /**
   * Where these ids' records are in the view now, those the applies wrote or the base holds (a scan
   * of the base, in slices: a catch-up on another replica's writes, whose old names no NOTIFY says).
   */
  async whereAre(ids: readonly string[], slicer = new Slicer()): Promise<Pick<OvhRecord, 'id' | 'subDomain'>[]> {
    const wanted = new Set(ids.filter((id) => !this.written.has(id)));
    const found: Pick<OvhRecord, 'id' | 'subDomain'>[] = [];
    const { records } = this.base;
    for (let i = 0; i < records.length && wanted.size > 0; i++) {
      if (i % SLICE_ITEMS === 0) await slicer.check();
      if (wanted.delete(records[i]!.id)) found.push(records[i]!);
    }
    return found;
  }

  /** The tenant's record sets, as the view holds them from now on (copied from the index at the first write of its rows). */
  private setsOf(tenantId: string): Map<RecordSetKey, string> {
    let sets = this.tenants.get(tenantId);
    if (!sets) this.tenants.set(tenantId, (sets = new Map(this.index.tenantSetsOf(tenantId))));
    return sets;
  }

  private put(r: store.RecordRow, was: string | undefined): void {
    this.remove(r.id, was);
    const name = ovhRecordSetName(r.subDomain, this.zone);
    this.names.set(name, [...this.recordsAt(name), recordOf(this.zone, r)]);
    this.written.set(r.id, name);
    this.records++;
  }

  /** Takes the record `id` from the name it was written at here, else from `was` (where it was before). */
  private remove(id: string, was: string | undefined): void {
    const name = this.written.get(id) ?? was;
    if (name === undefined) return;
    this.written.delete(id);
    const at = this.recordsAt(name);
    const kept = at.filter((r) => r.id !== id);
    if (kept.length === at.length) return;
    this.records -= at.length - kept.length;
    this.names.set(name, kept);
  }
}

/**
 * What the read cache lends a zone's view (core/reads/read-cache.ts): its base at a generation, when
 * built, to make the view from; and its bound, which the view counts against (`keep`: its bytes, the
 * cache's base it stands on if any, and how to forget the view when room is needed).
 */
export interface ViewCache {
  /** Built, or being made from what its writer had in hand (no connection needed: waited for). */
  baseAt(generation: bigint): ZoneBase | undefined | Promise<ZoneBase | undefined>;
  keep(zone: string, view: ZoneMemory, bytes: number, drop: () => void, base?: ZoneBase): void;
}

/** One zone's view, and what this replica heard of the generations past it (NOTIFY). */
interface Kept {
  memory: ZoneMemory;
  heard: HeardChanges;
}

/** Per pool (one replica's database), per zone: its view. */
const memories = new WeakMap<pg.Pool, Map<string, Kept>>();

/** Times a view was read whole from Postgres, per pool (tests, the bench). */
export const zoneMemoryReads = new WeakMap<pg.Pool, number>();
/** Times a view caught up by re-reading only what the generations it missed changed, per pool (tests). */
export const zoneMemoryCatchUps = new WeakMap<pg.Pool, number>();

function count(counter: WeakMap<pg.Pool, number>, pool: pg.Pool): void {
  counter.set(pool, (counter.get(pool) ?? 0) + 1);
}

/**
 * A NOTIFY of the zone's generation (store.listen's zone handler): a generation past the view's is
 * noted with what it changed, if its writer said. Nothing is read here: a view is only caught up
 * under the zone lock (zoneMemoryAt).
 */
export function heardZoneChange(pool: pg.Pool, zone: string, generation: bigint, changed?: store.ZoneChange): void {
  const kept = memories.get(pool)?.get(zone);
  if (!kept || generation <= kept.memory.generation) return;
  kept.heard.note(generation, changed);
}

/**
 * Under the zone lock: the zone's view at `generation` (what the lock's transaction `tx` sees in the
 * zones row). The read cache's base at that generation, when built (a build reading Postgres is never
 * waited for: this runs inside the lock's transaction; one made from a first sync's records, needing no
 * connection, is), with nothing on top; else the one kept when it is at that generation; else, when
 * this replica heard every generation in between with what it changed (another replica's applies),
 * those records and sets re-read from `tx` into the kept one; else the whole zone read from `tx`.
 */
export async function zoneMemoryAt(pool: pg.Pool, tx: store.Queryable, zone: string, generation: bigint, cache?: ViewCache): Promise<ZoneMemory> {
  let byZone = memories.get(pool);
  if (!byZone) memories.set(pool, (byZone = new Map()));
  const kept = byZone.get(zone);
  const accounted = (memory: ZoneMemory): ZoneMemory => {
    const drop = () => {
      if (memories.get(pool)?.get(zone)?.memory === memory) memories.get(pool)!.delete(zone);
    };
    cache?.keep(zone, memory, memory.keptBytes(), drop, memory.ownsBase ? undefined : memory.base);
    return memory;
  };
  const base = await cache?.baseAt(generation);
  if (kept && kept.memory.generation === generation && (!base || kept.memory.base === base)) return accounted(kept.memory);
  const missed = base ? undefined : kept?.heard.between(kept.memory.generation, generation);
  if (kept && missed) {
    const { memory } = kept;
    memory.write(await store.listRecordsByIds(tx, zone, missed.ids), missed.ids, await memory.whereAre(missed.ids));
    memory.replaceOwnership(missed.sets, await store.listOwnershipForSets(tx, zone, missed.sets));
    memory.generation = generation;
    kept.heard.forgetThrough(generation);
    count(zoneMemoryCatchUps, pool);
    return accounted(memory);
  }
  byZone.delete(zone); // the old copy goes before the new one is read (one copy per zone)
  const fresh = base ? await ZoneMemory.fromBase(zone, base) : await ZoneMemory.read(tx, zone);
  if (!base) count(zoneMemoryReads, pool);
  // What was heard past the generation read stays (its NOTIFY may have come before this read).
  const heard = kept?.heard ?? new HeardChanges();
  heard.forgetThrough(fresh.generation);
  byZone.set(zone, { memory: fresh, heard });
  return accounted(fresh);
}

/** The view kept for the zone, if any (tests). */
export function keptZoneMemory(pool: pg.Pool, zone: string): ZoneMemory | undefined {
  return memories.get(pool)?.get(zone)?.memory;
}

/** Forgets the zone's view (its lock's transaction did not commit what was written into it). */
export function dropZoneMemory(pool: pg.Pool, zone: string): void {
  memories.get(pool)?.delete(zone);
}
