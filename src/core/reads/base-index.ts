/**
 * The read cache's base of a zone (core/reads/read-cache.ts) indexed by name and owner, once per base: what
 * lets a Plan, and each call of the served OVH API, cost what it touches rather than what the zone holds
 * (issue 28). Made in slices the first time a base is asked for (a zone may hold 50,000 records), shared
 * by every caller of that generation, and gone with its base (a WeakMap: a newer generation's base
 * replaces the old one in the read cache, and the index follows it). The index holds the base's own
 * record and ownership objects, never copies, and a name's one record set as the base's own array:
 * about 0.2 KB a record on top of the base (bench/estate's zone: 11 MB for 50,000 records). A base the read
 * cache patched from the previous generation's (core/reads/base-patch.ts) gets that base's index patched
 * (patch(): the maps' references copied, the names and tenants touched indexed again), when that index
 * was made.
 */
import { isRecordType, recordSetKey, type RecordSetKey } from '../../dns/types.js';
import { ovhRecordSetName, ovhTargetToCanonical } from '../../ovh/mapping.js';
import type { OvhRecord } from '../../ovh/types.js';
import { setKeyOf, type PatchedBase } from './base-patch.js';
import { compareSets, type ZoneBase } from './zone-base.js';
import { compareOwners, compareRecords, SetsIndex } from './sets-index.js';
import { Slicer } from '../slices.js';

export class BaseIndex extends SetsIndex {
  /** Every record id of the base. */
  readonly ids = new Set<string>();
  /** The apex NS records' hosts, without the trailing dot, sorted (OVH: the zone's name servers). */
  nameServers: string[] = [];

  private constructor(
    zone: string,
    readonly generation: bigint,
  ) {
    super(zone);
  }

  /** Indexes `base` in slices. */
  static async make(base: ZoneBase, zone: string, slicer: Slicer): Promise<BaseIndex> {
    const index = new BaseIndex(zone, base.generation);
    // The records of managed types are grouped by set already (their key is "<name> <TYPE>"): their
    // name is taken from it, not normalized again; only records of other types are named here.
    let n = 0;
    for (const [key, records] of base.recordsByKey) {
      if (++n % 512 === 0) await slicer.check();
      index.addRecords(key.slice(0, key.lastIndexOf(' ')), records);
    }
    const ns: OvhRecord[] = [];
    for (const r of base.records) {
      if (++n % 1024 === 0) await slicer.check();
      index.ids.add(r.id);
      const type = r.fieldType.toUpperCase();
      if (r.subDomain === '' && type === 'NS') ns.push(r);
      if (!isRecordType(type)) index.addRecord(ovhRecordSetName(r.subDomain, zone), r);
    }
    index.nameServers = apexNameServers(ns, zone);
    for (const o of base.ownership) {
      if (++n % 1024 === 0) await slicer.check();
      index.addOwner(o);
    }
    return index;
  }

  /**
   * The index of `patched.base`, from `previous` (the index of the base it was patched from,
   * core/reads/base-patch.ts): its maps copied (references), and only the names and tenants the change
   * touched indexed again, as make() indexes them (test/core/base-patch.test.ts compares the two).
   */
  static async patch(previous: BaseIndex, patched: PatchedBase, zone: string, slicer: Slicer): Promise<BaseIndex> {
    const { base, removed, added, ownersRemoved, ownersAdded } = patched;
    const index = new BaseIndex(zone, base.generation);
    let n = 0;
    for (const [name, records] of previous.byName) {
      if (++n % 4096 === 0) await slicer.check();
      index.byName.set(name, records);
    }
    for (const [name, owners] of previous.ownersByName) {
      if (++n % 4096 === 0) await slicer.check();
      index.ownersByName.set(name, owners);
    }
    for (const [tenant, sets] of previous.tenantSets) index.tenantSets.set(tenant, sets);
    for (const id of previous.ids) {
      if (++n % 4096 === 0) await slicer.check();
      index.ids.add(id);
    }
    for (const r of removed) index.ids.delete(r.id);
    for (const r of added) index.ids.add(r.id);
    const apexNs = (r: OvhRecord) => r.subDomain === '' && r.fieldType.toUpperCase() === 'NS';
    index.nameServers = removed.some(apexNs) || added.some(apexNs) ? apexNameServers(base.records.filter(apexNs), zone) : previous.nameServers;

    // The records at each name a record left or joined: its sets' groups in the base's order, then the
    // records of unmanaged types in record order — as make() adds them.
    const removedIds = new Set(removed.map((r) => r.id));
    const addedAt = new Map<string, OvhRecord[]>();
    for (const r of added) {
      const name = ovhRecordSetName(r.subDomain, zone);
      addedAt.set(name, [...(addedAt.get(name) ?? []), r]);
    }
    for (const name of new Set([...removed.map((r) => ovhRecordSetName(r.subDomain, zone)), ...addedAt.keys()])) {
      const sets = new Set<RecordSetKey>();
      const unmanaged: OvhRecord[] = [];
      for (const r of [...(previous.byName.get(name) ?? []).filter((r) => !removedIds.has(r.id)), ...(addedAt.get(name) ?? [])]) {
        const key = setKeyOf(r, zone);
        if (key === undefined) unmanaged.push(r);
        else sets.add(key);
      }
      const groups = [...sets].flatMap((k) => {
        const g = base.recordsByKey.get(k);
        return g && g.length > 0 ? [g] : [];
      });
      groups.sort((a, b) => compareRecords(a[0]!, b[0]!));
      const list = [...groups.flat(), ...unmanaged.sort(compareRecords)];
      if (list.length > 0) index.byName.set(name, list);
      else index.byName.delete(name);
    }

    // The ownership rows at each name of a set whose rows changed, and the sets of the tenants they name.
    const gone = new Set(ownersRemoved);
    for (const name of new Set([...ownersRemoved, ...ownersAdded].map((o) => o.dnsName))) {
      const list = [...(previous.ownersByName.get(name) ?? []).filter((o) => !gone.has(o)), ...ownersAdded.filter((o) => o.dnsName === name)];
      if (list.length > 0) index.ownersByName.set(name, list.sort(compareOwners));
      else index.ownersByName.delete(name);
    }
    const changedKeys = new Set([...ownersRemoved, ...ownersAdded].map((o) => recordSetKey(o.dnsName, o.recordType)));
    for (const tenant of new Set([...ownersRemoved, ...ownersAdded].map((o) => o.tenantId))) {
      const sets = new Map<RecordSetKey, string>();
      for (const [key, name] of previous.tenantSets.get(tenant) ?? []) if (!changedKeys.has(key)) sets.set(key, name);
      for (const o of ownersAdded) if (o.tenantId === tenant) sets.set(recordSetKey(o.dnsName, o.recordType), o.dnsName);
      // In make()'s order: by name, then type.
      const ordered = [...sets].sort(([ka, na], [kb, nb]) =>
        compareSets({ dnsName: na, recordType: ka.slice(na.length + 1) }, { dnsName: nb, recordType: kb.slice(nb.length + 1) }),
      );
      if (ordered.length > 0) index.tenantSets.set(tenant, new Map(ordered));
      else index.tenantSets.delete(tenant);
    }
    return index;
  }
}

/** The apex NS records' hosts, without the trailing dot, sorted (OVH: the zone's name servers). */
function apexNameServers(records: readonly OvhRecord[], zone: string): string[] {
  return records.map((r) => ovhTargetToCanonical('NS', r.target, zone) ?? r.target.replace(/\.$/, '')).sort();
}

const indexes = new WeakMap<ZoneBase, Promise<BaseIndex>>();
/** Indexes made (settled), by base: the one a patched base's index is patched from. */
const made = new WeakMap<ZoneBase, BaseIndex>();
/** For a patched base whose previous base had its index made: how to patch that index (never made ahead: lazily, at the first use). */
const patches = new WeakMap<ZoneBase, (slicer: Slicer) => Promise<BaseIndex>>();
/**
 * What a base's index holds on top of its base, per record (`npm run bench:kept-forms`: 296 B at
 * bench/estate's zone): the read cache counts it with its base once made (whenIndexed).
 */
export const INDEX_BYTES_PER_RECORD = 300;
/** Per base, who is told its index's bytes when it is made (the read cache: the base's item grows by them). */
const onIndexed = new WeakMap<ZoneBase, (bytes: number) => void>();

/** `fn` is told what the base's index holds when it is made (at once when it is made already). */
export function whenIndexed(base: ZoneBase, fn: (bytes: number) => void): void {
  onIndexed.set(base, fn);
  if (made.has(base)) fn(base.records.length * INDEX_BYTES_PER_RECORD);
}
/** Indexes patched rather than made whole (tests, the bench). */
export const baseIndexCounts = { made: 0, patched: 0 };

/**
 * A base patched from `previous` (core/reads/read-cache.ts): when previous's index is made, the new
 * base's index will be that one patched, not made whole. The previous index (not its base) is kept
 * until then; a base whose index was never asked for passes nothing on.
 */
export function indexPatchedFrom(previous: ZoneBase, patched: PatchedBase, zone: string): void {
  const index = made.get(previous);
  if (index) patches.set(patched.base, (slicer) => BaseIndex.patch(index, patched, zone, slicer));
}

/** The base's index, made once (concurrent callers share the making), patched from the previous one's when it can. */
export function baseIndexOf(base: ZoneBase, zone: string, slicer: Slicer = new Slicer()): Promise<BaseIndex> {
  let making = indexes.get(base);
  if (!making) {
    const patch = patches.get(base);
    patches.delete(base);
    making = patch ? patch(slicer) : BaseIndex.make(base, zone, slicer);
    if (patch) baseIndexCounts.patched++;
    else baseIndexCounts.made++;
    indexes.set(base, making);
    making.then(
      (index) => {
        made.set(base, index);
        onIndexed.get(base)?.(base.records.length * INDEX_BYTES_PER_RECORD);
      },
      () => indexes.delete(base),
    );
  }
  return making;
}
