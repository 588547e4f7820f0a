import { describe, expect, it } from 'vitest';
import { Slicer, stringifySliced } from '../../src/core/slices.js';

describe('stringifySliced', () => {
  const cases: Array<[string, unknown]> = [
    ['plain values', [null, true, 0, -1.5, 'a"b\u0000', { a: undefined, b: () => 1, c: [undefined, () => 1, 2] }]],
    [
      'a long list of objects, members in insertion order',
      Array.from({ length: 300 }, (_, i) => ({ z: i, a: `x${i}`, nested: { k: [i, { deep: i }] }, d: new Date(i * 1000) })),
    ],
    [
      'an object holding long lists',
      { kind: 'desired', endpoints: Array.from({ length: 500 }, (_, i) => ({ dnsName: `h${i}`, labels: { '10': 'n', b: 'c' } })), empty: [], none: null },
    ],
    ['empty containers', { a: {}, b: [], c: [[]] }],
  ];
  it.each(cases)('%s: the same text as JSON.stringify', async (_what, value) => {
    for (const depth of [0, 1, 2, 3, 5]) expect(await stringifySliced(value, new Slicer(), depth)).toBe(JSON.stringify(value));
  });

  it('yields while it writes a long list', async () => {
    const slicer = new Slicer(0);
    await stringifySliced(
      Array.from({ length: 1000 }, (_, i) => ({ i })),
      slicer,
    );
    expect(slicer.yields).toBeGreaterThan(10);
  });
});
