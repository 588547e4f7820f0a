/**
 * NsmService end to end: real Connect client, real Postgres, the OVH simulator over HTTPS, and the
 * simulator's authoritative DNS server queried with a real DNS client exactly as NSM's sdk
 * (pkg/tools/dnsresolve) resolves a domain. Every test asserts the exact OVH calls.
 */
import { Resolver } from 'node:dns/promises';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, type ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectClient } from '../../src/cli/client.js';
import { NsmService, NsmServiceSpecSchema, type NsmServiceSpec, type PublishDomainRequestSchema } from '../../src/gen/dnsplane/v1/nsm_pb.js';
import { ApplyStatus, ChangeAction, EndpointSchema } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines, expectRejected } from '../helpers/expect.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'example.com';
const C1 = `cluster1.nsm.${ZONE}`;
const C2 = `cluster2.nsm.${ZONE}`;
const FLOAT = `floating.nsm.${ZONE}`;
const MANUAL = `manual.nsm.${ZONE}`;
const RECORD = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;

let h: Harness;
const tokens: Record<string, string> = {};
let resolver: Resolver;

// --- NSM's resolution, as sdk/pkg/tools/dnsresolve does it --------------------------------------
// DefaultRegistryService and DefaultNsmgrProxyService of the sdk.
const REGISTRY_SERVICE = 'registry.nsm-system';
const NSMGR_PROXY_SERVICE = 'nsmgr-proxy.nsm-system';

/**
 * Go's net.Resolver.LookupIPAddr: A and AAAA of the name, an error when the name does not exist
 * (NXDOMAIN) or holds neither. (Go then sorts the addresses by RFC 6724, which depends on the host's
 * own addresses; with one family published, as here for the checked names, the order is fixed.)
 */
async function lookupIPAddr(name: string): Promise<string[]> {
  const family = (p: Promise<string[]>) =>
    p.catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENODATA') return [];
      throw e;
    });
  const ips = [...(await family(resolver.resolve4(name))), ...(await family(resolver.resolve6(name)))];
  if (ips.length === 0) throw Object.assign(new Error(`no such host ${name}`), { code: 'ENODATA' });
  return ips;
}

/** resolveDomain(service, domain): SRV <service>.<domain> -> first answer's port; A/AAAA of the same name -> first address. */
async function nsmResolve(service: string, domain: string, lookup: (name: string) => Promise<string[]> = lookupIPAddr): Promise<string> {
  const serviceDomain = `${service}.${domain}`;
  const records = await resolver.resolveSrv(serviceDomain);
  if (records.length === 0) throw new Error('resolver.LookupSERV return empty result');
  const port = records[0]!.port;
  const ips = await lookup(serviceDomain);
  const ip = ips[0]!;
  return ip.split(':').length - 1 >= 2 ? `tcp://[${ip}]:${port}` : `tcp://${ip}:${port}`;
}

async function dnsError(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => undefined,
    (e: NodeJS.ErrnoException) => e.code,
  );
}

// --- helpers ---------------------------------------------------------------------------------------

const calls = (): string[] => callLines(h.sim);

function nsm(token: string) {
  return connectClient(NsmService, h.server.url, token);
}

function svc(name: string, port: number, addresses: string[], extra: { namespace?: string; addressOnly?: boolean } = {}): NsmServiceSpec {
  return create(NsmServiceSpecSchema, { name, port, addresses, ...extra });
}

function publishReq(domain: string, services: NsmServiceSpec[], ttl = 60): MessageInitShape<typeof PublishDomainRequestSchema> {
  return { domain, services, ttl };
}

/** The draft records of the zone under a name, as "subDomain TYPE target ttl", sorted. */
function recordsUnder(suffix: string): string[] {
  const sub = suffix.slice(0, -(ZONE.length + 1));
  return h.sim
    .draftRecords(ZONE)
    .filter((r) => r.subDomain === sub || r.subDomain.endsWith(`.${sub}`))
    .map((r) => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`)
    .sort();
}

function recordId(subDomain: string, fieldType: string): string {
  const r = h.sim.draftRecords(ZONE).filter((x) => x.subDomain === subDomain && x.fieldType === fieldType);
  expect(r).toHaveLength(1);
  return String(r[0]!.id);
}

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        { subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.', ttl: 0 },
        // Made by hand in OVH: nobody owns it.
        { subDomain: 'registry.nsm-system.manual.nsm', fieldType: 'A', target: '192.0.2.250', ttl: 0 },
      ],
    },
  });
  for (const name of ['cluster1', 'cluster2', 'floating', 'intruder']) tokens[name] = await h.tenant(name, [ZONE]);
  tokens['narrow'] = await h.tenant('narrow', [ZONE], { suffixes: [`cluster9.nsm.${ZONE}`] });
  tokens['elsewhere'] = await h.tenant('elsewhere', ['other.test']);
  // The first read syncs the zone; from here on every OVH call is one the NSM calls make.
  await h.zoneClient(tokens['cluster1']).records({ zones: [ZONE] });
  resolver = new Resolver({ timeout: 10_000, tries: 1 }); // a bound for a lost answer only; a loaded machine answers late;
  resolver.setServers([`127.0.0.1:${h.sim.dnsPort}`]);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('two clusters and a floating domain in one zone', () => {
  it('publishes cluster1: one SRV and one address per family per service, 5 POSTs and 1 refresh', async () => {
    const res = await nsm(tokens['cluster1']!).publishDomain(
      publishReq(C1, [svc('registry', 5002, ['192.0.2.11', '2001:DB8::11']), svc('nsmgr-proxy', 5004, ['192.0.2.12'])]),
    );
    expect(calls()).toEqual([...Array(5).fill(`POST ${RECORD}`), `POST ${REFRESH}`]);
    expect(
      h.sim
        .writes()
        .filter((c) => c.path === RECORD)
        .map((c) => c.body),
    ).toEqual(
      expect.arrayContaining([
        { fieldType: 'SRV', subDomain: 'registry.nsm-system.cluster1.nsm', target: `0 100 5002 registry.nsm-system.${C1}.`, ttl: 60 },
        { fieldType: 'A', subDomain: 'registry.nsm-system.cluster1.nsm', target: '192.0.2.11', ttl: 60 },
        { fieldType: 'AAAA', subDomain: 'registry.nsm-system.cluster1.nsm', target: '2001:db8::11', ttl: 60 },
        { fieldType: 'SRV', subDomain: 'nsmgr-proxy.nsm-system.cluster1.nsm', target: `0 100 5004 nsmgr-proxy.nsm-system.${C1}.`, ttl: 60 },
        { fieldType: 'A', subDomain: 'nsmgr-proxy.nsm-system.cluster1.nsm', target: '192.0.2.12', ttl: 60 },
      ]),
    );
    expect(res).toMatchObject({ domain: C1, zone: ZONE, status: ApplyStatus.APPLIED });
    expect(res.changes.map((c) => `${ChangeAction[c.action]} ${c.after!.dnsName} ${c.after!.recordType}`)).toEqual([
      `CREATE nsmgr-proxy.nsm-system.${C1} A`,
      `CREATE nsmgr-proxy.nsm-system.${C1} SRV`,
      `CREATE registry.nsm-system.${C1} A`,
      `CREATE registry.nsm-system.${C1} AAAA`,
      `CREATE registry.nsm-system.${C1} SRV`,
    ]);
    expect(res.calls.map((c) => `${c.method} ${c.path}`)).toEqual(calls());
    expect(res.services.map((s) => [s.dnsName, s.urls])).toEqual([
      [`registry.nsm-system.${C1}`, ['tcp://192.0.2.11:5002', 'tcp://[2001:db8::11]:5002']],
      [`nsmgr-proxy.nsm-system.${C1}`, ['tcp://192.0.2.12:5004']],
    ]);
  });

  it('publishes cluster2 (IPv6 registry) beside it, touching nothing of cluster1', async () => {
    const before = recordsUnder(C1);
    await nsm(tokens['cluster2']!).publishDomain(publishReq(C2, [svc('registry', 5002, ['2001:db8::21']), svc('nsmgr-proxy', 5004, ['198.51.100.22'])]));
    expect(calls()).toEqual([...Array(4).fill(`POST ${RECORD}`), `POST ${REFRESH}`]);
    expect(recordsUnder(C1)).toEqual(before);
  });

  it('publishes a floating domain: its registry, an address-only vl3-ipam, no nsmgr-proxy', async () => {
    const res = await nsm(tokens['floating']!).publishDomain(
      publishReq(FLOAT, [svc('registry', 5002, ['203.0.113.30']), svc('vl3-ipam', 0, ['203.0.113.31'], { addressOnly: true })]),
    );
    expect(calls()).toEqual([...Array(3).fill(`POST ${RECORD}`), `POST ${REFRESH}`]);
    expect(recordsUnder(FLOAT)).toEqual([
      `registry.nsm-system.floating.nsm A 203.0.113.30 60`,
      `registry.nsm-system.floating.nsm SRV 0 100 5002 registry.nsm-system.${FLOAT}. 60`,
      `vl3-ipam.nsm-system.floating.nsm A 203.0.113.31 60`,
    ]);
    expect(res.services.map((s) => [s.name, s.addressOnly, s.urls])).toEqual([
      ['registry', false, ['tcp://203.0.113.30:5002']],
      ['vl3-ipam', true, []],
    ]);
  });

  it('resolves every domain as NSM does, from the public zone after the refresh', async () => {
    // One answer per lookup: NSM takes the first, so there is never a second to pick from.
    const srv = await resolver.resolveSrv(`registry.nsm-system.${C1}`);
    expect(srv).toEqual([{ name: `registry.nsm-system.${C1}`, port: 5002, priority: 0, weight: 100 }]);
    expect(await resolver.resolve4(`registry.nsm-system.${C1}`)).toEqual(['192.0.2.11']);
    expect(await resolver.resolve6(`registry.nsm-system.${C1}`)).toEqual(['2001:db8::11']);

    expect(await nsmResolve(REGISTRY_SERVICE, C1)).toBe('tcp://192.0.2.11:5002');
    // A host that sorts IPv6 first (RFC 6724) gets the AAAA: the same port, the address in brackets.
    expect(await nsmResolve(REGISTRY_SERVICE, C1, async (n) => [...(await resolver.resolve6(n)), ...(await resolver.resolve4(n))])).toBe(
      'tcp://[2001:db8::11]:5002',
    );
    expect(await nsmResolve(NSMGR_PROXY_SERVICE, C1)).toBe('tcp://192.0.2.12:5004');
    expect(await nsmResolve(REGISTRY_SERVICE, C2)).toBe('tcp://[2001:db8::21]:5002');
    expect(await nsmResolve(NSMGR_PROXY_SERVICE, C2)).toBe('tcp://198.51.100.22:5004');
    expect(await nsmResolve(REGISTRY_SERVICE, FLOAT)).toBe('tcp://203.0.113.30:5002');
    expect(await dnsError(nsmResolve(NSMGR_PROXY_SERVICE, FLOAT))).toBe('ENOTFOUND');
    // vl3-ipam is found by its address (its port is in its URL) and has no SRV.
    expect(await resolver.resolve4(`vl3-ipam.nsm-system.${FLOAT}`)).toEqual(['203.0.113.31']);
    expect(await dnsError(resolver.resolveSrv(`vl3-ipam.nsm-system.${FLOAT}`))).toBe('ENODATA');
    expect(calls()).toEqual([]);
  });
});

describe('republishing', () => {
  it('publishing the same thing again sends nothing and refreshes nothing', async () => {
    const res = await nsm(tokens['cluster1']!).publishDomain(
      publishReq(C1, [svc('registry', 5002, ['2001:db8::11', '192.0.2.11']), svc('nsmgr-proxy', 5004, ['192.0.2.12'])]),
    );
    expect(res.status).toBe(ApplyStatus.NO_CHANGES);
    expect(res.changes).toEqual([]);
    expect(res.calls).toEqual([]);
    expect(calls()).toEqual([]);
  });

  it('a new registry address is one PUT of the existing record and one refresh', async () => {
    const id = recordId('registry.nsm-system.cluster1.nsm', 'A');
    const res = await nsm(tokens['cluster1']!).publishDomain(
      publishReq(C1, [svc('registry', 5002, ['192.0.2.111', '2001:db8::11']), svc('nsmgr-proxy', 5004, ['192.0.2.12'])]),
    );
    expect(calls()).toEqual([`PUT ${RECORD}/${id}`, `POST ${REFRESH}`]);
    expect(h.sim.writes()[0]!.body).toEqual({ target: '192.0.2.111', ttl: 60 });
    expect(res.changes.map((c) => [ChangeAction[c.action], c.before!.targets, c.after!.targets])).toEqual([['UPDATE', ['192.0.2.11'], ['192.0.2.111']]]);
    expect(await nsmResolve(REGISTRY_SERVICE, C1)).toBe('tcp://192.0.2.111:5002');
  });

  it('a new port is one PUT of the SRV record and one refresh', async () => {
    const id = recordId('nsmgr-proxy.nsm-system.cluster1.nsm', 'SRV');
    await nsm(tokens['cluster1']!).publishDomain(
      publishReq(C1, [svc('registry', 5002, ['192.0.2.111', '2001:db8::11']), svc('nsmgr-proxy', 5005, ['192.0.2.12'])]),
    );
    expect(calls()).toEqual([`PUT ${RECORD}/${id}`, `POST ${REFRESH}`]);
    expect(h.sim.writes()[0]!.body).toEqual({ target: `0 100 5005 nsmgr-proxy.nsm-system.${C1}.`, ttl: 60 });
    expect(await nsmResolve(NSMGR_PROXY_SERVICE, C1)).toBe('tcp://192.0.2.12:5005');
  });

  it("a service no longer listed is deleted (the domain's services only), here going floating", async () => {
    // cluster1 also owns records that are not NSM services of its domain: they must stay.
    await applyDesired(h.zoneClient(tokens['cluster1']), [
      create(EndpointSchema, { dnsName: `api.${C1}`, recordType: 'A', targets: ['192.0.2.40'], ttl: 60 }),
      create(EndpointSchema, { dnsName: `info.nsm-system.${C1}`, recordType: 'TXT', targets: ['not an NSM service'], ttl: 60 }),
      create(EndpointSchema, { dnsName: `three.labels.below.${C1}`, recordType: 'A', targets: ['192.0.2.41'], ttl: 60 }),
    ]);
    h.sim.clearCalls();
    const proxy = [recordId('nsmgr-proxy.nsm-system.cluster1.nsm', 'A'), recordId('nsmgr-proxy.nsm-system.cluster1.nsm', 'SRV')];
    const res = await nsm(tokens['cluster1']!).publishDomain(publishReq(C1, [svc('registry', 5002, ['192.0.2.111', '2001:db8::11'])]));
    expect(calls().sort()).toEqual([...proxy.map((id) => `DELETE ${RECORD}/${id}`), `POST ${REFRESH}`].sort());
    expect(calls().at(-1)).toBe(`POST ${REFRESH}`);
    expect(res.changes.map((c) => `${ChangeAction[c.action]} ${c.before!.dnsName} ${c.before!.recordType}`)).toEqual([
      `DELETE nsmgr-proxy.nsm-system.${C1} A`,
      `DELETE nsmgr-proxy.nsm-system.${C1} SRV`,
    ]);
    expect(await dnsError(nsmResolve(NSMGR_PROXY_SERVICE, C1))).toBe('ENOTFOUND');
    expect(await nsmResolve(REGISTRY_SERVICE, C1)).toBe('tcp://192.0.2.111:5002');
    expect(await nsmResolve(NSMGR_PROXY_SERVICE, C2)).toBe('tcp://198.51.100.22:5004');
  });
});

describe('ownership', () => {
  it('another tenant cannot publish over a domain, even with services the domain does not have', async () => {
    const before = recordsUnder(C2);
    await expectRejected(
      nsm(tokens['intruder']!).publishDomain(publishReq(C2, [svc('registry', 5002, ['192.0.2.66']), svc('nsmgr-proxy', 5004, ['192.0.2.67'])])),
      Code.PermissionDenied,
      new RegExp(`domain: NSM domain "${C2}" belongs to tenant "cluster2"`),
    );
    await expectRejected(
      nsm(tokens['intruder']!).publishDomain(publishReq(C2, [svc('vl3-ipam', 0, ['192.0.2.68'], { addressOnly: true })])),
      Code.PermissionDenied,
      /belongs to tenant "cluster2"/,
    );
    expect(calls()).toEqual([]);
    expect(recordsUnder(C2)).toEqual(before);
  });

  it('another tenant cannot unpublish a domain', async () => {
    await expectRejected(nsm(tokens['intruder']!).unpublishDomain({ domain: C2 }), Code.PermissionDenied, /belongs to tenant "cluster2"/);
    expect(calls()).toEqual([]);
    expect(await nsmResolve(REGISTRY_SERVICE, C2)).toBe('tcp://[2001:db8::21]:5002');
  });

  it('a record made by hand at one of the names blocks the whole publication', async () => {
    await expectRejected(
      nsm(tokens['intruder']!).publishDomain(publishReq(MANUAL, [svc('registry', 5002, ['192.0.2.70']), svc('nsmgr-proxy', 5004, ['192.0.2.71'])])),
      Code.PermissionDenied,
      new RegExp(`registry\\.nsm-system\\.${MANUAL.replace(/\./g, '\\.')} A: exists in OVH without an owner.*nothing was sent to OVH`),
    );
    expect(calls()).toEqual([]);
  });

  it("a domain outside the tenant's suffixes or zones is PermissionDenied", async () => {
    await expectRejected(
      nsm(tokens['narrow']!).publishDomain(publishReq(`cluster8.nsm.${ZONE}`, [svc('registry', 5002, ['192.0.2.80'])])),
      Code.PermissionDenied,
      /domain: .*outside tenant "narrow"'s allowed suffixes/,
    );
    await expectRejected(
      nsm(tokens['elsewhere']!).publishDomain(publishReq(`cluster8.nsm.${ZONE}`, [svc('registry', 5002, ['192.0.2.80'])])),
      Code.PermissionDenied,
      /domain: zone "example.com" is not one of tenant "elsewhere"'s zones/,
    );
    await expectRejected(nsm(tokens['narrow']!).unpublishDomain({ domain: C1 }), Code.PermissionDenied, /allowed suffixes/);
    expect(calls()).toEqual([]);
  });

  it("a tenant limited to its domain's suffix may publish it", async () => {
    const d = `cluster9.nsm.${ZONE}`;
    const res = await nsm(tokens['narrow']!).publishDomain(publishReq(d, [svc('registry', 5002, ['192.0.2.90'])], 0));
    expect(res.status).toBe(ApplyStatus.APPLIED);
    expect(calls()).toEqual([`POST ${RECORD}`, `POST ${RECORD}`, `POST ${REFRESH}`]);
    expect(await nsmResolve(REGISTRY_SERVICE, d)).toBe('tcp://192.0.2.90:5002');
  });

  it('no token is Unauthenticated', async () => {
    const e = await connectClient(NsmService, h.server.url, '')
      .unpublishDomain({ domain: C1 })
      .catch((x: unknown) => x);
    expect(Code[(e as ConnectError).code]).toBe('Unauthenticated');
    expect(calls()).toEqual([]);
  });
});

describe('bad input is InvalidArgument naming the field and the rule, with no OVH call', () => {
  const reg = (addresses = ['192.0.2.1'], port = 5002) => svc('registry', port, addresses);
  const cases: Array<[string, MessageInitShape<typeof PublishDomainRequestSchema>, RegExp]> = [
    ['empty domain', publishReq('', [reg()]), /^domain: is required/],
    ['empty label in the domain', publishReq(`a..${ZONE}`, [reg()]), /^domain: empty label/],
    ['underscore in the domain', publishReq(`_nsm.${ZONE}`, [reg()]), /^domain: .*underscores are not allowed/],
    ['wildcard domain', publishReq(`*.${ZONE}`, [reg()]), /^domain: .*wildcards are not allowed/],
    ['domain in no managed zone', publishReq('cluster1.nsm.other.org', [reg()]), /^domain: "cluster1\.nsm\.other\.org" is not in any zone/],
    ['port 0', publishReq(`x.${ZONE}`, [reg(['192.0.2.1'], 0)]), /^services\[0\]\.port: must be a port from 1 to 65535 \(got 0\)/],
    ['port 65536', publishReq(`x.${ZONE}`, [reg(['192.0.2.1'], 65536)]), /^services\[0\]\.port: must be a port from 1 to 65535 \(got 65536\)/],
    ['negative port', publishReq(`x.${ZONE}`, [reg(['192.0.2.1'], -1)]), /^services\[0\]\.port: must be a port from 1 to 65535/],
    [
      'a name, not an IP',
      publishReq(`x.${ZONE}`, [reg(['registry.example.net'])]),
      /^services\[0\]\.addresses\[0\]: "registry\.example\.net" is not an IP address/,
    ],
    ['IPv4 out of range', publishReq(`x.${ZONE}`, [reg(['192.0.2.300'])]), /^services\[0\]\.addresses\[0\]: .*not an IP address/],
    ['IPv6 in brackets', publishReq(`x.${ZONE}`, [reg(['[2001:db8::1]'])]), /^services\[0\]\.addresses\[0\]: .*not an IP address/],
    ['address with a port', publishReq(`x.${ZONE}`, [reg(['192.0.2.1:5002'])]), /^services\[0\]\.addresses\[0\]: .*not an IP address/],
    [
      'two IPv4 addresses',
      publishReq(`x.${ZONE}`, [reg(['192.0.2.1', '2001:db8::1', '192.0.2.2'])]),
      /^services\[0\]\.addresses\[2\]: a second IPv4 address .*first answer/,
    ],
    ['two IPv6 addresses', publishReq(`x.${ZONE}`, [reg(['2001:db8::1', '2001:db8::2'])]), /^services\[0\]\.addresses\[1\]: a second IPv6 address/],
    ['no address', publishReq(`x.${ZONE}`, [reg([])]), /^services\[0\]\.addresses: at least one address/],
    ['no service', publishReq(`x.${ZONE}`, []), /^services: at least one service/],
    ['a service name with a dot', publishReq(`x.${ZONE}`, [svc('registry.nsm-system', 5002, ['192.0.2.1'])]), /^services\[0\]\.name: must be one DNS label/],
    ['an empty service name', publishReq(`x.${ZONE}`, [svc('', 5002, ['192.0.2.1'])]), /^services\[0\]\.name: is required/],
    [
      'a bad namespace',
      publishReq(`x.${ZONE}`, [svc('registry', 5002, ['192.0.2.1'], { namespace: 'nsm_system' })]),
      /^services\[0\]\.namespace: .*underscores/,
    ],
    [
      'a service listed twice',
      publishReq(`x.${ZONE}`, [reg(), svc('registry', 5003, ['192.0.2.2'], { namespace: 'nsm-system' })]),
      /^services\[1\]\.name: services\[0\] already publishes/,
    ],
    [
      'a port on an address-only service',
      publishReq(`x.${ZONE}`, [svc('vl3-ipam', 5006, ['192.0.2.1'], { addressOnly: true })]),
      /^services\[0\]\.port: must be 0 for an address-only service/,
    ],
    ['a negative TTL', publishReq(`x.${ZONE}`, [reg()], -1), /^ttl: the TTL must not be negative/],
  ];
  it.each(cases)('%s', async (_name, req, message) => {
    await expectRejected(nsm(tokens['cluster1']!).publishDomain(req), Code.InvalidArgument, message);
    expect(calls()).toEqual([]);
  });

  it('unpublish of an invalid domain', async () => {
    await expectRejected(nsm(tokens['cluster1']!).unpublishDomain({ domain: 'bad!domain.example.com' }), Code.InvalidArgument, /^domain: label "bad!domain"/);
    await expectRejected(nsm(tokens['cluster1']!).unpublishDomain({ domain: '' }), Code.InvalidArgument, /^domain: is required/);
    expect(calls()).toEqual([]);
  });
});

describe('unpublishing', () => {
  it('removes exactly what was published for the domain: its names answer NXDOMAIN, the rest resolves', async () => {
    const ids = h.sim
      .draftRecords(ZONE)
      .filter((r) => r.subDomain === 'registry.nsm-system.cluster1.nsm')
      .map((r) => String(r.id));
    expect(ids).toHaveLength(3); // SRV, A, AAAA
    const others = recordsUnder(C2);
    const res = await nsm(tokens['cluster1']!).unpublishDomain({ domain: C1 });
    expect(calls().slice(0, -1).sort()).toEqual(ids.map((id) => `DELETE ${RECORD}/${id}`).sort());
    expect(calls().at(-1)).toBe(`POST ${REFRESH}`);
    expect(res.status).toBe(ApplyStatus.APPLIED);
    expect(res.changes.map((c) => `${ChangeAction[c.action]} ${c.before!.recordType}`)).toEqual(['DELETE A', 'DELETE AAAA', 'DELETE SRV']);

    for (const lookup of [
      () => resolver.resolveSrv(`registry.nsm-system.${C1}`),
      () => resolver.resolve4(`registry.nsm-system.${C1}`),
      () => resolver.resolve6(`registry.nsm-system.${C1}`),
      () => resolver.resolveSrv(`nsmgr-proxy.nsm-system.${C1}`),
      () => resolver.resolve4(`nsmgr-proxy.nsm-system.${C1}`),
    ]) {
      expect(await dnsError(lookup())).toBe('ENOTFOUND'); // NXDOMAIN
    }
    expect(await dnsError(nsmResolve(REGISTRY_SERVICE, C1))).toBe('ENOTFOUND');
    // The other cluster still resolves, and the tenant's other records are still there.
    expect(recordsUnder(C2)).toEqual(others);
    expect(await nsmResolve(REGISTRY_SERVICE, C2)).toBe('tcp://[2001:db8::21]:5002');
    expect(await nsmResolve(NSMGR_PROXY_SERVICE, C2)).toBe('tcp://198.51.100.22:5004');
    expect(await nsmResolve(REGISTRY_SERVICE, FLOAT)).toBe('tcp://203.0.113.30:5002');
    expect(await resolver.resolve4(`api.${C1}`)).toEqual(['192.0.2.40']);
    expect(await resolver.resolve4(`three.labels.below.${C1}`)).toEqual(['192.0.2.41']);
    expect(await resolver.resolveTxt(`info.nsm-system.${C1}`)).toEqual([['not an NSM service']]);
  });

  it('unpublishing again sends nothing', async () => {
    const res = await nsm(tokens['cluster1']!).unpublishDomain({ domain: C1 });
    expect(res.status).toBe(ApplyStatus.NO_CHANGES);
    expect(calls()).toEqual([]);
  });

  it('once unpublished, the domain is free: another tenant may publish it', async () => {
    await nsm(tokens['intruder']!).publishDomain(publishReq(C1, [svc('registry', 5002, ['192.0.2.99'])]));
    expect(calls()).toEqual([`POST ${RECORD}`, `POST ${RECORD}`, `POST ${REFRESH}`]);
    expect(await nsmResolve(REGISTRY_SERVICE, C1)).toBe('tcp://192.0.2.99:5002');
    await expectRejected(nsm(tokens['cluster1']!).unpublishDomain({ domain: C1 }), Code.PermissionDenied, /belongs to tenant "intruder"/);
  });
});
