/**
 * Plan over Connect JSON has its own route (api/plan-json.ts: read and answered in slices). It must
 * answer exactly what Connect answers: the same plan, the same errors naming the same fields. Each
 * request is sent twice, once to the route and once to Connect (a `connect-timeout-ms` header makes
 * the route leave the request to Connect), and through gRPC.
 */
import { create, toJson } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointSchema, PlanResponseSchema, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { planResponseJson, readPlanRequest } from '../../src/api/plan-json.js';
import { planToPb } from '../../src/api/convert.js';
import type { StoredPlan } from '../../src/core/plan/plan.js';
import type { Change, Conflict, Endpoint as CoreEndpoint, RecordType } from '../../src/dns/types.js';
import type { OvhOperation, OvhRecord } from '../../src/ovh/types.js';
import { Slicer } from '../../src/core/slices.js';
import { PlanRequestSchema } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { fromJsonString, toJsonString } from '@bufbuild/protobuf';
import { startHarness, type Harness } from '../helpers/server.js';
import { ep } from '../helpers/expect.js';
import { captureLogger } from '../helpers/log-capture.js';

const ZONE = 'example.com';
let h: Harness;
let alice: string;
const { log, lines } = captureLogger('debug');
/** The plans the route (not Connect) answered. */
const answeredByRoute = () => lines.filter((l) => l['msg'] === 'plan answered in slices').map((l) => l['plan']);

type Answer = { status: number; body: Record<string, unknown> };

async function post(token: string, body: string, viaConnect: boolean): Promise<Answer> {
  const res = await fetch(`${h.server.url}/dnsplane.v1.ZoneService/Plan`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(viaConnect ? { 'connect-timeout-ms': '120000' } : {}) },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The plan without what differs between two plans of the same content (id, times). */
function content(a: Answer): unknown {
  const plan = { ...(a.body['plan'] as Record<string, unknown>) };
  delete plan['id'];
  delete plan['createdAt'];
  delete plan['expiresAt'];
  return plan;
}

const json = (e: Endpoint) => toJson(EndpointSchema, e);

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [{ subDomain: 'manual', fieldType: 'A', target: '198.51.100.1' }] }, logger: log });
  alice = await h.tenant('alice', [ZONE]);
  const bob = await h.tenant('bob', [ZONE]);
  // alice owns 80 sets, bob one: alice's plan below updates, deletes, creates, and meets bob.
  const mine = Array.from({ length: 80 }, (_, i) => ep(`a${i}.${ZONE}`, 'A', [`192.0.2.${i + 1}`]));
  await h
    .zoneClient(alice)
    .apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: mine } } } } });
  await h.zoneClient(bob).apply({
    source: {
      case: 'plan',
      value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`bob.${ZONE}`, 'A', ['203.0.113.9'])] } } },
    },
  });
});

afterAll(async () => {
  await h?.close();
});

/** 200 endpoints: 60 of alice's sets with new targets, 20 as they are, 117 new ones of several types, bob's name, a TTL under OVH's minimum. */
function desired(): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < 80; i++) out.push(json(ep(`a${i}.${ZONE}`, 'A', [i < 60 ? `192.0.2.${i + 101}` : `192.0.2.${i + 1}`])));
  for (let i = 0; i < 117; i++) {
    const kind = i % 3;
    if (kind === 0)
      out.push({ dnsName: `n${i}.${ZONE}`, recordType: 'TXT', targets: [`v=${i} "quoted" text`], ttl: 120, labels: { resource: `ingress/default/n${i}` } });
    else if (kind === 1) out.push({ dnsName: `n${i}.${ZONE}`, recordType: 'MX', targets: [`10 mx${i}.${ZONE}`], ttl: 30 });
    else out.push({ dnsName: `n${i}.${ZONE}`, recordType: 'AAAA', targets: ['2001:db8::1', `2001:db8::${i.toString(16)}`] });
  }
  out.push({ dnsName: `bob.${ZONE}`, recordType: 'A', targets: ['203.0.113.10'] });
  out.push({ dnsName: `cname.${ZONE}`, recordType: 'CNAME', targets: [`n2.${ZONE}`], ttl: 300, setIdentifier: '' });
  out.push({ dnsName: `a0.${ZONE}`.toUpperCase(), recordType: 'TXT', targets: ['case'] });
  return out;
}

describe('the Plan route answers what Connect answers', () => {
  it('a 200-endpoint SYNC plan: the same changes, operations, conflicts, warnings, digest, through the route, Connect and gRPC', async () => {
    const body = JSON.stringify({ desired: { zones: [ZONE], endpoints: desired() }, policy: 'POLICY_SYNC' });
    const route = await post(alice, body, false);
    const connect = await post(alice, body, true);
    expect(route.status).toBe(200);
    expect(connect.status).toBe(200);
    const zones = (route.body['plan'] as { zones: Array<{ changes: unknown[]; conflicts?: unknown[]; operations: unknown[] }> }).zones;
    expect(zones[0]!.changes.length).toBeGreaterThan(100);
    expect(zones[0]!.conflicts).toHaveLength(1);
    expect(content(route)).toEqual(content(connect));
    // The first was answered by the route, the second by Connect.
    expect(answeredByRoute()).toContain((route.body['plan'] as { id: string }).id);
    expect(answeredByRoute()).not.toContain((connect.body['plan'] as { id: string }).id);
    const grpc = await h.zoneClient(alice, 'grpc').plan(fromJsonString(PlanRequestSchema, body));
    expect(content({ status: 200, body: toJson(PlanResponseSchema, grpc) as Record<string, unknown> })).toEqual(content(route));
  });

  it('a change set of 100 creates, 70 updates, 70 deletes', async () => {
    const e = (n: string, t: string) => ({ dnsName: `${n}.${ZONE}`, recordType: 'A', targets: [t] });
    const changes = {
      create: Array.from({ length: 100 }, (_, i) => e(`c${i}`, '192.0.2.50')),
      updateOld: Array.from({ length: 70 }, (_, i) => e(`a${i}`, `192.0.2.${i + 1}`)),
      updateNew: Array.from({ length: 70 }, (_, i) => e(`a${i}`, '192.0.2.250')),
      delete: Array.from({ length: 70 }, (_, i) => e(`a${i + 10}`, `192.0.2.${i + 11}`)).slice(60),
    };
    const body = JSON.stringify({ changes, policy: 'POLICY_UPSERT_ONLY' });
    const route = await post(alice, body, false);
    const connect = await post(alice, body, true);
    expect(route.status).toBe(200);
    expect(content(route)).toEqual(content(connect));
  });

  /** The endpoints as desired, with endpoint `i`'s `key` set to `value`. */
  const editing = (i: number, key: string, value: unknown) => (eps: Record<string, unknown>[]) => {
    eps[i]![key] = value;
    return { desired: { zones: [ZONE], endpoints: eps } };
  };
  const bad: Array<[string, (eps: Record<string, unknown>[]) => unknown]> = [
    ['an unknown key in the 67th endpoint', editing(66, 'tll', 60)],
    ['a TTL that is not a number', editing(70, 'ttl', 'soon')],
    ['a NUL in a label', editing(99, 'labels', { note: 'a\u0000b' })],
    ['a name outside the zones', editing(80, 'dnsName', 'x.elsewhere.org')],
    ['an unknown policy', (eps) => ({ desired: { zones: [ZONE], endpoints: eps }, policy: 'upsert-only' })],
    ['endpoints that are not a list', () => ({ desired: { zones: [ZONE], endpoints: { a: 1 } } })],
    ['an endpoint that is a string', (eps) => ({ desired: { zones: [ZONE], endpoints: [...eps, 'x'] } })],
    ['both inputs', (eps) => ({ desired: { zones: [ZONE], endpoints: eps }, changes: {} })],
    [
      '5,001 endpoints',
      () => ({
        desired: { zones: [ZONE], endpoints: Array.from({ length: 5001 }, (_, i) => ({ dnsName: `m${i}.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'] })) },
      }),
    ],
  ];
  it.each(bad)('%s: the same error, naming the same field', async (_what, make) => {
    const eps = Array.from({ length: 100 }, (_, i) => ({ dnsName: `b${i}.${ZONE}`, recordType: 'A', targets: ['192.0.2.7'] }));
    const body = JSON.stringify(make(eps));
    const route = await post(alice, body, false);
    const connect = await post(alice, body, true);
    expect(route.status).toBe(400);
    expect(route).toEqual(connect);
  });

  it('a body that is not JSON, and a wrong token: the same answers', async () => {
    expect(await post(alice, '{"desired":', false)).toEqual(await post(alice, '{"desired":', true));
    const body = JSON.stringify({ desired: { zones: [ZONE], endpoints: [] } });
    const route = await post('dnsp_wrong', body, false);
    expect(route.status).toBe(401);
    expect(route).toEqual(await post('dnsp_wrong', body, true));
  });
});

describe('read and written in slices', () => {
  it('reads 5,000 endpoints as protobuf-es does, yielding between slices', async () => {
    // Most in the plain form (read without reflection), some in the other forms proto3 JSON allows
    // (snake_case keys, a TTL as a string, nulls, an empty map): all read as protobuf-es reads them.
    const odd = (i: number) =>
      [
        { dns_name: `m${i}.${ZONE}`, record_type: 'A', ttl: '60' },
        { dnsName: `m${i}.${ZONE}`, recordType: 'TXT', targets: ['x'], setIdentifier: null, labels: {} },
        { dnsName: `m${i}.${ZONE}`, recordType: 'A', ttl: 1e2, set_identifier: 'eu' },
      ][i % 3];
    const body = JSON.stringify({
      desired: {
        zones: [ZONE],
        endpoints: Array.from({ length: 5000 }, (_, i) =>
          i % 7 === 0 ? odd(i) : { dnsName: `m${i}.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: i, labels: { k: `v${i}` } },
        ),
      },
      policy: 'POLICY_SYNC',
      force: true,
    });
    const slicer = new Slicer(0);
    const read = await readPlanRequest(body, slicer);
    expect(toJsonString(PlanRequestSchema, read)).toBe(toJsonString(PlanRequestSchema, fromJsonString(PlanRequestSchema, body)));
    expect(slicer.yields).toBeGreaterThan(100);
  });

  it('writes a plan of 3,000 changes as protobuf-es writes planToPb, yielding between slices', async () => {
    const Z = 'xn--bcher-kva.example'; // bücher.example: names shown with their unicode_name label
    const rec = (i: number, sub: string, type = 'A', target = '192.0.2.1', ttl = 300): OvhRecord => ({
      id: `${5000000000 + i}`,
      zone: Z,
      subDomain: sub,
      fieldType: type,
      target,
      ttl,
    });
    const endpoint = (name: string, type: RecordType, targets: string[], more: Partial<CoreEndpoint> = {}): CoreEndpoint => ({
      dnsName: `${name}.${Z}`,
      recordType: type,
      targets,
      ttl: 300,
      ...more,
    });
    const changes: Change[] = [];
    const operations: OvhOperation[] = [];
    for (let i = 0; i < 3000; i++) {
      const kind = i % 5;
      if (kind === 0) {
        changes.push({
          action: 'create',
          after: endpoint(`c${i}`, 'TXT', [`v="${i}" \\ é \u2028`], { labels: { owner: 'alice', resource: `ingress/ns/c${i}` } }),
        });
        operations.push({ method: 'POST', path: `/domain/zone/${Z}/record`, body: { fieldType: 'TXT', subDomain: `c${i}`, target: `v="${i}"`, ttl: 300 } });
      } else if (kind === 1) {
        changes.push({
          action: 'update',
          before: endpoint(`u${i}`, 'A', ['192.0.2.1']),
          after: endpoint(`u${i}`, 'A', ['192.0.2.2'], { ttl: 60 }),
          warnings: ['ttl 30 raised to 60, OVH minimum'],
        });
        operations.push({
          method: 'PUT',
          path: `/domain/zone/${Z}/record/${5000000000 + i}`,
          id: `${5000000000 + i}`,
          body: { target: '192.0.2.2', ttl: 60 },
          before: rec(i, `u${i}`),
        });
      } else if (kind === 2) {
        changes.push({ action: 'delete', before: endpoint(`d${i}`, 'MX', ['10 mx.example.', '20 mx2.example.'], { ttl: 0, setIdentifier: 'eu' }) });
        operations.push({
          method: 'DELETE',
          path: `/domain/zone/${Z}/record/${5000000000 + i}`,
          id: `${5000000000 + i}`,
          before: rec(i, `d${i}`, 'MX', '10 mx.example.'),
        });
        operations.push({
          method: 'DELETE',
          path: `/domain/zone/${Z}/record/${6000000000 + i}`,
          id: `${6000000000 + i}`,
          before: rec(i, `d${i}`, 'MX', '20 mx2.example.'),
        });
      } else if (kind === 3) {
        changes.push({
          action: 'update',
          before: endpoint(`s${i}`, 'AAAA', ['2001:db8::1']),
          after: endpoint(`s${i}`, 'AAAA', ['2001:db8::1', '2001:db8::2'], { labels: { 'dnsplane/shared': 'true' } }),
        });
        operations.push({ method: 'POST', path: `/domain/zone/${Z}/record`, body: { fieldType: 'AAAA', subDomain: `s${i}`, target: '2001:db8::2', ttl: 300 } });
      } else {
        changes.push({ action: 'create', after: endpoint(`n${i}`, 'CNAME', [], { labels: {} }) }); // a change without operations
      }
    }
    const conflicts: Conflict[] = [{ action: 'update', endpoint: endpoint('bob', 'A', ['203.0.113.1']), owner: 'bob', reason: 'owned by tenant "bob"' }];
    const stored: StoredPlan = {
      id: 'pl_1',
      tenant: 'alice',
      tenantId: '1',
      policy: 'sync',
      digest: 'abc',
      createdAt: new Date(1_700_000_000_123),
      expiresAt: new Date(1_700_000_900_000),
      status: 'pending',
      input: { kind: 'desired', policy: 'sync', zones: [Z], endpoints: [] },
      zones: [
        {
          zone: Z,
          baseGeneration: 12345678901234n,
          changes,
          conflicts,
          operations,
          threshold: { owned: 3, updates: 1, deletes: 1, maxPercent: 30, exceeded: true, forced: false },
        },
        { zone: 'empty.example', baseGeneration: 0n, changes: [], conflicts: [], operations: [] },
      ],
    };
    const slicer = new Slicer(0);
    const written = await planResponseJson(stored, slicer);
    const expected = toJsonString(PlanResponseSchema, create(PlanResponseSchema, { plan: await planToPb(stored) }));
    expect(written).toBe(expected);
    expect(slicer.yields).toBeGreaterThan(40);
  });
});
