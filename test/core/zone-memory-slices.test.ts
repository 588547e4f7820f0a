/**
 * The apply path's view of a zone made from the read cache's base (core/reads/zone-memory.ts
 * ZoneMemory.fromBase) is that base's index with nothing on top: nothing of the zone is copied, the
 * index is the one Plans share (made in slices the first time, the event loop turning meanwhile). What
 * the applies write goes on top: the base and its index keep what they had, the view answers as a view
 * read whole after the same writes would, and it counts what it holds.
 */
import { describe, expect, it } from 'vitest';
import { baseIndexCounts, baseIndexOf } from '../../src/core/reads/base-index.js';
import { Slicer } from '../../src/core/slices.js';
import { zoneBaseOf } from '../../src/core/reads/zone-base.js';
import { PINNED_BYTES_PER_RECORD, ZoneMemory } from '../../src/core/reads/zone-memory.js';
import { recordSetKey } from '../../src/dns/types.js';
import { recordOf, type OvhRecord } from '../../src/ovh/types.js';
import type * as store from '../../src/store/index.js';

const ZONE = 'slices.test';

function records(n: number): OvhRecord[] {
  return Array.from({ length: n }, (_, i) =>
    recordOf(ZONE, { id: String(5_000_000_000 + i), subDomain: `r${i}`, fieldType: 'A', target: `10.0.${i >> 8}.${i & 255}`, ttl: 300 }),
  );
}

function owner(tenantId: string, sub: string, target = ''): store.OwnershipRow {
  return { dnsName: `${sub}.${ZONE}`, recordType: 'A', target, tenantId } as store.OwnershipRow;
}

const base = (n: number, ownership: store.OwnershipRow[] = []) => zoneBaseOf(ZONE, 7n, records(n), ownership, new Slicer());

describe('ZoneMemory.fromBase', () => {
  it("is the base's index, made in slices the first time and shared after: nothing of the zone copied", async () => {
    const b = await base(5000);
    const slicer = new Slicer(0);
    let turned = false;
    setImmediate(() => (turned = true));
    const made = baseIndexCounts.made;
    const view = await ZoneMemory.fromBase(ZONE, b, slicer);
    expect(turned).toBe(true);
    expect(slicer.yields).toBeGreaterThan(3);
    expect(baseIndexCounts.made).toBe(made + 1);
    // A second view of the same base (the next generation's apply) makes nothing.
    const again = await ZoneMemory.fromBase(ZONE, b, new Slicer(0));
    expect(baseIndexCounts.made).toBe(made + 1);
    for (const v of [view, again]) {
      expect(v.size).toBe(5000);
      expect(v.generation).toBe(7n);
      expect(v.base).toBe(b);
      expect(v.ownsBase).toBe(false);
    }
    expect(view.recordsAt(`r42.${ZONE}`)).toBe(b.recordsByKey.get(recordSetKey(`r42.${ZONE}`, 'A')));
    expect(view.allRecords().map((r) => r.id)).toEqual(b.records.map((r) => r.id));
    // It costs what keeps its base alive once the cache moves on, not the zone again.
    expect(view.keptBytes()).toBe(5000 * PINNED_BYTES_PER_RECORD);
  });

  it("shares the base's array of a name's one record set, and writes into the view leave the base and its index as they were", async () => {
    const b = await base(3);
    const key = recordSetKey(`r1.${ZONE}`, 'A');
    const setArray = b.recordsByKey.get(key)!;
    const view = await ZoneMemory.fromBase(ZONE, b);
    const index = await baseIndexOf(b, ZONE);
    expect(view.recordsAt(`r1.${ZONE}`)).toBe(setArray);
    expect(index.recordsAt(`r1.${ZONE}`)).toBe(setArray);

    // A second record at the name, then the first one replaced (an upsert of its id), then deleted.
    view.write([{ id: '6000000000', subDomain: 'r1', fieldType: 'A', target: '10.9.9.9', ttl: 300 }], []);
    view.write([{ id: '5000000001', subDomain: 'r1', fieldType: 'A', target: '10.8.8.8', ttl: 60 }], [], setArray);
    expect(view.recordsAt(`r1.${ZONE}`).map((r) => r.target)).toEqual(['10.9.9.9', '10.8.8.8']);
    expect(view.size).toBe(4);
    view.write([], ['6000000000', '5000000001']);
    expect(view.recordsAt(`r1.${ZONE}`)).toEqual([]);
    expect(view.size).toBe(2);
    expect(view.allRecords().map((r) => r.subDomain)).toEqual(['r0', 'r2']);

    expect(b.recordsByKey.get(key)).toBe(setArray);
    expect(setArray.map((r) => [r.id, r.target, r.ttl])).toEqual([['5000000001', '10.0.0.1', 300]]);
    expect(index.recordsAt(`r1.${ZONE}`)).toBe(setArray);
    expect(b.records).toHaveLength(3);
  });

  it("takes a record of the base from where `before` says it was, and a catch-up finds where another replica's ids were", async () => {
    const b = await base(4);
    const view = await ZoneMemory.fromBase(ZONE, b);
    // Record r2 (id …002) is now at r9: without knowing where it was, the old one would stay at r2.
    const moved = { id: '5000000002', subDomain: 'r9', fieldType: 'A', target: '10.7.7.7', ttl: 300 };
    const where = await view.whereAre(['5000000002', '5000000003', '404']);
    expect(where.map((r) => [r.id, r.subDomain])).toEqual([
      ['5000000002', 'r2'],
      ['5000000003', 'r3'],
    ]);
    view.write([moved], ['5000000003'], where);
    expect(view.recordsAt(`r2.${ZONE}`)).toEqual([]);
    expect(view.recordsAt(`r3.${ZONE}`)).toEqual([]);
    expect(view.recordsAt(`r9.${ZONE}`).map((r) => r.id)).toEqual(['5000000002']);
    expect(view.size).toBe(3);
    // Written here, an id is the view's to find (write takes it from where it wrote it): not looked for in the base.
    expect(await view.whereAre(['5000000002'])).toEqual([]);
    view.write([], ['5000000002']);
    expect(view.recordsAt(`r9.${ZONE}`)).toEqual([]);
    expect(view.allRecords().map((r) => r.subDomain)).toEqual(['r0', 'r1']);
  });

  it("puts each tenant's ownership on top of the index's, and the sets a rollback re-read replace the view's", async () => {
    const b = await base(4, [owner('t1', 'r0'), owner('t1', 'r1'), owner('t2', 'r1', 'x'), owner('t2', 'r2')]);
    const view = await ZoneMemory.fromBase(ZONE, b);
    expect(view.ownedSets('t1')).toBe(2);
    expect(view.tenantNames('t2').sort()).toEqual([`r1.${ZONE}`, `r2.${ZONE}`]);
    // t1 gives up r1 (its row of the shared set goes; t2's stays), and takes r3.
    view.replaceOwnership(
      [
        { dnsName: `r1.${ZONE}`, recordType: 'A' },
        { dnsName: `r3.${ZONE}`, recordType: 'A' },
      ],
      [owner('t2', 'r1', 'x'), owner('t1', 'r3')],
    );
    expect(view.ownedSets('t1')).toBe(2);
    expect(view.tenantNames('t1').sort()).toEqual([`r0.${ZONE}`, `r3.${ZONE}`]);
    expect(view.ownersAt(`r1.${ZONE}`).map((o) => o.tenantId)).toEqual(['t2']);
    expect(view.slice([`r1.${ZONE}`, `r3.${ZONE}`]).ownership.map((o) => [o.tenantId, o.dnsName])).toEqual([
      ['t2', `r1.${ZONE}`],
      ['t1', `r3.${ZONE}`],
    ]);
    expect(view.allOwnership()).toHaveLength(4);
    // The index (Plans') is as it was.
    expect((await baseIndexOf(b, ZONE)).ownedSets('t1')).toBe(2);
    expect((await baseIndexOf(b, ZONE)).tenantNames('t1').sort()).toEqual([`r0.${ZONE}`, `r1.${ZONE}`]);

    // A rollback: r0's A set is as re-read (two records), its record of the base gone from the count once.
    view.replaceSets(
      [{ subDomain: 'r0', fieldType: 'A' }],
      [
        { id: '5000000000', subDomain: 'r0', fieldType: 'A', target: '10.1.1.1', ttl: 300 },
        { id: '7000000000', subDomain: 'r0', fieldType: 'A', target: '10.1.1.2', ttl: 300 },
      ],
    );
    expect(view.recordsAt(`r0.${ZONE}`).map((r) => r.target)).toEqual(['10.1.1.1', '10.1.1.2']);
    expect(view.size).toBe(5);
    // What it wrote on top is counted: names of records (r0), of rows (r1, r3), and t1's two sets.
    expect(view.keptBytes()).toBeGreaterThan(4 * PINNED_BYTES_PER_RECORD);
  });
});

describe('BaseIndex.hasId', () => {
  it("makes the ids' set of a generation in slices at the first lookup, once for the calls that come meanwhile", async () => {
    const index = await baseIndexOf(await base(5000), ZONE);
    const slicer = new Slicer(0);
    let turned = false;
    setImmediate(() => (turned = true));
    const [first, second] = await Promise.all([index.hasId('5000004999', slicer), index.hasId('404', slicer)]);
    expect([first, second]).toEqual([true, false]);
    expect(turned).toBe(true);
    const yields = slicer.yields;
    expect(yields).toBeGreaterThan(3);
    expect(await index.hasId('5000000000', slicer)).toBe(true);
    expect(slicer.yields).toBe(yields);
  });
});
