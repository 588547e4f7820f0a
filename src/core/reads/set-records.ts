/**
 * A base's records by record set (ZoneBase.recordsByKey) without a map of its own: the base's endpoints
 * are its record sets, sorted by name then type, one endpoint a set — so each set's records are kept
 * in an array beside them, at the endpoint's place, and a set is found by binary search. A Map by key
 * held a key string (the name and type concatenated, then flattened: two strings) and an entry per
 * set: ~100 B a set on top of the records, 0.1 GB over bench/estate's million records, and three
 * objects a set more for each full collection to mark.
 */
import { compareStrings } from '../../dns/endpoint.js';
import { recordSetKey, type Endpoint, type RecordSetKey } from '../../dns/types.js';
import type { OvhRecord } from '../../ovh/types.js';
import type { Slicer } from '../slices.js';

export class SetRecords implements ReadonlyMap<RecordSetKey, readonly OvhRecord[]> {
  /**
   * `endpoints` sorted by name then type (zone-base.ts compareSets), one per record set; `records[i]`
   * the records of `endpoints[i]`'s set. Both are kept as they are: never change them.
   */
  constructor(
    readonly endpoints: readonly Endpoint[],
    private readonly records: readonly (readonly OvhRecord[])[],
  ) {
    if (endpoints.length !== records.length) throw new Error(`${endpoints.length} record sets but ${records.length} lists of records`);
  }

  /**
   * A mapping's endpoints (sorted: ovh/mapping.ts recordsToEndpoints) with each set's records beside
   * its endpoint, looked up in the mapping's map by key in slices (a base's 50,000 sets); the map, and
   * its key strings, are not kept. (A plan's slice keeps the mapping's map: it looks up thousands of
   * keys, each a binary search here.)
   */
  static async of(
    mapping: { endpoints: Endpoint[]; recordsByKey: ReadonlyMap<RecordSetKey, readonly OvhRecord[]> },
    slicer: Slicer,
  ): Promise<{ endpoints: Endpoint[]; recordsByKey: SetRecords }> {
    const { endpoints } = mapping;
    const records: (readonly OvhRecord[])[] = new Array(endpoints.length);
    for (let i = 0; i < endpoints.length; i++) {
      if (i % 1024 === 0) await slicer.check();
      records[i] = mapping.recordsByKey.get(keyOf(endpoints[i]!)) ?? [];
    }
    return { endpoints, recordsByKey: new SetRecords(endpoints, records) };
  }

  get size(): number {
    return this.endpoints.length;
  }

  /** The records of the set of `endpoints[i]`. */
  at(i: number): readonly OvhRecord[] {
    return this.records[i]!;
  }

  get(key: RecordSetKey): readonly OvhRecord[] | undefined {
    const i = this.indexOf(key);
    return i < 0 ? undefined : this.records[i];
  }

  has(key: RecordSetKey): boolean {
    return this.indexOf(key) >= 0;
  }

  *entries(): MapIterator<[RecordSetKey, readonly OvhRecord[]]> {
    for (let i = 0; i < this.endpoints.length; i++) yield [keyOf(this.endpoints[i]!), this.records[i]!];
  }

  *keys(): MapIterator<RecordSetKey> {
    for (const e of this.endpoints) yield keyOf(e);
  }

  *values(): MapIterator<readonly OvhRecord[]> {
    yield* this.records;
  }

  [Symbol.iterator](): MapIterator<[RecordSetKey, readonly OvhRecord[]]> {
    return this.entries();
  }

  forEach(fn: (value: readonly OvhRecord[], key: RecordSetKey, map: ReadonlyMap<RecordSetKey, readonly OvhRecord[]>) => void, thisArg?: unknown): void {
    for (let i = 0; i < this.endpoints.length; i++) fn.call(thisArg, this.records[i]!, keyOf(this.endpoints[i]!), this);
  }

  get [Symbol.toStringTag](): string {
    return 'SetRecords';
  }

  /** The place of the set `key` names among the endpoints, or -1. */
  private indexOf(key: RecordSetKey): number {
    const space = key.lastIndexOf(' ');
    if (space < 0) return -1;
    const name = key.slice(0, space);
    const type = key.slice(space + 1);
    const { endpoints } = this;
    let lo = 0;
    let hi = endpoints.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const e = endpoints[mid]!;
      if ((compareStrings(e.dnsName, name) || compareStrings(e.recordType, type)) < 0) lo = mid + 1;
      else hi = mid;
    }
    const e = endpoints[lo];
    return e !== undefined && e.dnsName === name && e.recordType === type ? lo : -1;
  }
}

const keyOf = (e: Endpoint): RecordSetKey => recordSetKey(e.dnsName, e.recordType);
