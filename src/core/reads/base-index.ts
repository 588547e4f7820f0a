/**
 * The read cache's base of a zone (core/reads/read-cache.ts) indexed by name and owner, once per base: what
 * lets a Plan, and each call of the served OVH API, cost what it touches rather than what the zone holds
 * (issue 28). Made in slices the first time a base is asked for (a zone may hold 50,000 records), shared
 * by every caller of that generation, and gone with its base (a WeakMap: a newer generation's base
 * replaces the old one in the read cache, and the index follows it). The index holds the base's own
 * record and ownership objects, never copies: about 0.1 KB a record on top of the base.
 */
import { absoluteName } from '../../dns/names.js';
import { isRecordType } from '../../dns/types.js';
import { ovhRecordName, ovhTargetToCanonical } from '../../ovh/mapping.js';
import type { ZoneBase } from './zone-base.js';
import { SetsIndex } from './sets-index.js';
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
      const name = key.slice(0, key.lastIndexOf(' '));
      for (const r of records) index.addRecord(name, r);
    }
    const ns: string[] = [];
    for (const r of base.records) {
      if (++n % 1024 === 0) await slicer.check();
      index.ids.add(r.id);
      const type = r.fieldType.toUpperCase();
      if (r.subDomain === '' && type === 'NS') ns.push(ovhTargetToCanonical('NS', r.target, zone) ?? r.target.replace(/\.$/, ''));
      if (!isRecordType(type)) index.addRecord(ovhRecordName(r.subDomain, zone) ?? absoluteName(r.subDomain, zone), r);
    }
    index.nameServers = ns.sort();
    for (const o of base.ownership) {
      if (++n % 1024 === 0) await slicer.check();
      index.addOwner(o);
    }
    return index;
  }
}

const indexes = new WeakMap<ZoneBase, Promise<BaseIndex>>();

/** The base's index, made once (concurrent callers share the making). */
export function baseIndexOf(base: ZoneBase, zone: string, slicer: Slicer = new Slicer()): Promise<BaseIndex> {
  let made = indexes.get(base);
  if (!made) {
    made = BaseIndex.make(base, zone, slicer);
    indexes.set(base, made);
    made.catch(() => indexes.delete(base));
  }
  return made;
}
