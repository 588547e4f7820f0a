/**
 * What a plan reads of a zone by name and owner, so that it reads the record sets at the names a
 * request touches instead of the whole zone (issue 28): the interface, and the orders its answers
 * keep. Two kinds answer it: the index of a read cache's base (core/reads/base-index.ts: Plans, the
 * served OVH API's reads and writes), made once per generation, and the apply path's view under the
 * zone lock (core/reads/zone-memory.ts: such an index, with what the applies wrote since on top).
 */
import type { RecordSetKey } from '../../dns/types.js';
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
 * (core/reads/zone-memory.ts) and a base's index (core/reads/base-index.ts) both answer it.
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

/** The records and ownership rows at these names (normalized), from what an index says at each name. */
export function sliceAt(index: Pick<ZoneIndex, 'recordsAt' | 'ownersAt'>, names: Iterable<string>): ZoneSlice {
  const records: OvhRecord[] = [];
  const ownership: store.OwnershipRow[] = [];
  for (const name of new Set(names)) {
    records.push(...index.recordsAt(name));
    ownership.push(...index.ownersAt(name));
  }
  records.sort(compareRecords);
  return { records, ownership };
}
