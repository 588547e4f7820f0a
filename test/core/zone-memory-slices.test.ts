/**
 * The apply path's view of a zone made from the read cache's base (core/reads/zone-memory.ts
 * ZoneMemory.fromBase) is made in slices: a zone of thousands of records lets the event loop turn
 * while it is indexed, and the view is the one made without a pause.
 */
import { describe, expect, it } from 'vitest';
import { Slicer } from '../../src/core/slices.js';
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
});
