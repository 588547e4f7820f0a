/**
 * A zone's records and ownership rows indexed by name, so that a plan reads the record sets at the
 * names a request touches instead of the whole zone (issue 28). Two kinds share it: the apply path's
 * view under the zone lock (core/reads/zone-memory.ts, kept current by the applies) and the index of a read
 * cache's base (core/reads/base-index.ts: Plans, the served OVH API's reads and writes), made once per
 * generation.
 */
import { recordSetKey, type RecordSetKey } from '../../dns/types.js';
import type { OvhRecord } from '../../ovh/types.js';
import type * as store from '../../store/index.js';

/** What a plan reads of the zone: the records and ownership rows at some names (every type). */
export interface ZoneSlice {
  /** In the order store.listRecords gives them (subDomain, fieldType, id). */
  records: OvhRecord[];
  ownership: store.OwnershipRow[];
}

/**
 * What a plan and the served OVH API read of a zone by name and owner: the apply path's view
 * (SetsIndex, below) and a base's index (core/reads/base-index.ts) both answer it.
 */
export interface ZoneIndex {
  /** The records and ownership rows at these names (normalized). */
  slice(names: Iterable<string>): ZoneSlice;
  /** The records at a name (every type). */
  recordsAt(name: string): readonly OvhRecord[];
  /** The ownership rows at a name (every type). */
  ownersAt(name: string): readonly store.OwnershipRow[];
  /** The record sets the tenant has ownership rows in (core/plan/guard.ts ownedSets). */
  ownedSets(tenantId: string): number;
  /** The record sets the tenant has ownership rows in, each with its name. */
  tenantSetsOf(tenantId: string): ReadonlyMap<RecordSetKey, string>;
  /** The names of the record sets the tenant has ownership rows in. */
  tenantNames(tenantId: string): string[];
}

/** As `ORDER BY sub_domain, field_type, id` (ids are bigints). */
export function compareRecords(a: OvhRecord, b: OvhRecord): number {
  if (a.subDomain !== b.subDomain) return a.subDomain < b.subDomain ? -1 : 1;
  if (a.fieldType !== b.fieldType) return a.fieldType < b.fieldType ? -1 : 1;
  return a.id.length !== b.id.length ? a.id.length - b.id.length : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** In store.listOwnership's order within a name: by type, then target. */
export function compareOwners(a: store.OwnershipRow, b: store.OwnershipRow): number {
  if (a.recordType !== b.recordType) return a.recordType < b.recordType ? -1 : 1;
  return a.target < b.target ? -1 : a.target > b.target ? 1 : 0;
}

export class SetsIndex implements ZoneIndex {
  /**
   * Records by normalized name (every type); small arrays (a Map per name would double the cost),
   * never changed in place: a name with one record set holds the base's own array of that set
   * (addRecords), shared by the base, its index and the apply path's view.
   */
  protected readonly byName = new Map<string, OvhRecord[]>();
  /** Ownership rows by name (every type). */
  protected readonly ownersByName = new Map<string, store.OwnershipRow[]>();
  /** Per tenant id: the record sets it has rows in, each with its name. */
  protected readonly tenantSets = new Map<string, Map<RecordSetKey, string>>();

  constructor(readonly zone: string) {}

  /** The records and ownership rows at these names (normalized). */
  slice(names: Iterable<string>): ZoneSlice {
    const records: OvhRecord[] = [];
    const ownership: store.OwnershipRow[] = [];
    for (const name of new Set(names)) {
      const at = this.byName.get(name);
      if (at) records.push(...at);
      const owners = this.ownersByName.get(name);
      if (owners) ownership.push(...owners);
    }
    records.sort(compareRecords);
    return { records, ownership };
  }

  /** Every name that holds records or ownership rows. */
  names(): Set<string> {
    return new Set([...this.byName.keys(), ...this.ownersByName.keys()]);
  }

  /** The records at a name (every type). */
  recordsAt(name: string): readonly OvhRecord[] {
    return this.byName.get(name) ?? [];
  }

  /** The ownership rows at a name (every type). */
  ownersAt(name: string): readonly store.OwnershipRow[] {
    return this.ownersByName.get(name) ?? [];
  }

  /** The record sets the tenant has ownership rows in (core/plan/guard.ts ownedSets), from the index. */
  ownedSets(tenantId: string): number {
    return this.tenantSets.get(tenantId)?.size ?? 0;
  }

  /** The record sets the tenant has ownership rows in, each with its name. */
  tenantSetsOf(tenantId: string): ReadonlyMap<RecordSetKey, string> {
    return this.tenantSets.get(tenantId) ?? new Map();
  }

  /** Everything indexed, in a form two indexes compare by (tests): names and tenants sorted, lists as kept. */
  contents(): { byName: [string, OvhRecord[]][]; ownersByName: [string, store.OwnershipRow[]][]; tenantSets: [string, [RecordSetKey, string][]][] } {
    const sorted = <V>(m: Map<string, V>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      byName: sorted(this.byName),
      ownersByName: sorted(this.ownersByName),
      tenantSets: sorted(this.tenantSets).map(([t, sets]) => [t, [...sets]]),
    };
  }

  /** The names of the record sets the tenant has ownership rows in. */
  tenantNames(tenantId: string): string[] {
    return [...new Set(this.tenantSets.get(tenantId)?.values() ?? [])];
  }

  protected addRecord(name: string, record: OvhRecord): void {
    const at = this.byName.get(name);
    this.byName.set(name, at ? [...at, record] : [record]);
  }

  /** The records of one record set at `name`, added: the set's array itself when the name has none yet (it is never changed in place). */
  protected addRecords(name: string, records: readonly OvhRecord[]): void {
    const at = this.byName.get(name);
    this.byName.set(name, at ? [...at, ...records] : (records as OvhRecord[]));
  }

  protected addOwner(o: store.OwnershipRow): void {
    const owners = this.ownersByName.get(o.dnsName);
    if (owners) {
      owners.push(o);
      owners.sort(compareOwners);
    } else this.ownersByName.set(o.dnsName, [o]);
    let sets = this.tenantSets.get(o.tenantId);
    if (!sets) this.tenantSets.set(o.tenantId, (sets = new Map()));
    sets.set(recordSetKey(o.dnsName, o.recordType), o.dnsName);
  }
}
