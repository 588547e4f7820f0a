import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/plan/canonical-json.js';

/** The same value with every object's keys in reverse order of insertion (jsonb keeps no order). */
function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).reverse()) out[k] = reversedKeys((v as Record<string, unknown>)[k]);
  return out;
}

const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constant(undefined),
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.string(),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.nat(20).map(String)), tie('v'), { maxKeys: 5 }),
  ),
})).v;

describe('canonicalJson', () => {
  it('sorts keys, drops undefined members, writes undefined array items as null', () => {
    expect(canonicalJson({ b: 1, a: [undefined, { d: undefined, c: 'x' }], z: true, y: null })).toBe('{"a":[null,{"c":"x"}],"b":1,"y":null,"z":true}');
  });

  it('gives one text whatever the order of the keys, and that text is the value', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 4 }), value, { maxKeys: 6 }), (v) => {
        const text = canonicalJson(v);
        expect(canonicalJson(reversedKeys(v))).toBe(text);
        expect(canonicalJson(JSON.parse(JSON.stringify(v)))).toBe(text);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the same text for a plan read back with its keys in another order (jsonb)', () => {
    const plan = {
      zone: 'example.com',
      changes: [{ action: 'create', after: { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: 300 } }],
    };
    const reordered = JSON.parse(
      '{"changes":[{"after":{"ttl":300,"targets":["192.0.2.1"],"recordType":"A","dnsName":"a.example.com"},"action":"create"}],"zone":"example.com"}',
    );
    expect(canonicalJson(reordered)).toBe(canonicalJson(plan));
  });
});
