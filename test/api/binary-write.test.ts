/**
 * Long lists of a binary answer encoded in slices (api/binary-write.ts): what toBinary writes of the
 * head with its lists kept as unknown fields is read as the message with the lists set (and, with no
 * other field, is its very bytes); the encoding lets the event loop turn; the ImportTxtRegistry answer
 * is the same message in both formats.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { withListEncoded } from '../../src/api/binary-write.js';
import { adoptionToPb, importResultToPb } from '../../src/api/convert-admin.js';
import type { Adoption, ImportResult } from '../../src/core/admin/import-txt.js';
import { Slicer } from '../../src/core/slices.js';
import { ImportTxtRegistryResponseSchema as Schema } from '../../src/gen/dnsplane/v1/admin_pb.js';

const outcomes = ['adopted', 'already_owned', 'conflict', 'unmapped_owner', 'not_allowed'] as const;
const adoptions = (n: number): Adoption[] =>
  Array.from({ length: n }, (_, i) => ({
    dnsName: `h${i}.example.com`,
    recordType: i % 3 ? 'A' : 'TXT',
    registryName: `a-h${i}.example.com`,
    ownerId: `cluster-${i % 4}`,
    tenant: i % 4 === 3 ? '' : `cluster-${i % 4}`,
    outcome: outcomes[i % 5]!,
    reason: i % 7 ? 'no owner in dnsplane' : '',
  }));
const result = (n: number): ImportResult => ({
  zone: 'example.com',
  dryRun: n % 2 === 0,
  adoptions: adoptions(n),
  generation: 9_007_199_254_740_993n,
  unreadable: Array.from({ length: n % 600 }, (_, i) => `a-u${i}.example.com`),
});
const whole = (r: ImportResult) =>
  create(Schema, { zone: r.zone, dryRun: r.dryRun, adoptions: r.adoptions.map(adoptionToPb), generation: r.generation, unreadable: r.unreadable });

describe('withListEncoded', () => {
  it('writes the items as toBinary of the list would: the same bytes when the list is all the message holds', async () => {
    for (const n of [0, 1, 255, 256, 257, 1_000]) {
      const items = adoptions(n);
      const encoded = await withListEncoded(Schema, create(Schema), Schema.field.adoptions, items, adoptionToPb, new Slicer());
      expect(toBinary(Schema, encoded)).toEqual(toBinary(Schema, create(Schema, { adoptions: items.map(adoptionToPb) })));
    }
  });

  it('lists of strings too, behind the fields of the head, read back as the message', async () => {
    const r = result(3_001);
    const head = create(Schema, { zone: r.zone, dryRun: r.dryRun, generation: r.generation });
    await withListEncoded(Schema, head, Schema.field.adoptions, r.adoptions, adoptionToPb, new Slicer());
    await withListEncoded(Schema, head, Schema.field.unreadable, r.unreadable, (s) => s, new Slicer(), 64);
    expect(fromBinary(Schema, toBinary(Schema, head))).toEqual(whole(r));
  });

  it('encodes 10,000 items in slices that let the event loop turn', async () => {
    const items = adoptions(10_000);
    const slicer = new Slicer(0);
    let turned = false;
    setImmediate(() => (turned = true));
    const encoding = withListEncoded(Schema, create(Schema), Schema.field.adoptions, items, adoptionToPb, slicer);
    expect(await encoding.then(() => turned)).toBe(true);
    expect(slicer.yields).toBeGreaterThanOrEqual(10_000 / 256 - 1);
    expect(fromBinary(Schema, toBinary(Schema, await encoding)).adoptions).toEqual(items.map(adoptionToPb));
  });

  it('refuses a field that is not a list of length-delimited items', async () => {
    await expect(withListEncoded(Schema, create(Schema), Schema.field.zone, ['x'], (s) => s, new Slicer())).rejects.toThrow(/zone: not a list/);
  });
});

describe('importResultToPb', () => {
  it('is the same message in the binary format (encoded in slices) and in JSON (converted in slices)', async () => {
    for (const n of [0, 7, 5_000]) {
      const r = result(n);
      expect(fromBinary(Schema, toBinary(Schema, await importResultToPb(r, true, new Slicer())))).toEqual(whole(r));
      expect(await importResultToPb(r, false, new Slicer())).toEqual(whole(r));
    }
  });
});
