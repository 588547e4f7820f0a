/**
 * Pause points of long pure computations (dns/steps.ts): the step forms give what the synchronous
 * forms give, and do pause along the way.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { drain, sortSteps } from '../../src/dns/steps.js';
import { pauses } from '../helpers/steps.js';
import { recordsToEndpoints, recordsToEndpointsSteps } from '../../src/ovh/mapping.js';
import type { OvhRecord } from '../../src/ovh/types.js';

describe('sortSteps', () => {
  it('sorts as Array.prototype.sort does (stable), whatever the run size', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ k: fc.integer({ min: 0, max: 20 }), i: fc.nat() }), { maxLength: 300 }),
        fc.integer({ min: 1, max: 40 }),
        (items, perStep) => {
          const cmp = (a: { k: number }, b: { k: number }) => a.k - b.k;
          expect(drain(sortSteps([...items], cmp, perStep))).toEqual([...items].sort(cmp));
        },
      ),
    );
  });

  it('pauses along a long sort', () => {
    const items = Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 50_000);
    const { value, pauses: n } = pauses(sortSteps(items, (a, b) => a - b));
    expect(value).toEqual(Array.from({ length: 50_000 }, (_, i) => i));
    expect(n).toBeGreaterThan(50_000 / 4096);
  });
});

describe('recordsToEndpointsSteps', () => {
  it('maps a zone of 20,000 records as recordsToEndpoints does, pausing every few dozen records', () => {
    const zone = 'example.com';
    const records: OvhRecord[] = Array.from({ length: 20_000 }, (_, i) => ({
      id: String(1000 + i),
      zone,
      subDomain: `h${i % 15_000}`,
      fieldType: i % 3 ? 'A' : 'TXT',
      target: i % 3 ? `192.0.2.${i % 250}` : `"t${i}"`,
      ttl: 300 + (i % 2),
    }));
    const { value, pauses: n } = pauses(recordsToEndpointsSteps(records, zone));
    expect(value).toEqual(recordsToEndpoints(records, zone));
    expect(n).toBeGreaterThan(20_000 / 64);
    expect([...value.recordsByKey.values()].reduce((a, r) => a + r.length, 0)).toBe(20_000);
  });
});
