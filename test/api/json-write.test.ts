import { toJson, toJsonString } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { endpointObject, textBytes, withLists, withListsParts, writeChunks } from '../../src/api/json-write.js';
import { zoneRecordsPb } from '../../src/api/zone-service.js';
import { Slicer } from '../../src/core/slices.js';
import type { Endpoint } from '../../src/dns/types.js';
import { ZoneRecordsSchema } from '../../src/gen/dnsplane/v1/zone_pb.js';

describe('json-write', () => {
  it('makes the bytes of a Records answer piece by piece, the same as toJsonString and Buffer.from, multi-byte names included', async () => {
    const endpoints: Endpoint[] = Array.from({ length: 1_000 }, (_, i) => ({
      dnsName: i % 3 === 0 ? `xn--caf-dma${i}.example.com` : `h${i}.example.com`,
      recordType: i % 2 ? 'A' : 'TXT',
      targets: i % 2 ? [`192.0.2.${i % 250}`] : [`"é ${i} ✓"`],
      ttl: i % 5 === 0 ? 0 : 300,
      labels: { owner: `t${i % 7}` },
    }));
    const z = { zone: 'example.com', generation: 42n, notModified: false, endpoints };
    const slicer = new Slicer(0); // yields at every check: the pieces cross many slices
    const head = toJson(ZoneRecordsSchema, zoneRecordsPb({ ...z, endpoints: [] })) as Record<string, unknown>;
    const items = await writeChunks(endpoints, endpointObject, slicer, 64);
    const parts = withListsParts(ZoneRecordsSchema, head, { endpoints: items });
    expect(parts.join('')).toBe(withLists(ZoneRecordsSchema, head, { endpoints: items }));
    expect(parts.join('')).toBe(toJsonString(ZoneRecordsSchema, zoneRecordsPb(z)));
    const bytes = await textBytes(['{"zones":[', ...parts, ']}'], slicer);
    expect(bytes.equals(Buffer.from(`{"zones":[${parts.join('')}]}`))).toBe(true);
    expect(slicer.yields).toBeGreaterThan(10);
    expect((await textBytes([], slicer)).length).toBe(0);
  });
});
