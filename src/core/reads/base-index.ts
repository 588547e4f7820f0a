/**
 * The read cache's base of a zone (core/reads/read-cache.ts) looked up by name and owner: what lets a
 * Plan, and each call of the served OVH API, cost what it touches rather than what the zone holds
 * (issue 28). The base is sorted already — its record sets (endpoints) by name then type, its
 * ownership rows by name, type, target — so a name's sets and rows are found by binary search and
 * its records are the base's own arrays of those sets: the index keeps only what the base does not
 * say at once, each tenant's rows (one reference a row) and the records of types no set is made of
 * (few). About 10 B a record on top of the base (`npm run bench:kept-forms`), where maps by name took
 * ~0.3 KB. Made in slices the first time a base is asked for, shared by every caller of that
 * generation, and gone with its base (a WeakMap). A base the read cache patched from the previous
 * generation's (core/reads/base-patch.ts) gets that base's index patched (patch(): the tenants and
 * names touched looked at again), when that index was made.
 */
import { compareStrings } from '../../dns/endpoint.js';
import { isRecordType, recordSetKey, type RecordSetKey } from '../../dns/types.js';
import { ovhRecordSetName, ovhTargetToCanonical } from '../../ovh/mapping.js';
import type { OvhRecord } from '../../ovh/types.js';
import type * as store from '../../store/index.js';
import type { PatchedBase } from './base-patch.js';
import { compareOwnershipRows, type ZoneBase } from './zone-base.js';
import { compareRecords, sliceAt, type ZoneIndex, type ZoneSlice } from './sets-index.js';
import { Slicer } from '../slices.js';

/** The first index of a sorted list whose name is not before `name` (compareStrings). */
function firstAt<T>(list: readonly T[], name: string, nameOf: (item: T) => string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareStrings(nameOf(list[mid]!), name) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const endpointName = (e: { dnsName: string }): string => e.dnsName;

export class BaseIndex implements ZoneIndex {
  private idSet: Promise<ReadonlySet<string>> | undefined;

  private constructor(
    readonly zone: string,
    readonly generation: bigint,
    private readonly base: Pick<ZoneBase, 'records' | 'recordsByKey' | 'endpoints' | 'ownership'>,
    /** The records of types no record set is made of (ovh/mapping.ts leaves them out), by name, in record order. */
    private readonly unmanaged: ReadonlyMap<string, readonly OvhRecord[]>,
    /** Each tenant's ownership rows, in the base's order (by name, type, target); arrays never changed in place. */
    private readonly byTenant: ReadonlyMap<string, readonly store.OwnershipRow[]>,
    /** The apex NS records' hosts, without the trailing dot, sorted (OVH: the zone's name servers). */
    readonly nameServers: string[],
  ) {}

  /** Indexes `base` in slices. */
  static async make(base: ZoneBase, zone: string, slicer: Slicer): Promise<BaseIndex> {
    const unmanaged = new Map<string, OvhRecord[]>();
    const ns: OvhRecord[] = [];
    let n = 0;
    for (const r of base.records) {
      if (++n % 1024 === 0) await slicer.check();
      const type = r.fieldType.toUpperCase();
      if (r.subDomain === '' && type === 'NS') ns.push(r);
      if (!isRecordType(type)) append(unmanaged, ovhRecordSetName(r.subDomain, zone), r);
    }
    const byTenant = new Map<string, store.OwnershipRow[]>();
    for (const o of base.ownership) {
      if (++n % 1024 === 0) await slicer.check();
      append(byTenant, o.tenantId, o);
    }
    return new BaseIndex(zone, base.generation, base, unmanaged, byTenant, apexNameServers(ns, zone));
  }

  /**
   * The index of `patched.base`, from `previous` (the index of the base it was patched from,
   * core/reads/base-patch.ts): the tenants and names the change touched looked at again, the rest
   * shared, as make() would have them (test/core/base-patch.test.ts compares the two).
   */
  static async patch(previous: BaseIndex, patched: PatchedBase, zone: string, slicer: Slicer): Promise<BaseIndex> {
    const { base, removed, added, ownersRemoved, ownersAdded } = patched;
    await slicer.check();
    const isUnmanaged = (r: OvhRecord) => !isRecordType(r.fieldType.toUpperCase());
    let unmanaged = previous.unmanaged;
    if (removed.some(isUnmanaged) || added.some(isUnmanaged)) {
      const gone = new Set(removed.filter(isUnmanaged).map((r) => r.id));
      const next = new Map<string, OvhRecord[]>();
      for (const [name, records] of previous.unmanaged) {
        const kept = records.filter((r) => !gone.has(r.id));
        if (kept.length > 0) next.set(name, kept);
      }
      for (const r of added.filter(isUnmanaged)) append(next, ovhRecordSetName(r.subDomain, zone), r);
      for (const list of next.values()) list.sort(compareRecords);
      unmanaged = next;
    }
    const apexNs = (r: OvhRecord) => r.subDomain === '' && r.fieldType.toUpperCase() === 'NS';
    const nameServers = removed.some(apexNs) || added.some(apexNs) ? apexNameServers(base.records.filter(apexNs), zone) : previous.nameServers;
    let byTenant = previous.byTenant;
    const tenants = new Set([...ownersRemoved, ...ownersAdded].map((o) => o.tenantId));
    if (tenants.size > 0) {
      const gone = new Set(ownersRemoved);
      const next = new Map(previous.byTenant);
      for (const tenant of tenants) {
        const rows = [...(previous.byTenant.get(tenant) ?? []).filter((o) => !gone.has(o)), ...ownersAdded.filter((o) => o.tenantId === tenant)];
        if (rows.length > 0) next.set(tenant, rows.sort(compareOwnershipRows));
        else next.delete(tenant);
      }
      byTenant = next;
    }
    return new BaseIndex(zone, base.generation, base, unmanaged, byTenant, nameServers);
  }

  /**
   * Whether the base holds a record of this id (the served OVH API's lookups by id). The ids' set is
   * made at the first such call of a generation, in slices (a zone's 50,000 ids in one block held the
   * loop on a request path), shared by the calls that come meanwhile.
   */
  async hasId(id: string, slicer = new Slicer()): Promise<boolean> {
    this.idSet ??= this.idsOf(slicer);
    return (await this.idSet).has(id);
  }

  private async idsOf(slicer: Slicer): Promise<ReadonlySet<string>> {
    const ids = new Set<string>();
    const { records } = this.base;
    for (let i = 0; i < records.length; i++) {
      if (i % 1024 === 0) await slicer.check();
      ids.add(records[i]!.id);
    }
    return ids;
  }

  /** The records at a name (every type): its record sets' records in record order, then those of unmanaged types. */
  recordsAt(name: string): readonly OvhRecord[] {
    const { endpoints, recordsByKey } = this.base;
    const groups: (readonly OvhRecord[])[] = [];
    for (let i = firstAt(endpoints, name, endpointName); i < endpoints.length && endpoints[i]!.dnsName === name; i++) {
      const records = recordsByKey.at(i);
      if (records.length > 0) groups.push(records);
    }
    const other = this.unmanaged.get(name);
    if (other === undefined && groups.length <= 1) return groups[0] ?? [];
    groups.sort((a, b) => compareRecords(a[0]!, b[0]!));
    return [...groups.flat(), ...(other ?? [])];
  }

  /** The ownership rows at a name (every type), by type then target. */
  ownersAt(name: string): readonly store.OwnershipRow[] {
    const { ownership } = this.base;
    const from = firstAt(ownership, name, endpointName);
    let to = from;
    while (to < ownership.length && ownership[to]!.dnsName === name) to++;
    return ownership.slice(from, to);
  }

  /** The records and ownership rows at these names (normalized). */
  slice(names: Iterable<string>): ZoneSlice {
    return sliceAt(this, names);
  }

  /** The record sets the tenant has ownership rows in, each with its name, by name then type. */
  tenantSetsOf(tenantId: string): ReadonlyMap<RecordSetKey, string> {
    const sets = new Map<RecordSetKey, string>();
    for (const o of this.byTenant.get(tenantId) ?? []) sets.set(recordSetKey(o.dnsName, o.recordType), o.dnsName);
    return sets;
  }

  /** How many record sets the tenant has ownership rows in (core/plan/guard.ts ownedSets). */
  ownedSets(tenantId: string): number {
    const rows = this.byTenant.get(tenantId) ?? [];
    let sets = 0;
    for (let i = 0; i < rows.length; i++) {
      const o = rows[i]!;
      const before = rows[i - 1];
      if (before === undefined || before.dnsName !== o.dnsName || before.recordType !== o.recordType) sets++;
    }
    return sets;
  }

  /** The names of the record sets the tenant has ownership rows in. */
  tenantNames(tenantId: string): string[] {
    return [...new Set((this.byTenant.get(tenantId) ?? []).map((o) => o.dnsName))];
  }

  /** Everything it answers, in a form two indexes compare by (tests): every name's records and rows, every tenant's sets. */
  contents(): { byName: [string, OvhRecord[]][]; ownersByName: [string, store.OwnershipRow[]][]; tenantSets: [string, [RecordSetKey, string][]][] } {
    const names = [...new Set([...this.base.endpoints.map(endpointName), ...this.unmanaged.keys(), ...this.base.ownership.map(endpointName)])].sort(
      compareStrings,
    );
    return {
      byName: names.map((n): [string, OvhRecord[]] => [n, [...this.recordsAt(n)]]).filter(([, r]) => r.length > 0),
      ownersByName: names.map((n): [string, store.OwnershipRow[]] => [n, [...this.ownersAt(n)]]).filter(([, o]) => o.length > 0),
      tenantSets: [...this.byTenant.keys()].sort(compareStrings).map((t): [string, [RecordSetKey, string][]] => [t, [...this.tenantSetsOf(t)]]),
    };
  }
}

function append<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
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
 * What a base's index holds on top of its base, per record (`npm run bench:kept-forms`: 18 B at
 * bench/estate's zone, each tenant's rows; ids, when the served OVH API asks, ~40 B more): the read
 * cache counts it with its base once made (whenIndexed).
 */
export const INDEX_BYTES_PER_RECORD = 20;
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
