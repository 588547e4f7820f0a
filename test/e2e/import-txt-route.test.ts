/**
 * ImportTxtRegistry over Connect's unary protocol has its own route (api/import-txt-route.ts: the
 * answer written in slices). It must answer exactly what Connect answers, byte for byte, in JSON and
 * in the binary format, errors included. Each request is sent twice, once to the route and once to
 * Connect (an `Origin` header, a browser's, leaves the request to Connect), and through gRPC.
 */
import { create, fromBinary, toBinary, toJsonString } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryParts } from '../../src/api/binary-write.js';
import { importResultToPb } from '../../src/api/convert-admin.js';
import { importAnswerJson } from '../../src/api/import-txt-route.js';
import type { Adoption, ImportResult } from '../../src/core/admin/import-txt.js';
import { Slicer } from '../../src/core/slices.js';
import { AdminService, ImportTxtRegistryRequestSchema, ImportTxtRegistryResponseSchema as ResponseSchema } from '../../src/gen/dnsplane/v1/admin_pb.js';
import type { SimRecordInit } from '../../src/ovhsim/index.js';
import { captureLogger } from '../helpers/log-capture.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { bearer } from '../helpers/sim-server.js';

const ZONE = 'import.example';
const reg = (owner: string) => `"heritage=external-dns,external-dns/owner=${owner},external-dns/resource=ingress/default/x"`;
const RECORDS: SimRecordInit[] = [
  ...Array.from({ length: 300 }, (_, i): SimRecordInit[] => [
    { subDomain: `h${i}`, fieldType: i % 2 ? 'A' : 'AAAA', target: i % 2 ? `192.0.2.${i % 250}` : `2001:db8::${i.toString(16)}`, ttl: 300 },
    { subDomain: `${i % 2 ? 'a' : 'aaaa'}-h${i}`, fieldType: 'TXT', target: reg(`c${i % 3}`), ttl: 300 },
  ]).flat(),
  { subDomain: 'a-secret', fieldType: 'TXT', target: '"encrypted-looking"', ttl: 300 },
];
const OWNERS = { c0: 'alice', c1: 'bob' };

let h: Harness;
let admin: string;
let alice: string;
const { log, lines } = captureLogger('debug');
const answeredByRoute = () => lines.filter((l) => l['msg'] === 'import answered in slices').length;

type Answer = { status: number; type: string | null; body: Buffer };

async function post(token: string, body: Uint8Array | string, format: 'json' | 'proto', viaConnect: boolean, timeout?: string): Promise<Answer> {
  const res = await fetch(`${h.server.url}/dnsplane.v1.AdminService/ImportTxtRegistry`, {
    method: 'POST',
    body,
    headers: {
      'content-type': `application/${format}`,
      authorization: `Bearer ${token}`,
      ...(viaConnect ? { origin: 'http://console.example' } : {}),
      ...(timeout !== undefined ? { 'connect-timeout-ms': timeout } : {}),
    },
  });
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
}

/** The request in both formats. */
const bodies = (r: { zone: string; owners: Record<string, string>; dryRun?: boolean }) => {
  const m = create(ImportTxtRegistryRequestSchema, r);
  return { json: toJsonString(ImportTxtRegistryRequestSchema, m), proto: toBinary(ImportTxtRegistryRequestSchema, m) };
};

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: RECORDS }, logger: log });
  admin = await h.tenant('admin', [], { admin: true });
  alice = await h.tenant('alice', [ZONE]);
  await h.tenant('bob', [ZONE], { suffixes: [`h1.${ZONE}`] });
  await h.zoneClient(admin).records({});
});

afterAll(async () => {
  await h?.close();
});

describe('the ImportTxtRegistry route answers what Connect answers', () => {
  it('a dry run: the same bytes through the route and Connect, in JSON and binary, and the same message through gRPC', async () => {
    const b = bodies({ zone: ZONE, owners: OWNERS, dryRun: true });
    const before = answeredByRoute();
    const json = await post(admin, b.json, 'json', false);
    const proto = await post(admin, b.proto, 'proto', false);
    expect(answeredByRoute()).toBe(before + 2);
    expect(json).toEqual(await post(admin, b.json, 'json', true));
    expect(proto).toEqual(await post(admin, b.proto, 'proto', true));
    expect(answeredByRoute()).toBe(before + 2);
    expect([json.status, json.type, proto.status, proto.type]).toEqual([200, 'application/json', 200, 'application/proto']);
    const answer = fromBinary(ResponseSchema, proto.body);
    expect(answer.adoptions).toHaveLength(600);
    expect(answer.unreadable).toEqual([`a-secret.${ZONE}`]);
    const grpc = createClient(AdminService, createGrpcTransport({ baseUrl: h.server.url, interceptors: [bearer(admin)] }));
    expect(await grpc.importTxtRegistry({ zone: ZONE, owners: OWNERS, dryRun: true })).toEqual(answer);
  });

  it('refusals: a caller without the admin scope, a wrong token, an unknown field, a body that does not parse', async () => {
    const b = bodies({ zone: ZONE, owners: OWNERS, dryRun: true });
    const same = async (token: string, body: Uint8Array | string, format: 'json' | 'proto', status: number) => {
      const route = await post(token, body, format, false);
      const connect = await post(token, body, format, true);
      expect({ ...route, body: route.body.toString('utf8') }).toEqual({ ...connect, body: connect.body.toString('utf8') });
      expect(route.status).toBe(status);
    };
    await same(alice, b.json, 'json', 403);
    await same(alice, b.proto, 'proto', 403);
    await same('dnsp_wrong', b.proto, 'proto', 401);
    await same(admin, JSON.stringify({ zone: ZONE, owners: OWNERS, dryRun: true, extra: 1 }), 'json', 400);
    await same(admin, Buffer.concat([b.proto, Buffer.from([0xf8, 0x01, 0x01])]), 'proto', 400); // field 31, unknown
    await same(admin, '{"zone":', 'json', 400);
    await same(admin, Buffer.from([0x0a, 0x09, 0x61]), 'proto', 500); // a string longer than the body: Connect says "internal"
    await same(admin, JSON.stringify({ zone: 'not-managed.example', owners: OWNERS }), 'json', 400);
  });

  it('a timeout header: read as Connect reads it, the same answer, the same refusal of a bad value', async () => {
    const b = bodies({ zone: ZONE, owners: OWNERS, dryRun: true });
    const before = answeredByRoute();
    const route = await post(admin, b.proto, 'proto', false, '120000');
    expect(answeredByRoute()).toBe(before + 1);
    expect(route).toEqual(await post(admin, b.proto, 'proto', true, '120000'));
    const bad = await post(admin, b.json, 'json', false, '12s');
    expect(bad.status).toBe(400);
    expect(bad).toEqual(await post(admin, b.json, 'json', true, '12s'));
  });

  it('a real import through the route adopts, and its answer is read by a Connect client', async () => {
    const b = bodies({ zone: ZONE, owners: OWNERS });
    const route = await post(admin, b.proto, 'proto', false);
    const answer = fromBinary(ResponseSchema, route.body);
    expect(answer.dryRun).toBe(false);
    expect(answer.adoptions.filter((a) => a.tenant === 'alice' && a.outcome === 1)).toHaveLength(200);
    const listing = await h.adminClient(admin).listOwnership({ zone: ZONE, tenant: 'alice' });
    expect(listing.entries).toHaveLength(200);
  });
});

describe('written in slices', () => {
  const outcomes = ['adopted', 'already_owned', 'conflict', 'unmapped_owner', 'not_allowed'] as const;
  const result = (n: number, unreadable: number): ImportResult => ({
    zone: ZONE,
    dryRun: n % 2 === 1,
    generation: 9_007_199_254_740_993n,
    unreadable: Array.from({ length: unreadable }, (_, i) => `a-u${i}.${ZONE}`),
    adoptions: Array.from(
      { length: n },
      (_, i): Adoption => ({
        dnsName: `h${i}.${ZONE}`,
        recordType: i % 3 ? 'A' : 'TXT',
        registryName: i % 11 ? `a-h${i}.${ZONE}` : '',
        ownerId: `c${i % 4}`,
        tenant: i % 4 === 3 ? '' : `t${i % 4}`,
        outcome: outcomes[i % 5]!,
        reason: i % 7 ? `reason "${i}" é` : '',
      }),
    ),
  });

  it('the JSON is toJsonString of the message, the binary pieces are toBinary of it, and both let the event loop turn', async () => {
    for (const [n, u] of [
      [0, 0],
      [1, 1],
      [3_000, 700],
    ] as const) {
      const r = result(n, u);
      const whole = await importResultToPb(r, false, new Slicer());
      const slicer = new Slicer(0);
      let turned = false;
      setImmediate(() => (turned = true));
      const json = await importAnswerJson(r, slicer);
      expect(json.toString('utf8')).toBe(toJsonString(ResponseSchema, whole));
      // The lists after the head's fields (api/binary-write.ts): the same message to any reader.
      expect(fromBinary(ResponseSchema, Buffer.concat(binaryParts(ResponseSchema, await importResultToPb(r, true, slicer))))).toEqual(whole);
      if (n > 1_000) expect([turned, slicer.yields > 20]).toEqual([true, true]);
    }
  });
});
