/**
 * Every record type OVH has (issue 43: its schema's 17) through the doors, with clients not ours where
 * they exist — a real server (Postgres, the OVH simulator over HTTPS through the real client):
 *
 *   Connect     one apply of all 17: exactly 17 POST …/record with fieldType and target as OVH stores
 *               them + 1 refresh; the zone re-read from OVH plans no change
 *   zone files  `zone export` read back as a desired state (`plan --zone-file`) plans no change
 *   DNS door    `dig` reads each type back (SPF, DKIM and DMARC as TXT: one TXT set with a TXT record
 *               at the same name); `dig` and dnspython read the AXFR; `nsupdate` deletes and adds
 *               each wire type (its wire form both ways), the exact OVH calls asserted; a TXT written at
 *               a DKIM's name is one set with it (no second record, one PUT when its value changes)
 *   bad values  each type's refused, naming the field and the rule, nothing sent
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { syncZone } from '../../src/core/zones/zones.js';
import { desiredFromZoneFile } from '../../src/api/zone-file-document.js';
import { canonicalTarget } from '../../src/dns/targets.js';
import type { RecordType } from '../../src/dns/types.js';
import { ApplyStatus, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { cliKey, memoryKeyring } from '../helpers/dns-keys.js';
import { describeWithTools, dig, nsupdate, run } from '../helpers/dns-tools.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'types.test';
const HEX64 = 'AB'.repeat(32);
const HEX64_2 = 'cd'.repeat(32);

interface TypeCase {
  type: RecordType;
  sub: string;
  /** As a client writes it (not always canonical). */
  given: string;
  /** As OVH stores it: the target of the POST. */
  ovh: string;
  /** dnsplane's canonical form. */
  canonical: string;
  /** nsupdate's rdata for it (the wire types). */
  rdata?: string;
}

const CASES: TypeCase[] = [
  { type: 'A', sub: 'a', given: '192.0.2.10', ovh: '192.0.2.10', canonical: '192.0.2.10', rdata: '192.0.2.10' },
  { type: 'AAAA', sub: 'aaaa', given: '2001:DB8:0::1', ovh: '2001:db8::1', canonical: '2001:db8::1', rdata: '2001:db8::1' },
  { type: 'CNAME', sub: 'cname', given: 'Target.Example.org.', ovh: 'target.example.org.', canonical: 'target.example.org', rdata: 'target.example.org.' },
  { type: 'TXT', sub: 'txt', given: '"hello world"', ovh: 'hello world', canonical: 'hello world', rdata: '"hello world"' },
  { type: 'MX', sub: 'mx', given: '10 mail.example.org', ovh: '10 mail.example.org.', canonical: '10 mail.example.org', rdata: '10 mail.example.org.' },
  {
    type: 'SRV',
    sub: '_sip._tcp',
    given: '0 5 5060 sip.example.org',
    ovh: '0 5 5060 sip.example.org.',
    canonical: '0 5 5060 sip.example.org',
    rdata: '0 5 5060 sip.example.org.',
  },
  {
    type: 'CAA',
    sub: 'caa',
    given: '0 ISSUE letsencrypt.org',
    ovh: '0 issue "letsencrypt.org"',
    canonical: '0 issue "letsencrypt.org"',
    rdata: '0 issue "letsencrypt.org"',
  },
  { type: 'NS', sub: 'deleg', given: 'ns1.example.org', ovh: 'ns1.example.org.', canonical: 'ns1.example.org', rdata: 'ns1.example.org.' },
  { type: 'PTR', sub: 'ptr', given: 'host.example.org', ovh: 'host.example.org.', canonical: 'host.example.org', rdata: 'host.example.org.' },
  {
    type: 'NAPTR',
    sub: 'naptr',
    given: '100 10 "s" "SIP+D2U" "" _sip._udp.example.org.',
    ovh: '100 10 "S" "SIP+D2U" "" _sip._udp.example.org.',
    canonical: '100 10 "S" "SIP+D2U" "" _sip._udp.example.org',
    rdata: '100 10 "S" "SIP+D2U" "" _sip._udp.example.org.',
  },
  {
    type: 'TLSA',
    sub: '_443._tcp.tlsa',
    given: `3 1 1 ${HEX64}`,
    ovh: `3 1 1 ${HEX64.toLowerCase()}`,
    canonical: `3 1 1 ${HEX64.toLowerCase()}`,
    rdata: `3 1 1 ${HEX64}`,
  },
  { type: 'SSHFP', sub: 'sshfp', given: `4 2 ${HEX64_2}`, ovh: `4 2 ${HEX64_2}`, canonical: `4 2 ${HEX64_2}`, rdata: `4 2 ${HEX64_2}` },
  {
    type: 'LOC',
    sub: 'loc',
    given: '52 22 23 N 4 53 32 E -2m',
    ovh: '52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m',
    canonical: '52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m',
    rdata: '52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m',
  },
  { type: 'DNAME', sub: 'dname', given: 'other.example.org', ovh: 'other.example.org.', canonical: 'other.example.org', rdata: 'other.example.org.' },
  { type: 'SPF', sub: 'spf', given: '"v=spf1 include:mx.ovh.com ~all"', ovh: 'v=spf1 include:mx.ovh.com ~all', canonical: 'v=spf1 include:mx.ovh.com ~all' },
  {
    type: 'DKIM',
    sub: 'sel._domainkey',
    given: 'v=DKIM1;k=rsa;p=MIGfMA0GCSqG',
    ovh: 'v=DKIM1;k=rsa;p=MIGfMA0GCSqG',
    canonical: 'v=DKIM1;k=rsa;p=MIGfMA0GCSqG',
  },
  {
    type: 'DMARC',
    sub: '_dmarc',
    given: 'v=DMARC1;p=none;rua=mailto:r@example.org;',
    ovh: 'v=DMARC1;p=none;rua=mailto:r@example.org;',
    canonical: 'v=DMARC1;p=none;rua=mailto:r@example.org;',
  },
];

const WIRE_CASES = CASES.filter((c) => c.rdata !== undefined);
const nameOf = (c: TypeCase) => `${c.sub}.${ZONE}`;
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `POST /domain/zone/${ZONE}/refresh`;

let h: Harness;
let token: string;
let key: TsigKey;
let port: number;
const keyring = memoryKeyring();

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' }] },
    // One message deletes 14 of the tenant's 17 sets: over the default change threshold, which is not what is tested here.
    env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_MAX_CHANGE_PERCENT: '100' },
    dnsKeyring: keyring,
  });
  port = h.server.dns!.port;
  const alice = await createTenant(h.server.ctx.pool, { name: 'alice', zones: [ZONE] });
  token = alice.token;
  key = keyring.add(alice.tenant, { algorithm: 'hmac-sha256' });
  await h.zoneClient(token).records({});
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

const posts = () =>
  h.sim
    .writes()
    .filter((c) => c.method === 'POST' && c.path === REC)
    .map((c) => c.body as { fieldType: string; subDomain: string; target: string })
    .map((b) => `${b.fieldType} ${b.subDomain} ${b.target}`)
    .sort();
const expectedPosts = (cases: readonly TypeCase[]) => cases.map((c) => `${c.type} ${c.sub} ${c.ovh}`).sort();
const calls = () => callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'));

async function resync(): Promise<void> {
  const ctx = h.server.ctx;
  await store.withZoneLock(ctx.pool, ZONE, { lockTimeoutMs: 10_000 }, (tx) => syncZone(ctx, ctx.ovh, tx, ZONE));
}

async function planChanges(endpoints: Parameters<typeof applyDesired>[1], policy = Policy.UPSERT_ONLY, zones: string[] = []): Promise<number> {
  const plan = await h.zoneClient(token).plan({ policy, input: { case: 'desired', value: { zones, endpoints } } });
  return plan.plan!.zones.reduce((n, z) => n + z.changes.length + z.operations.length + z.conflicts.length, 0);
}

describe('all 17 types through Connect and zone files', () => {
  it('one apply: 17 POSTs as OVH stores each type, one refresh; read back from OVH it plans no change', async () => {
    const given = CASES.map((c) => ep(nameOf(c), c.type, [c.given]));
    const res = await applyDesired(h.zoneClient(token), given);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(posts()).toEqual(expectedPosts(CASES));
    expect(calls().filter((l) => l !== `POST ${REC}`)).toEqual([REFRESH]);
    expect(
      h.sim
        .draftRecords(ZONE)
        .filter((r) => r.subDomain !== '')
        .map((r) => `${r.fieldType} ${r.subDomain} ${r.target}`)
        .sort(),
    ).toEqual(expectedPosts(CASES));

    await resync();
    const shown = (await h.zoneClient(token).records({ zones: [ZONE] })).zones[0]!.endpoints;
    for (const c of CASES) expect(shown.find((e) => e.dnsName === nameOf(c) && e.recordType === c.type)?.targets, c.type).toEqual([c.canonical]);
    h.sim.clearCalls();
    expect(await planChanges(given)).toBe(0);
    expect(calls()).toEqual([]);
  });

  it('zone export read back as a desired state (plan --zone-file) plans no change; zone at the same generation is the same file', async () => {
    const admin = h.adminClient(await h.tenant('root', [], { admin: true }));
    const exported = await admin.exportZone({ zone: ZONE });
    const file = exported.zoneFile;
    const body = (t: string) => t.split('\n').filter((l) => !l.startsWith('; '));
    expect(body((await admin.exportZone({ zone: ZONE, atGeneration: exported.generation })).zoneFile)).toEqual(body(file));
    for (const c of CASES) expect(file, c.type).toMatch(new RegExp(`^${c.sub.replace(/\./g, '\\.')}\\t\\d*\\tIN\\t${c.type}\\t`, 'm'));
    const desired = desiredFromZoneFile(file, 'export.zone');
    expect(await planChanges(desired.endpoints, Policy.SYNC, desired.zones)).toBe(0);
    expect(calls()).toEqual([]);
  });

  it("refuses each type's bad value, naming the field and the rule, with nothing sent", async () => {
    const bad: Array<[RecordType, string, string, RegExp]> = [
      ['PTR', 'p', '.', /a PTR target must be a host name/],
      ['NAPTR', 'n', '100 10 "S" "SIP+D2U" "!^.*$!sip:x@example.org!" _sip._udp.example.org.', /regexp or a replacement, not both/],
      ['NAPTR', 'n', '100 10 "S?" "SIP" "" .', /NAPTR flags are letters and digits/],
      ['TLSA', '_443._tcp.t', '3 1 1 abcd', /with matching type 1 \(SHA-256\) the TLSA data is 64 hex digits \(got 4\)/],
      ['TLSA', '_443._tcp.t', `4 1 1 ${HEX64}`, /TLSA certificate usage .* must be an integer from 0 to 3/],
      ['SSHFP', 's', `4 1 ${HEX64_2}`, /with fingerprint type 1 \(SHA-1\) the SSHFP fingerprint is 40 hex digits \(got 64\)/],
      ['SSHFP', 's', `7 2 ${HEX64_2}`, /SSHFP algorithm is 1 \(RSA\), 2 \(DSA\), 3 \(ECDSA\), 4 \(Ed25519\) or 6 \(Ed448\)/],
      ['LOC', 'l', '52 22 23 X 4 53 32 E -2m', /a LOC target is/],
      ['LOC', 'l', '52 22 23 N 4 53 32 E -2m 15m', /LOC size must be one digit times a power of ten/],
      ['DNAME', 'd', '.', /a DNAME target must be a host name/],
      ['SPF', 'f', 'include:x ~all', /begins with the version "v=spf1"/],
      ['DKIM', 'k._domainkey', 'v=DKIM1;k=rsa', /p= \(the public key\) is required/],
      ['DMARC', '_dmarc.x', 'v=DMARC1;p=none;adkim=r', /OVH's DMARC record takes the tags v, p, pct, rua, sp, aspf; "adkim"/],
      ['DMARC', 'dmarc', 'v=DMARC1;p=none', /a DMARC record's name begins with the label _dmarc/],
    ];
    for (const [type, sub, target, why] of bad) {
      const e = await expectRejected(applyDesired(h.zoneClient(token), [ep(`${sub}.${ZONE}`, type, [target])]), Code.InvalidArgument, why);
      expect(e.rawMessage, `${type} ${target}`).toMatch(/^desired\.endpoints\[0\]\.(targets\[0\]|dnsName): /);
    }
    expect(calls()).toEqual([]);
  });
});

describeWithTools(['nsupdate', 'dig'], 'all types through the DNS door, with BIND and dnspython', () => {
  const digKey = () => cliKey(key);
  async function nsu(lines: string[]): Promise<string> {
    const out = await nsupdate(digKey(), [`server 127.0.0.1 ${port}`, `zone ${ZONE}`, ...lines, 'send', ''].join('\n'), { tcp: true });
    if (out.code === 0) return 'NOERROR';
    // The journal says why (every refusal of the DNS door is journaled).
    const journal = await h.adminClient(await h.tenant(`admin${Date.now()}`, [], { admin: true })).listJournal({ zone: ZONE, limit: 1 });
    return `${out.stdout}${out.stderr}${journal.entries[0]?.summary ?? ''}`;
  }

  it('dig reads each type back (SPF, DKIM, DMARC as TXT); dig and dnspython read the AXFR', async () => {
    for (const c of CASES) {
      const wireType = c.rdata === undefined ? 'TXT' : c.type;
      // The answer section, or the authority section for the NS of a delegation (a referral).
      const out = await dig(port, ['+noall', '+answer', '+authority', '+norec', nameOf(c), wireType]);
      const prefix = new RegExp(`^${nameOf(c).replace(/\./g, '\\.')}\\.\\s+\\d+\\s+IN\\s+${wireType}\\s+`);
      const got = out.stdout.split('\n').filter((l) => prefix.test(l));
      expect(got.length, `${c.type}: ${out.stdout}`).toBe(1);
      expect(canonicalTarget(c.type, got[0]!.replace(prefix, ''), 'dig', { zone: ZONE }), c.type).toBe(c.canonical);
    }
    const axfr = await dig(port, ['+tcp', 'AXFR', ZONE], digKey());
    for (const c of CASES)
      expect(axfr.stdout, c.type).toMatch(new RegExp(`^${nameOf(c).replace(/\./g, '\\.')}\\.\\s+\\d+\\s+IN\\s+${c.rdata ? c.type : 'TXT'}\\s`, 'm'));

    const script = [
      'import sys, dns.query, dns.zone, dns.tsigkeyring, dns.tsig',
      `ring = dns.tsigkeyring.from_text({${JSON.stringify(digKey().name)}: ${JSON.stringify(digKey().secret)}})`,
      `z = dns.zone.from_xfr(dns.query.xfr("127.0.0.1", ${JSON.stringify(`${ZONE}.`)}, port=${port}, keyring=ring, keyname=${JSON.stringify(digKey().name)}, keyalgorithm=dns.tsig.HMAC_SHA256, relativize=False), relativize=False)`,
      'for name, node in z.nodes.items():',
      '  for rds in node.rdatasets:',
      '    for rd in rds:',
      '      print(name.to_text(omit_final_dot=True), dns.rdatatype.to_text(rds.rdtype), rd.to_text())',
    ].join('\n');
    const py = await run('/usr/bin/python3', ['-c', script]);
    expect(py.stderr).toBe('');
    const lines = py.stdout.trim().split('\n');
    for (const c of CASES) {
      const line = lines.find((l) => l.startsWith(`${nameOf(c)} ${c.rdata ? c.type : 'TXT'} `));
      expect(line, `dnspython: ${c.type}`).toBeDefined();
      const text = line!.slice(`${nameOf(c)} ${c.rdata ? c.type : 'TXT'} `.length);
      expect(canonicalTarget(c.type, text, 'dnspython', { zone: ZONE }), `dnspython: ${c.type}`).toBe(c.canonical);
    }
    expect(calls()).toEqual([]);
  });

  it('nsupdate deletes and adds each wire type: its wire form read and written, exact OVH calls', async () => {
    expect(await nsu(WIRE_CASES.map((c) => `update delete ${nameOf(c)} ${c.type}`))).toBe('NOERROR');
    expect(calls().sort()).toEqual([...WIRE_CASES.map(() => `DELETE ${REC}/ID`), REFRESH].sort());
    h.sim.clearCalls();
    expect(await nsu(WIRE_CASES.map((c) => `update add ${nameOf(c)} 300 ${c.type} ${c.rdata}`))).toBe('NOERROR');
    expect(posts()).toEqual(expectedPosts(WIRE_CASES));
    expect(calls().filter((l) => l !== `POST ${REC}`)).toEqual([REFRESH]);
  });

  it("a TXT at a DKIM's or DMARC's name is one set with it: held already, deleted by value, a new value one PUT", async () => {
    const dkim = CASES.find((c) => c.type === 'DKIM')!;
    const dmarc = CASES.find((c) => c.type === 'DMARC')!;
    expect(await nsu([`update add ${nameOf(dkim)} 300 TXT "${dkim.canonical}"`])).toBe('NOERROR');
    expect(calls()).toEqual([]);
    expect(await nsu([`update delete ${nameOf(dmarc)} TXT "${dmarc.canonical}"`, `update add ${nameOf(dmarc)} 300 TXT "v=DMARC1;p=reject"`])).toBe('NOERROR');
    expect(calls()).toEqual([`PUT ${REC}/ID`, REFRESH]);
    expect(
      h.sim
        .draftRecords(ZONE)
        .filter((r) => r.subDomain === '_dmarc')
        .map((r) => `${r.fieldType} ${r.target}`),
    ).toEqual(['DMARC v=DMARC1;p=reject']);
    h.sim.clearCalls();
    expect(await nsu([`update add ${nameOf(dkim)} 300 TXT "second value"`])).toBe('NOERROR');
    expect(posts()).toEqual([`TXT ${dkim.sub} second value`]);
    const both = await dig(port, ['+short', nameOf(dkim), 'TXT']);
    expect(both.stdout.trim().split('\n').sort()).toEqual(['"second value"', `"${dkim.canonical}"`]);
    h.sim.clearCalls();
    expect(await nsu([`update delete ${nameOf(dkim)} TXT`])).toBe('NOERROR');
    expect(calls().sort()).toEqual([`DELETE ${REC}/ID`, `DELETE ${REC}/ID`, REFRESH].sort());
    expect(h.sim.draftRecords(ZONE).filter((r) => r.subDomain === dkim.sub)).toEqual([]);
  });
});
