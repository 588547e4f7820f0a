/**
 * The zone as the apply path plans on it: one indexed copy of a zone's records cache and ownership
 * rows in memory, per pool (per replica, as the zone lock's in-process queue is: core/zones/lock-queue.ts), at
 * the generation it was last made current at. Used only under the zone lock (core/apply/prepare.ts
 * through core/plan/plan.ts computeLockedZonePlan), where it lets a plan read the record sets it touches
 * (by name) instead of the whole zone:
 *
 * - At each plan, the lock holder reads the zone's row (its generation) in the lock's transaction. The
 *   view is used when it is at exactly that generation. Behind it, the view catches up in the
 *   transaction: when this replica heard (NOTIFY, heardZoneChange) every generation in between with
 *   what it changed — another replica's apply says which record ids and ownership sets — only those
 *   are re-read; otherwise (first use, a NOTIFY missed, a sync, a rollback, a recovery, drift, a
 *   change too large for a NOTIFY: anything that moved the generation without saying what it changed) the
 *   whole zone is read again. Every change of a zone's records or ownership bumps its generation in
 *   the same transaction, so an equal generation means an equal zone: NOTIFY only makes catching up
 *   cheaper, a view that missed one is read again, never trusted.
 * - An apply keeps it current itself: what a member of a group wrote (core/apply/send.ts: the records
 *   after its operations, its ownership rows re-read for the sets it changed) and the generation it
 *   bumped to; what a rollback left (its names' records as re-read); after a failed refresh, the
 *   group's names re-read. Those writes are not committed yet: if the lock's transaction ends in any
 *   other way than a commit, the view is dropped (core/apply/holder.ts), never left ahead of the DB.
 *
 * Cost (measured, node 20): read from Postgres, about 0.4 KB a record and 0.45 KB an ownership row,
 * indexes included: 21 MB for a 50,000-record zone, 44 MB when every record set is owned. Made from the
 * read cache's base, only its indexes (the records, rows and each name's one record set's array are the
 * base's): ~0.2 KB a record, 9 MB for bench/estate's zone of 50,000 records and 25,000 owned sets (was
 * 12 MB with an array of its own per name). One copy per zone a replica applies to.
 */
import type pg from 'pg';
import { isRecordType, recordSetKey } from '../../dns/types.js';
import { ovhRecordSetName } from '../../ovh/mapping.js';
import { recordOf, type OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import { Slicer } from '../slices.js';
import { HeardChanges } from './heard-changes.js';
import { compareRecords, SetsIndex } from './sets-index.js';
import type { ZoneBase } from './zone-base.js';

export type { ZoneSlice } from './sets-index.js';

/** Records or rows indexed between two checks of the slice. */
const SLICE_ITEMS = 1024;

/** A record set as the ownership rows name it. */
export interface OwnedSet {
  dnsName: string;
  recordType: string;
}

export class ZoneMemory extends SetsIndex {
  private readonly nameById = new Map<string, string>();

  constructor(
    zone: string,
    public generation: bigint,
    rows: readonly store.RecordRow[],
    ownership: readonly store.OwnershipRow[],
  ) {
    super(zone);
    for (const r of rows) this.put(r);
    for (const o of ownership) this.addOwner(o);
  }

  /**
   * The zone from the read cache's base at the same generation (core/reads/zone-base.ts): its record
   * and ownership objects shared, not copied (they are never changed: a write here replaces them), and
   * no read of Postgres.
   */
  static async fromBase(
    zone: string,
    base: Pick<ZoneBase, 'generation' | 'records' | 'recordsByKey' | 'ownership'>,
    slicer = new Slicer(),
  ): Promise<ZoneMemory> {
    const memory = new ZoneMemory(zone, base.generation, [], []);
    // In slices: twenty zones' first applies at once indexed 50,000 records each in one block
    // (bench/estate's 100 applies held the loop ~2 s).
    let n = 0;
    // Every record of a type dnsplane manages is in a set of recordsByKey (ovh/mapping.ts), named by its key.
    for (const [key, records] of base.recordsByKey) {
      if (++n % SLICE_ITEMS === 0) await slicer.check();
      const name = key.slice(0, key.lastIndexOf(' '));
      memory.addRecords(name, records);
      for (const r of records) memory.nameById.set(r.id, name);
    }
    // Records of types no set is made of (core/reads/base-index.ts does the same).
    for (const r of base.records) {
      if (++n % SLICE_ITEMS === 0) await slicer.check();
      if (!isRecordType(r.fieldType.toUpperCase())) memory.keep(ovhRecordSetName(r.subDomain, zone), r);
    }
    for (const o of base.ownership) {
      if (++n % SLICE_ITEMS === 0) await slicer.check();
      memory.addOwner(o);
    }
    return memory;
  }

  /** The zone as `q` sees it (under the lock: the lock's transaction), read a page at a time and indexed in slices. */
  static async read(q: store.Queryable, zone: string, slicer = new Slicer()): Promise<ZoneMemory> {
    const z = await store.getZone(q, zone);
    if (!z) throw new Error(`zone "${zone}" vanished from the database`);
    const memory = new ZoneMemory(zone, z.generation, [], []);
    await store.listRecordsInPages(q, zone, async (rows) => {
      for (let i = 0; i < rows.length; i++) {
        if (i % SLICE_ITEMS === 0) await slicer.check();
        memory.put(rows[i]!);
      }
    });
    await store.listOwnershipInPages(q, zone, async (rows) => {
      for (let i = 0; i < rows.length; i++) {
        if (i % SLICE_ITEMS === 0) await slicer.check();
        memory.addOwner(rows[i]!);
      }
    });
    return memory;
  }

  /** Records held (tests). */
  get size(): number {
    return this.nameById.size;
  }

  /** Every record held, in store.listRecords's order (tests compare it with the DB). */
  allRecords(): store.RecordRow[] {
    const out: store.RecordRow[] = [];
    for (const at of this.byName.values())
      for (const r of at) out.push({ id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl });
    return out.sort((a, b) => compareRecords({ ...a, zone: this.zone }, { ...b, zone: this.zone }));
  }

  /** Every ownership row held (tests). */
  allOwnership(): store.OwnershipRow[] {
    return [...this.ownersByName.values()].flat();
  }

  /** Records written (as store.upsertRecords and store.deleteRecords wrote them). */
  write(upserts: readonly store.RecordRow[], deletes: readonly string[]): void {
    for (const id of deletes) this.remove(id);
    for (const r of upserts) this.put(r);
  }

  /** The records of these record sets are now `rows` (as store.replaceRecordsForNames, or re-read). */
  replaceSets(names: readonly store.RecordName[], rows: readonly store.RecordRow[]): void {
    for (const n of names) {
      const at = this.byName.get(ovhRecordSetName(n.subDomain, this.zone));
      for (const r of [...(at ?? [])]) if (r.subDomain === n.subDomain && r.fieldType === n.fieldType) this.remove(r.id);
    }
    for (const r of rows) this.put(r);
  }

  /** The ownership rows of these record sets are now `rows` (re-read in the transaction that wrote them). */
  replaceOwnership(sets: readonly OwnedSet[], rows: readonly store.OwnershipRow[]): void {
    const gone = new Set(sets.map((s) => recordSetKey(s.dnsName, s.recordType)));
    for (const name of new Set(sets.map((s) => s.dnsName))) {
      const owners = this.ownersByName.get(name);
      if (!owners) continue;
      const kept = owners.filter((o) => !gone.has(recordSetKey(o.dnsName, o.recordType)));
      for (const o of owners) if (!kept.includes(o)) this.tenantSets.get(o.tenantId)?.delete(recordSetKey(o.dnsName, o.recordType));
      if (kept.length) this.ownersByName.set(name, kept);
      else this.ownersByName.delete(name);
    }
    for (const o of rows) this.addOwner(o);
  }

  /** Re-reads these record sets (records and ownership) and the generation from `q`: what a rollback left. */
  async reread(q: store.Queryable, names: readonly store.RecordName[], sets: readonly OwnedSet[]): Promise<void> {
    this.replaceSets(names, await store.listRecordsForNames(q, this.zone, [...names]));
    this.replaceOwnership(sets, await store.listOwnershipForSets(q, this.zone, sets));
    const z = await store.getZone(q, this.zone);
    if (!z) throw new Error(`zone "${this.zone}" vanished from the database`);
    this.generation = z.generation;
  }

  private put(r: store.RecordRow): void {
    this.remove(r.id);
    this.keep(ovhRecordSetName(r.subDomain, this.zone), recordOf(this.zone, r));
  }

  private keep(name: string, record: OvhRecord): void {
    this.addRecord(name, record);
    this.nameById.set(record.id, name);
  }

  private remove(id: string): void {
    const name = this.nameById.get(id);
    if (name === undefined) return;
    this.nameById.delete(id);
    const at = this.byName.get(name);
    if (!at) return;
    const kept = at.filter((r) => r.id !== id);
    if (kept.length) this.byName.set(name, kept);
    else this.byName.delete(name);
  }
}

/**
 * What the read cache lends a zone's view (core/reads/read-cache.ts): its base at a generation, when
 * built, to make the view from; and its bound, which the view counts against (`keep`, with how to
 * forget the view when room is needed).
 */
export interface ViewCache {
  baseAt(generation: bigint): ZoneBase | undefined;
  keep(zone: string, view: ZoneMemory, records: number, drop: () => void): void;
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
 * zones row). The one kept when it is at that generation; else, when this replica heard every
 * generation in between with what it changed (another replica's applies), those records and sets
 * re-read from `tx`; else the whole zone read from `tx`.
 */
export async function zoneMemoryAt(pool: pg.Pool, tx: store.Queryable, zone: string, generation: bigint, cache?: ViewCache): Promise<ZoneMemory> {
  let byZone = memories.get(pool);
  if (!byZone) memories.set(pool, (byZone = new Map()));
  const kept = byZone.get(zone);
  const accounted = (memory: ZoneMemory): ZoneMemory => {
    cache?.keep(zone, memory, memory.size, () => {
      if (memories.get(pool)?.get(zone)?.memory === memory) memories.get(pool)!.delete(zone);
    });
    return memory;
  };
  if (kept && kept.memory.generation === generation) return accounted(kept.memory);
  const missed = kept?.heard.between(kept.memory.generation, generation);
  if (kept && missed) {
    const { memory } = kept;
    memory.write(await store.listRecordsByIds(tx, zone, missed.ids), missed.ids);
    memory.replaceOwnership(missed.sets, await store.listOwnershipForSets(tx, zone, missed.sets));
    memory.generation = generation;
    kept.heard.forgetThrough(generation);
    count(zoneMemoryCatchUps, pool);
    return accounted(memory);
  }
  byZone.delete(zone); // the old copy goes before the new one is read (one copy per zone)
  // The read cache's base at exactly this generation, when it is built (never waited for: this runs
  // inside the lock's transaction), shares its objects; else the zone is read from `tx`.
  const base = cache?.baseAt(generation);
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
