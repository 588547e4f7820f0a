/**
 * A base's records by record set (core/reads/set-records.ts) kept beside its endpoints, without a map
 * by key: it answers as the mapping's map does (ovh/mapping.ts recordsByKey), for every key and for
 * keys of no set, in the endpoints' order.
 */
import { describe, expect, it } from 'vitest';
import { SetRecords } from '../../src/core/reads/set-records.js';
import { zoneBaseOf } from '../../src/core/reads/zone-base.js';
import { Slicer } from '../../src/core/slices.js';
import { recordSetKey } from '../../src/dns/types.js';
import { recordsToEndpoints } from '../../src/ovh/mapping.js';
import { recordOf, type OvhRecord } from '../../src/ovh/types.js';

const ZONE = 'sets.test';

function records(): OvhRecord[] {
  const rows: Array<[string, string, string]> = [
    ['www', 'A', '192.0.2.1'],
    ['www', 'A', '192.0.2.2'],
    ['www', 'AAAA', '2001:db8::1'],
    ['', 'NS', 'ns1.example.net.'],
    ['', 'TXT', '"v=spf1 -all"'],
    ['a-b', 'CNAME', 'www'],
    ['a', 'MX', '10 mail.example.net.'],
    ['odd name', 'TXT', '"kept raw"'],
    ['x', 'CAA', '0 issue "ca.example"'],
  ];
  return rows.map(([subDomain, fieldType, target], i) => recordOf(ZONE, { id: String(100 + i), subDomain, fieldType, target, ttl: 300 }));
}

describe('SetRecords', () => {
  it("answers every key as the mapping's map does, none for keys of no set, and iterates in the endpoints' order", async () => {
    const list = records();
    const mapped = recordsToEndpoints(list, ZONE);
    const base = await zoneBaseOf(ZONE, 1n, [...list], [], new Slicer());
    const sets = base.recordsByKey;
    expect(sets).toBeInstanceOf(SetRecords);
    expect(sets.size).toBe(mapped.recordsByKey.size);
    for (const [key, recs] of mapped.recordsByKey) {
      expect(sets.has(key)).toBe(true);
      expect(sets.get(key)).toEqual(recs);
    }
    for (const key of [recordSetKey(`www.${ZONE}`, 'MX'), recordSetKey(`nowhere.${ZONE}`, 'A'), 'no-space', '', recordSetKey(`a.${ZONE}`, 'A')]) {
      expect(sets.has(key)).toBe(false);
      expect(sets.get(key)).toBeUndefined();
    }
    const keys = base.endpoints.map((e) => recordSetKey(e.dnsName, e.recordType));
    expect([...sets.keys()]).toEqual(keys);
    expect([...sets].map(([k]) => k)).toEqual(keys);
    expect([...sets.values()]).toEqual(keys.map((k) => mapped.recordsByKey.get(k)));
    const seen: string[] = [];
    sets.forEach((recs, key, map) => {
      expect(map).toBe(sets);
      expect(recs).toBe(sets.get(key));
      seen.push(key);
    });
    expect(seen).toEqual(keys);
    // A Map made from it is the mapping's, entry for entry.
    expect(new Map(sets)).toEqual(new Map(mapped.recordsByKey));
    // The set at each endpoint's place.
    for (const [i, e] of base.endpoints.entries()) expect(sets.at(i)).toBe(sets.get(recordSetKey(e.dnsName, e.recordType)));
  });

  it('refuses lists of records that are not one per endpoint', () => {
    const { endpoints } = recordsToEndpoints(records(), ZONE);
    expect(() => new SetRecords(endpoints, [])).toThrow(/record sets but 0 lists/);
  });
});
