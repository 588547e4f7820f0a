/**
 * The apply path's view of a zone made from the read cache's base (core/reads/zone-memory.ts
 * ZoneMemory.fromBase) is made in slices: a zone of thousands of records lets the event loop turn
 * while it is indexed, and the view is the one made without a pause. It holds the base's own array
 * of a name's one record set (the base's index does too) and never changes it: a write into the view
 * makes the name a new array, and the base and its index keep what they had.
 */
import { describe, expect, it } from 'vitest';
import { baseIndexOf } from '../../src/core/reads/base-index.js';
import { Slicer } from '../../src/core/slices.js';
import { zoneBaseOf } from '../../src/core/reads/zone-base.js';
import { ZoneMemory } from '../../src/core/reads/zone-memory.js';
import { recordSetKey, type RecordSetKey } from '../../src/dns/types.js';
import { recordOf, type OvhRecord } from '../../src/ovh/types.js';

const ZONE = 'slices.test';

function base(n: number) {
  const records: OvhRecord[] = Array.from({ length: n }, (_, i) =>
    recordOf(ZONE, { id: String(5_000_000_000 + i), subDomain: `r${i}`, fieldType: 'A', target: `10.0.${i >> 8}.${i & 255}`, ttl: 300 }),
  );
  const recordsByKey = new Map<RecordSetKey, readonly OvhRecord[]>(records.map((r) => [recordSetKey(`${r.subDomain}.${ZONE}`, 'A'), [r]]));
  return { generation: 7n, records, recordsByKey, ownership: [] };
}

describe('ZoneMemory.fromBase', () => {
  it('indexes a zone of 5,000 records in slices, into the view made in one go', async () => {
    const b = base(5000);
    const slicer = new Slicer(0);
    let turned = false;
    setImmediate(() => (turned = true));
    const making = ZoneMemory.fromBase(ZONE, b, slicer);
    const turnedBeforeTheEnd = await making.then(() => turned);
    expect(turnedBeforeTheEnd).toBe(true);
    expect(slicer.yields).toBeGreaterThan(3);
    const sliced = await making;
    const whole = await ZoneMemory.fromBase(ZONE, b, new Slicer(Number.POSITIVE_INFINITY));
    expect(sliced.size).toBe(5000);
    expect(sliced.generation).toBe(7n);
    expect(sliced.allRecords()).toEqual(whole.allRecords());
  });

  it("shares the base's array of a name's one record set, and writes into the view leave the base and its index as they were", async () => {
    const b = await zoneBaseOf(ZONE, 7n, base(3).records, [], new Slicer());
    const key = recordSetKey(`r1.${ZONE}`, 'A');
    const setArray = b.recordsByKey.get(key)!;
    const view = await ZoneMemory.fromBase(ZONE, b);
    const index = await baseIndexOf(b, ZONE);
    expect(view.recordsAt(`r1.${ZONE}`)).toBe(setArray);
    expect(index.recordsAt(`r1.${ZONE}`)).toBe(setArray);

    // A second record at the name, then the first one replaced (an upsert of its id), then deleted.
    view.write([{ id: '6000000000', subDomain: 'r1', fieldType: 'A', target: '10.9.9.9', ttl: 300 }], []);
    view.write([{ id: '5000000001', subDomain: 'r1', fieldType: 'A', target: '10.8.8.8', ttl: 60 }], []);
    expect(view.recordsAt(`r1.${ZONE}`).map((r) => r.target)).toEqual(['10.9.9.9', '10.8.8.8']);
    view.write([], ['6000000000', '5000000001']);
    expect(view.recordsAt(`r1.${ZONE}`)).toEqual([]);

    expect(b.recordsByKey.get(key)).toBe(setArray);
    expect(setArray.map((r) => [r.id, r.target, r.ttl])).toEqual([['5000000001', '10.0.0.1', 300]]);
    expect(index.recordsAt(`r1.${ZONE}`)).toBe(setArray);
  });
});
