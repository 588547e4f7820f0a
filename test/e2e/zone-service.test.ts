/**
 * ZoneService end to end: a real Connect client over HTTP, real Postgres, the OVH simulator over
 * HTTPS through @ovhcloud/node-ovh. Every test asserts the exact calls the simulator received.
 */
import { Resolver } from 'node:dns/promises';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, ChangeAction, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'example.com';
let h: Harness;
let alice: string;
let bob: string;

const calls = (): string[] => callLines(h.sim);

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        { subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.', ttl: 0 },
        { subDomain: 'manual', fieldType: 'A', target: '192.0.2.200', ttl: 600 },
      ],
    },
  });
  alice = await h.tenant('alice', [ZONE]);
  bob = await h.tenant('bob', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('Records', () => {
  it('syncs a zone once (ids, one GET per record, SOA), then serves every read from the cache', async () => {
    const client = h.zoneClient(alice);
    const first = await client.records({ zones: [ZONE], includeForeign: true });
    const ids = h.sim.draftRecords(ZONE).map((r) => r.id);
    expect(calls().sort()).toEqual(
      [`GET /domain/zone/${ZONE}/record`, ...ids.map((id) => `GET /domain/zone/${ZONE}/record/${id}`), `GET /domain/zone/${ZONE}/soa`].sort(),
    );
    const zone = first.zones[0]!;
    expect(zone.notModified).toBe(false);
    const manual = zone.endpoints.find((e) => e.dnsName === `manual.${ZONE}`);
    expect(manual).toMatchObject({ recordType: 'A', targets: ['192.0.2.200'], ttl: 600 });
    expect(manual!.labels['owner']).toBe('');

    h.sim.clearCalls();
    await client.records({ zones: [ZONE], includeForeign: true });
    const again = await client.records({ zones: [ZONE], knownGenerations: { [ZONE]: zone.generation } });
    expect(again.zones[0]).toMatchObject({ zone: ZONE, notModified: true, endpoints: [], generation: zone.generation });
    expect(calls()).toEqual([]);
  });

  it('shows a tenant only its own records unless it asks for the others', async () => {
    const mine = await h.zoneClient(alice).records({ zones: [ZONE] });
    expect(mine.zones[0]!.endpoints.find((e) => e.dnsName === `manual.${ZONE}`)).toBeUndefined();
  });
});

describe('Plan and Apply', () => {
  it('creates a 3-target A record with 3 POSTs and 1 refresh, and the DNS server answers it', async () => {
    const client = h.zoneClient(alice);
    const planned = await client.plan({
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired', value: { zones: [], endpoints: [ep(`www.${ZONE}`, 'A', ['192.0.2.3', '192.0.2.1', '192.0.2.2'])] } },
    });
    expect(calls()).toEqual([]); // plans never touch OVH
    const zp = planned.plan!.zones[0]!;
    expect(zp.changes.map((c) => ChangeAction[c.action])).toEqual(['CREATE']);
    expect(zp.operations.map((o) => `${o.method} ${o.path}`)).toEqual([
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);

    const applied = await client.apply({ source: { case: 'planId', value: planned.plan!.id } });
    expect(ApplyStatus[applied.zones[0]!.status]).toBe('APPLIED');
    expect(calls()).toEqual([
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    const bodies = h.sim
      .writes()
      .filter((c) => c.path.endsWith('/record'))
      .map((c) => c.body);
    expect(bodies).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3'].map((target) => ({ fieldType: 'A', subDomain: 'www', target, ttl: 300 })));

    const resolver = new Resolver();
    resolver.setServers([`127.0.0.1:${h.sim.dnsPort}`]);
    expect((await resolver.resolve4(`www.${ZONE}`)).sort()).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);

    const recs = await client.records({ zones: [ZONE] });
    expect(recs.zones[0]!.generation).toBe(applied.zones[0]!.generation);
    expect(recs.zones[0]!.endpoints.find((e) => e.dnsName === `www.${ZONE}`)).toMatchObject({
      targets: ['192.0.2.1', '192.0.2.2', '192.0.2.3'],
      labels: { owner: 'alice' },
    });
  });

  it('changes one target of three with 1 PUT and 1 refresh, no DELETE, no POST', async () => {
    const before = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'www' && r.target === '192.0.2.3')!;
    await applyDesired(h.zoneClient(alice), [ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2', '192.0.2.9'])]);
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${before.id}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ target: '192.0.2.9', ttl: 300 });
  });

  it('changes only the TTL with PUTs only', async () => {
    await applyDesired(h.zoneClient(alice), [ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2', '192.0.2.9'], 600)]);
    const c = calls();
    expect(c.filter((x) => x.startsWith('PUT '))).toHaveLength(3);
    expect(c.filter((x) => !x.startsWith('PUT '))).toEqual([`POST /domain/zone/${ZONE}/refresh`]);
    expect(
      h.sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'www')
        .map((r) => r.ttl),
    ).toEqual([600, 600, 600]);
  });

  it('sends nothing and refreshes nothing for a plan with no change', async () => {
    const res = await applyDesired(h.zoneClient(alice), [ep(`www.${ZONE}`, 'A', ['192.0.2.9', '192.0.2.2', '192.0.2.1'], 600)]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('NO_CHANGES');
    expect(calls()).toEqual([]);
  });

  it("deletes what a SYNC desired state no longer holds, only among the tenant's own records", async () => {
    await applyDesired(h.zoneClient(alice), [ep(`api.${ZONE}`, 'CNAME', [`www.${ZONE}`])]);
    h.sim.clearCalls();
    const res = await applyDesired(h.zoneClient(alice), [ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2', '192.0.2.9'], 600)], Policy.SYNC);
    expect(res.zones[0]!.changes.map((c) => `${ChangeAction[c.action]} ${c.before?.dnsName}`)).toEqual([`DELETE api.${ZONE}`]);
    expect(calls()).toEqual([expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)), `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.draftRecords(ZONE).some((r) => r.subDomain === 'manual')).toBe(true); // unowned: untouched
  });

  it("reports another tenant's name as a conflict and applies the rest", async () => {
    const res = await applyDesired(h.zoneClient(bob), [ep(`www.${ZONE}`, 'A', ['198.51.100.1']), ep(`bob.${ZONE}`, 'A', ['198.51.100.2'])]);
    const z = res.zones[0]!;
    expect(z.conflicts.map((c) => [c.endpoint!.dnsName, c.owner])).toEqual([[`www.${ZONE}`, 'alice']]);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toMatchObject({ subDomain: 'bob', target: '198.51.100.2' });
  });

  it('never touches records made by hand in OVH', async () => {
    const res = await applyDesired(h.zoneClient(alice), [ep(`manual.${ZONE}`, 'A', ['192.0.2.201'])]);
    expect(res.zones[0]!.conflicts[0]).toMatchObject({ owner: '', reason: expect.stringMatching(/without an owner/) });
    expect(calls()).toEqual([]);
  });

  it('speaks gRPC on the same port', async () => {
    const res = await h.zoneClient(alice, 'grpc').listZones({});
    expect(res.zones.map((z) => z.name)).toEqual([ZONE]);
  });
});

describe('bad input is rejected with the field and the rule, and no OVH call', () => {
  const cases: Array<[string, Endpoint, Code, RegExp]> = [
    ['empty label', ep(`a..${ZONE}`, 'A', ['192.0.2.1']), Code.InvalidArgument, /endpoints\[0\]\.dnsName.*empty label/i],
    ['label over 63', ep(`${'a'.repeat(64)}.${ZONE}`, 'A', ['192.0.2.1']), Code.InvalidArgument, /endpoints\[0\]\.dnsName.*63/],
    [
      'name over 253',
      ep(`${Array.from({ length: 50 }, () => 'abcd').join('.')}.${ZONE}`, 'A', ['192.0.2.1']),
      Code.InvalidArgument,
      /endpoints\[0\]\.dnsName.*253/,
    ],
    ['character outside LDH', ep(`bad!name.${ZONE}`, 'A', ['192.0.2.1']), Code.InvalidArgument, /endpoints\[0\]\.dnsName/],
    ['underscore in an A name', ep(`_svc.${ZONE}`, 'A', ['192.0.2.1']), Code.InvalidArgument, /endpoints\[0\]\.dnsName.*underscore/i],
    ['unknown type', ep(`x.${ZONE}`, 'WKS', ['x']), Code.InvalidArgument, /endpoints\[0\]\.recordType/],
    ['CNAME at the apex', ep(ZONE, 'CNAME', [`www.${ZONE}`]), Code.InvalidArgument, /endpoints\[0\].*apex/i],
    ['bad IPv4', ep(`x.${ZONE}`, 'A', ['192.0.2.300']), Code.InvalidArgument, /endpoints\[0\]\.targets\[0\]/],
    ['bad MX', ep(`x.${ZONE}`, 'MX', ['mail.example.com']), Code.InvalidArgument, /endpoints\[0\]\.targets\[0\]/],
    ['bad SRV', ep(`_sip._tcp.${ZONE}`, 'SRV', ['0 5 sip.example.com']), Code.InvalidArgument, /endpoints\[0\]\.targets\[0\]/],
    ['negative TTL', ep(`x.${ZONE}`, 'A', ['192.0.2.1'], -5), Code.InvalidArgument, /endpoints\[0\]\.ttl/],
    ['name outside every zone', ep('www.other.org', 'A', ['192.0.2.1']), Code.InvalidArgument, /endpoints\[0\]\.dnsName.*not in any zone/],
  ];
  it.each(cases)('%s', async (_name, endpoint, code, message) => {
    await expectRejected(applyDesired(h.zoneClient(alice), [endpoint]), code, message);
    await expectRejected(
      h.zoneClient(alice).plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [endpoint] } } }),
      code,
      message,
    );
    expect(calls()).toEqual([]);
  });

  it('CNAME beside another type at the same name', async () => {
    await expectRejected(
      applyDesired(h.zoneClient(alice), [ep(`dup.${ZONE}`, 'CNAME', [`www.${ZONE}`]), ep(`dup.${ZONE}`, 'TXT', ['hello'])]),
      Code.InvalidArgument,
      /CNAME/,
    );
    expect(calls()).toEqual([]);
  });

  it("a zone outside the tenant's zones is PermissionDenied", async () => {
    const h2 = await h.tenant('carol', ['other.test']);
    await expectRejected(applyDesired(h.zoneClient(h2), [ep(`x.${ZONE}`, 'A', ['192.0.2.1'])]), Code.PermissionDenied, /endpoints\[0\]\.dnsName.*carol/);
    await expectRejected(h.zoneClient(h2).records({ zones: [ZONE] }), Code.PermissionDenied, /zones\[0\]/);
    expect(calls()).toEqual([]);
  });

  it('no token or a wrong token is Unauthenticated', async () => {
    await expectRejected(h.zoneClient(undefined).listZones({}), Code.Unauthenticated, /Bearer/);
    await expectRejected(h.zoneClient('dnsp_wrong').records({}), Code.Unauthenticated, /invalid/);
    expect(calls()).toEqual([]);
  });
});
