/**
 * OVH fidelity, end to end: every record type dnsplane manages goes through the real server, real
 * Postgres and the real OVH client to the simulator, and back:
 *
 *   create      exactly N POST …/record (bodies asserted) + 1 POST …/refresh
 *   read back   a full re-sync of the zone FROM OVH (list, one GET per record, SOA), so that what is
 *               compared is what OVH answers (TXT quoted and split, relative hosts…), not what we sent
 *   plan again  zero changes, zero operations; apply again: NO_CHANGES and zero calls
 *
 * plus the minimal-operation cases (2 of 3 targets replaced, add 1 + remove 2), OVH's TTL rules,
 * duplicates, underscores per type, the apex, IDN, and equivalent spellings that must not churn.
 */
import { Resolver } from 'node:dns/promises';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { syncZone } from '../../src/core/zones/zones.js';
import { ApplyStatus, ChangeAction, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'example.com';
const REL = 'rel.test'; // DNSPLANE_CNAME_RELATIVE_ZONES
const IDN = 'xn--bcher-kva.example'; // bücher.example
let h: Harness;
let alice: string;

const calls = (): string[] => callLines(h.sim);

function wire(fieldType: string, subDomain: string, target: string, ttl = 300) {
  return { fieldType, subDomain, target, ttl };
}

async function planDesired(endpoints: Endpoint[], policy = Policy.UPSERT_ONLY) {
  const res = await h.zoneClient(alice).plan({ policy, input: { case: 'desired', value: { zones: [], endpoints } } });
  return res.plan!;
}

/** Re-reads the whole zone from OVH into the cache (what a cold start does), under the zone lock. */
async function resync(zone: string): Promise<void> {
  const ctx = h.server.ctx;
  await store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: 10_000 }, (tx) => syncZone(ctx, ctx.ovh, tx, zone));
}

/** The record set as Records shows it: name, type, targets, TTL. */
async function shown(zone: string, dnsName: string, recordType: string) {
  const res = await h.zoneClient(alice).records({ zones: [zone], includeForeign: true });
  const e = res.zones[0]!.endpoints.find((x) => x.dnsName === dnsName && x.recordType === recordType);
  return e && { dnsName: e.dnsName, recordType: e.recordType, targets: [...e.targets], ttl: e.ttl };
}

function idOf(zone: string, subDomain: string, fieldType: string, target: string): string {
  const r = h.sim.draftRecords(zone).find((x) => x.subDomain === subDomain && x.fieldType === fieldType && x.target === target);
  if (!r) throw new Error(`no record ${subDomain} ${fieldType} ${target} in ${zone}`);
  return r.id;
}

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        // Made by hand in OVH, in spellings dnsplane would not use: they must read as the canonical form.
        { subDomain: 'v6manual', fieldType: 'AAAA', target: '2001:0DB8:0000:0000::0001', ttl: 600 },
        { subDomain: 'relmanual', fieldType: 'CNAME', target: 'www', ttl: 600 },
      ],
      [REL]: [{ subDomain: 'absmanual', fieldType: 'CNAME', target: `www.${REL}.`, ttl: 600 }],
      [IDN]: [],
    },
    env: { DNSPLANE_CNAME_RELATIVE_ZONES: REL },
  });
  alice = await h.tenant('alice', [ZONE, REL, 'bücher.example']);
  // The cold sync of each zone (asserted in zone-service.test.ts) happens here, not in the tests.
  await h.zoneClient(alice).records({});
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

interface RoundTrip {
  zone: string;
  /** What the client sends (possibly in a non-canonical spelling). */
  given: Endpoint;
  /** The exact POST bodies, in the order sent. */
  wire: ReturnType<typeof wire>[];
  /** What Records shows, after the apply and after reading the zone back from OVH. */
  shown: { dnsName: string; recordType: string; targets: string[]; ttl: number };
}

const LONG_TXT = Array.from({ length: 400 }, (_, i) => 'abcdefghijklmnopqrstuvwxyz0123456789=;-'[i % 39]).join('');

// 300 characters; a quote lands on each side of the 255-character split, and one inside each piece.
const QUOTED_LONG_TXT = `${'q'.repeat(200)} he said "hi" ${'r'.repeat(37)}"${'s'.repeat(30)} a "quoted" word ${'t'.repeat(12)}`;
// 403 characters whose own `" "` makes OVH's answer look like three well-formed pieces.
const SPLIT_LOOKALIKE_TXT = `${'a'.repeat(100)}" "${'b'.repeat(300)}`;

const roundTrips: Array<[string, RoundTrip]> = [
  [
    'A, two targets',
    {
      zone: ZONE,
      given: ep(`A.${ZONE}.`, 'a', ['192.0.2.11', '192.0.2.10']),
      wire: [wire('A', 'a', '192.0.2.10'), wire('A', 'a', '192.0.2.11')],
      shown: { dnsName: `a.${ZONE}`, recordType: 'A', targets: ['192.0.2.10', '192.0.2.11'], ttl: 300 },
    },
  ],
  [
    'A at the apex (subDomain "")',
    {
      zone: ZONE,
      given: ep(ZONE, 'A', ['192.0.2.1']),
      wire: [wire('A', '', '192.0.2.1')],
      shown: { dnsName: ZONE, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 },
    },
  ],
  [
    'A on a wildcard',
    {
      zone: ZONE,
      given: ep(`*.wild.${ZONE}`, 'A', ['192.0.2.2']),
      wire: [wire('A', '*.wild', '192.0.2.2')],
      shown: { dnsName: `*.wild.${ZONE}`, recordType: 'A', targets: ['192.0.2.2'], ttl: 300 },
    },
  ],
  [
    'A with TTL 0 (the zone default)',
    {
      zone: ZONE,
      given: ep(`zero.${ZONE}`, 'A', ['192.0.2.20'], 0),
      wire: [wire('A', 'zero', '192.0.2.20', 0)],
      shown: { dnsName: `zero.${ZONE}`, recordType: 'A', targets: ['192.0.2.20'], ttl: 0 },
    },
  ],
  [
    'AAAA, sent and compared in canonical form',
    {
      zone: ZONE,
      given: ep(`v6.${ZONE}`, 'AAAA', ['2001:DB8:0:0:0:0:0:1', '2001:db8:0:0:a:0:0:2', '2001:db8::1']),
      wire: [wire('AAAA', 'v6', '2001:db8::1'), wire('AAAA', 'v6', '2001:db8::a:0:0:2')],
      shown: { dnsName: `v6.${ZONE}`, recordType: 'AAAA', targets: ['2001:db8::1', '2001:db8::a:0:0:2'], ttl: 300 },
    },
  ],
  [
    'CNAME in the zone, absolute by default',
    {
      zone: ZONE,
      given: ep(`alias.${ZONE}`, 'CNAME', [`WWW.${ZONE}`]),
      wire: [wire('CNAME', 'alias', `www.${ZONE}.`)],
      shown: { dnsName: `alias.${ZONE}`, recordType: 'CNAME', targets: [`www.${ZONE}`], ttl: 300 },
    },
  ],
  [
    'CNAME out of the zone',
    {
      zone: ZONE,
      given: ep(`ext.${ZONE}`, 'CNAME', ['target.example.net.']),
      wire: [wire('CNAME', 'ext', 'target.example.net.')],
      shown: { dnsName: `ext.${ZONE}`, recordType: 'CNAME', targets: ['target.example.net'], ttl: 300 },
    },
  ],
  [
    'CNAME in a zone configured relative: sent relative',
    {
      zone: REL,
      given: ep(`alias.${REL}`, 'CNAME', [`www.${REL}`]),
      wire: [wire('CNAME', 'alias', 'www')],
      shown: { dnsName: `alias.${REL}`, recordType: 'CNAME', targets: [`www.${REL}`], ttl: 300 },
    },
  ],
  [
    'CNAME out of a zone configured relative: still absolute',
    {
      zone: REL,
      given: ep(`ext.${REL}`, 'CNAME', ['cdn.example.net']),
      wire: [wire('CNAME', 'ext', 'cdn.example.net.')],
      shown: { dnsName: `ext.${REL}`, recordType: 'CNAME', targets: ['cdn.example.net'], ttl: 300 },
    },
  ],
  [
    'TXT: sent unquoted, read back quoted, compared unquoted',
    {
      zone: ZONE,
      given: ep(`txt.${ZONE}`, 'TXT', ['"v=spf1 -all"', 'hello world', 'say "hi"']),
      wire: [wire('TXT', 'txt', 'hello world'), wire('TXT', 'txt', 'say "hi"'), wire('TXT', 'txt', 'v=spf1 -all')],
      shown: { dnsName: `txt.${ZONE}`, recordType: 'TXT', targets: ['hello world', 'say "hi"', 'v=spf1 -all'], ttl: 300 },
    },
  ],
  [
    'TXT of 400 characters: split by OVH, joined back',
    {
      zone: ZONE,
      given: ep(`long.${ZONE}`, 'TXT', [LONG_TXT]),
      wire: [wire('TXT', 'long', LONG_TXT)],
      shown: { dnsName: `long.${ZONE}`, recordType: 'TXT', targets: [LONG_TXT], ttl: 300 },
    },
  ],
  [
    'TXT over 255 characters with quotes inside (OVH splits it without escaping them)',
    {
      zone: ZONE,
      given: ep(`quoted.${ZONE}`, 'TXT', [QUOTED_LONG_TXT, SPLIT_LOOKALIKE_TXT]),
      wire: [wire('TXT', 'quoted', SPLIT_LOOKALIKE_TXT), wire('TXT', 'quoted', QUOTED_LONG_TXT)],
      shown: { dnsName: `quoted.${ZONE}`, recordType: 'TXT', targets: [SPLIT_LOOKALIKE_TXT, QUOTED_LONG_TXT], ttl: 300 },
    },
  ],
  [
    'TXT on an underscore name',
    {
      zone: ZONE,
      given: ep(`_acme-challenge.${ZONE}`, 'TXT', ['tok3n-value']),
      wire: [wire('TXT', '_acme-challenge', 'tok3n-value')],
      shown: { dnsName: `_acme-challenge.${ZONE}`, recordType: 'TXT', targets: ['tok3n-value'], ttl: 300 },
    },
  ],
  [
    'MX at the apex, hosts made absolute',
    {
      zone: ZONE,
      given: ep(ZONE, 'MX', ['20 mx2.example.net.', '10   MX1.example.com']),
      wire: [wire('MX', '', `10 mx1.${ZONE}.`), wire('MX', '', '20 mx2.example.net.')],
      shown: { dnsName: ZONE, recordType: 'MX', targets: [`10 mx1.${ZONE}`, '20 mx2.example.net'], ttl: 300 },
    },
  ],
  [
    'SRV on an underscore name',
    {
      zone: ZONE,
      given: ep(`_sip._tcp.${ZONE}`, 'SRV', ['10 60 5060 sip.example.com', '20 0 5060 backup.example.net.']),
      wire: [wire('SRV', '_sip._tcp', `10 60 5060 sip.${ZONE}.`), wire('SRV', '_sip._tcp', '20 0 5060 backup.example.net.')],
      shown: { dnsName: `_sip._tcp.${ZONE}`, recordType: 'SRV', targets: [`10 60 5060 sip.${ZONE}`, '20 0 5060 backup.example.net'], ttl: 300 },
    },
  ],
  [
    'CAA at the apex, value quoted',
    {
      zone: ZONE,
      given: ep(ZONE, 'CAA', ['0 issue letsencrypt.org', '128 IODEF "mailto:sec@example.com"']),
      wire: [wire('CAA', '', '0 issue "letsencrypt.org"'), wire('CAA', '', '128 iodef "mailto:sec@example.com"')],
      shown: { dnsName: ZONE, recordType: 'CAA', targets: ['0 issue "letsencrypt.org"', '128 iodef "mailto:sec@example.com"'], ttl: 300 },
    },
  ],
  [
    'NS below the apex (a delegation)',
    {
      zone: ZONE,
      given: ep(`sub.${ZONE}`, 'NS', ['ns2.delegated.example.net', 'ns1.delegated.example.net.']),
      wire: [wire('NS', 'sub', 'ns1.delegated.example.net.'), wire('NS', 'sub', 'ns2.delegated.example.net.')],
      shown: { dnsName: `sub.${ZONE}`, recordType: 'NS', targets: ['ns1.delegated.example.net', 'ns2.delegated.example.net'], ttl: 300 },
    },
  ],
  [
    'IDN: a Unicode name in a Unicode zone is written in punycode',
    {
      zone: IDN,
      given: ep('Wörter.bücher.example', 'A', ['192.0.2.30']),
      wire: [wire('A', 'xn--wrter-jua', '192.0.2.30')],
      shown: { dnsName: `xn--wrter-jua.${IDN}`, recordType: 'A', targets: ['192.0.2.30'], ttl: 300 },
    },
  ],
  [
    'IDN: a Unicode CNAME target is written in punycode',
    {
      zone: IDN,
      given: ep('menü.bücher.example', 'CNAME', ['café.example.com']),
      wire: [wire('CNAME', 'xn--men-joa', 'xn--caf-dma.example.com.')],
      shown: { dnsName: `xn--men-joa.${IDN}`, recordType: 'CNAME', targets: ['xn--caf-dma.example.com'], ttl: 300 },
    },
  ],
];

describe('every type: create, read back from OVH, plan again -> no change', () => {
  it.each(roundTrips)('%s', async (_title, c) => {
    // create: one POST per target, one refresh
    const applied = await applyDesired(h.zoneClient(alice), [c.given]);
    expect(applied.zones.map((z) => [z.zone, ApplyStatus[z.status]])).toEqual([[c.zone, 'APPLIED']]);
    expect(calls()).toEqual([...c.wire.map(() => `POST /domain/zone/${c.zone}/record`), `POST /domain/zone/${c.zone}/refresh`]);
    expect(h.sim.writes().map((w) => w.body)).toEqual([...c.wire, undefined]);
    expect(await shown(c.zone, c.shown.dnsName, c.shown.recordType)).toEqual(c.shown);

    // read back what OVH holds: a full re-sync (list, one GET per record, SOA)
    h.sim.clearCalls();
    await resync(c.zone);
    const ids = h.sim.draftRecords(c.zone).map((r) => r.id);
    expect(calls().sort()).toEqual(
      [`GET /domain/zone/${c.zone}/record`, ...ids.map((id) => `GET /domain/zone/${c.zone}/record/${id}`), `GET /domain/zone/${c.zone}/soa`].sort(),
    );
    expect(await shown(c.zone, c.shown.dnsName, c.shown.recordType)).toEqual(c.shown);

    // plan again: nothing; apply again: nothing sent
    h.sim.clearCalls();
    const again = await planDesired([c.given]);
    expect(again.zones.map((z) => ({ zone: z.zone, changes: z.changes.length, operations: z.operations.length, conflicts: z.conflicts.length }))).toEqual([
      { zone: c.zone, changes: 0, operations: 0, conflicts: 0 },
    ]);
    const reapplied = await applyDesired(h.zoneClient(alice), [c.given]);
    expect(ApplyStatus[reapplied.zones[0]!.status]).toBe('NO_CHANGES');
    expect(calls()).toEqual([]);
  });

  it('the DNS server serves what was written (A, AAAA, 400-char TXT in two strings, MX, SRV, CAA)', async () => {
    const r = new Resolver();
    r.setServers([`127.0.0.1:${h.sim.dnsPort}`]);
    expect((await r.resolve4(`a.${ZONE}`)).sort()).toEqual(['192.0.2.10', '192.0.2.11']);
    expect((await r.resolve6(`v6.${ZONE}`)).sort()).toEqual(['2001:db8::1', '2001:db8::a:0:0:2']);
    const long = await r.resolveTxt(`long.${ZONE}`);
    expect(long.map((strings) => strings.map((s) => s.length))).toEqual([[255, 145]]);
    expect(long[0]!.join('')).toBe(LONG_TXT);
    expect((await r.resolveMx(ZONE)).sort((a, b) => a.priority - b.priority)).toEqual([
      { priority: 10, exchange: `mx1.${ZONE}` },
      { priority: 20, exchange: 'mx2.example.net' },
    ]);
    expect(await r.resolveSrv(`_sip._tcp.${ZONE}`)).toContainEqual({ priority: 10, weight: 60, port: 5060, name: `sip.${ZONE}` });
    expect((await r.resolveCaa(ZONE)).map((c) => c.issue ?? c.iodef).sort()).toEqual(['letsencrypt.org', 'mailto:sec@example.com']);
    expect(calls()).toEqual([]);
  });

  it('IDN names are shown both ways: ASCII dns_name, Unicode in a label and in the zone list', async () => {
    const rec = await h.zoneClient(alice).records({ zones: ['bücher.example'] });
    expect(rec.zones[0]!.zone).toBe(IDN);
    const byName = Object.fromEntries(rec.zones[0]!.endpoints.map((e) => [e.dnsName, e.labels['unicode_name']]));
    expect(byName).toEqual({ [`xn--wrter-jua.${IDN}`]: 'wörter.bücher.example', [`xn--men-joa.${IDN}`]: 'menü.bücher.example' });
    const zones = await h.zoneClient(alice).listZones({});
    expect(zones.zones.find((z) => z.name === IDN)?.unicodeName).toBe('bücher.example');
    const ascii = (await h.zoneClient(alice).records({ zones: [ZONE] })).zones[0]!.endpoints.find((e) => e.dnsName === `a.${ZONE}`);
    expect(ascii!.labels).toEqual({ owner: 'alice' }); // no unicode label on plain ASCII names
    expect(calls()).toEqual([]);
  });

  it('spellings OVH holds that are not canonical plan as no change (AAAA, relative and absolute CNAMEs)', async () => {
    const plan = await planDesired([
      ep(`v6manual.${ZONE}`, 'AAAA', ['2001:db8::1'], 600),
      ep(`relmanual.${ZONE}`, 'CNAME', [`www.${ZONE}`], 600),
      ep(`absmanual.${REL}`, 'CNAME', [`www.${REL}`], 600),
    ]);
    for (const z of plan.zones)
      expect({ zone: z.zone, changes: z.changes.length, conflicts: z.conflicts.length, operations: z.operations.length }).toEqual({
        zone: z.zone,
        changes: 0,
        conflicts: 0,
        operations: 0,
      });
    expect(await shown(ZONE, `v6manual.${ZONE}`, 'AAAA')).toEqual({ dnsName: `v6manual.${ZONE}`, recordType: 'AAAA', targets: ['2001:db8::1'], ttl: 600 });
    expect(calls()).toEqual([]);
  });
});

describe('minimal operations', () => {
  it('replacing 2 of 3 targets is 2 PUTs (record ids reused) + 1 refresh', async () => {
    await applyDesired(h.zoneClient(alice), [ep(`three.${ZONE}`, 'A', ['192.0.2.51', '192.0.2.52', '192.0.2.53'])]);
    const id52 = idOf(ZONE, 'three', 'A', '192.0.2.52');
    const id53 = idOf(ZONE, 'three', 'A', '192.0.2.53');
    h.sim.clearCalls();
    const res = await applyDesired(h.zoneClient(alice), [ep(`three.${ZONE}`, 'A', ['192.0.2.51', '192.0.2.58', '192.0.2.59'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${id52}`, `PUT /domain/zone/${ZONE}/record/${id53}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes().map((w) => w.body)).toEqual([{ target: '192.0.2.58', ttl: 300 }, { target: '192.0.2.59', ttl: 300 }, undefined]);
    expect(
      h.sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'three')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['192.0.2.51', '192.0.2.58', '192.0.2.59']);
  });

  it('adding 1 and removing 2 is 1 DELETE + 1 PUT + 1 refresh', async () => {
    await applyDesired(h.zoneClient(alice), [ep(`mix.${ZONE}`, 'A', ['192.0.2.61', '192.0.2.62', '192.0.2.63'])]);
    const id62 = idOf(ZONE, 'mix', 'A', '192.0.2.62');
    const id63 = idOf(ZONE, 'mix', 'A', '192.0.2.63');
    h.sim.clearCalls();
    await applyDesired(h.zoneClient(alice), [ep(`mix.${ZONE}`, 'A', ['192.0.2.61', '192.0.2.64'])]);
    expect(calls()).toEqual([`DELETE /domain/zone/${ZONE}/record/${id63}`, `PUT /domain/zone/${ZONE}/record/${id62}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[1]!.body).toEqual({ target: '192.0.2.64', ttl: 300 });
    expect(
      h.sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'mix')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['192.0.2.61', '192.0.2.64']);
  });

  it('a TTL change alone is one PUT per record, no DELETE, no POST', async () => {
    const ids = ['192.0.2.61', '192.0.2.64'].map((t) => idOf(ZONE, 'mix', 'A', t));
    await applyDesired(h.zoneClient(alice), [ep(`mix.${ZONE}`, 'A', ['192.0.2.61', '192.0.2.64'], 900)]);
    expect(calls()).toEqual([...ids.map((id) => `PUT /domain/zone/${ZONE}/record/${id}`), `POST /domain/zone/${ZONE}/refresh`]);
  });
});

describe("OVH's rules", () => {
  it('a TTL of 1-59 is warned in the plan, sent as 60, and does not plan again once OVH holds 60', async () => {
    const plan = await planDesired([ep(`short.${ZONE}`, 'A', ['192.0.2.70'], 30)]);
    const change = plan.zones[0]!.changes[0]!;
    expect(ChangeAction[change.action]).toBe('CREATE');
    expect(change.after!.ttl).toBe(60);
    expect(change.warnings).toEqual([`short.${ZONE} A: TTL 30 raised to OVH's minimum of 60`]);
    expect(plan.zones[0]!.operations.map((o) => [o.method, o.body])).toEqual([
      ['POST', JSON.stringify(wire('A', 'short', '192.0.2.70', 60))],
      ['POST', ''],
    ]);
    await h.zoneClient(alice).apply({ source: { case: 'planId', value: plan.id } });
    expect(h.sim.writes().map((w) => w.body)).toEqual([wire('A', 'short', '192.0.2.70', 60), undefined]);

    await resync(ZONE);
    h.sim.clearCalls();
    const again = await planDesired([ep(`short.${ZONE}`, 'A', ['192.0.2.70'], 30)]);
    expect(again.zones[0]!.changes).toEqual([]);
    expect(again.zones[0]!.operations).toEqual([]);
    const reapplied = await applyDesired(h.zoneClient(alice), [ep(`short.${ZONE}`, 'A', ['192.0.2.70'], 30)]);
    expect(ApplyStatus[reapplied.zones[0]!.status]).toBe('NO_CHANGES');
    expect(calls()).toEqual([]);
  });

  it('duplicates in OVH are seen as one target, left alone while the set is unchanged, cleaned when the owner changes it', async () => {
    await applyDesired(h.zoneClient(alice), [ep(`dup.${ZONE}`, 'A', ['192.0.2.80'])]);
    const original = idOf(ZONE, 'dup', 'A', '192.0.2.80');
    // Someone adds the same record again by hand in OVH; dnsplane reads the zone again.
    const copy = h.sim.addRecord(ZONE, { subDomain: 'dup', fieldType: 'A', target: '192.0.2.80', ttl: 300 });
    h.sim.publish(ZONE);
    await resync(ZONE);
    expect(await shown(ZONE, `dup.${ZONE}`, 'A')).toEqual({ dnsName: `dup.${ZONE}`, recordType: 'A', targets: ['192.0.2.80'], ttl: 300 });

    // Unchanged desired state: nothing planned, nothing sent, the copy stays.
    h.sim.clearCalls();
    const same = await applyDesired(h.zoneClient(alice), [ep(`dup.${ZONE}`, 'A', ['192.0.2.80'])]);
    expect(ApplyStatus[same.zones[0]!.status]).toBe('NO_CHANGES');
    expect(calls()).toEqual([]);

    // The owner adds a target: the copy is reused for it (one PUT), no POST, no duplicate left.
    const res = await applyDesired(h.zoneClient(alice), [ep(`dup.${ZONE}`, 'A', ['192.0.2.80', '192.0.2.81'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    const reused = [original, copy.id].sort()[1]!; // ovh/ops keeps the lower id, reuses the other
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${reused}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(
      h.sim
        .draftRecords(ZONE)
        .filter((r) => r.subDomain === 'dup')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['192.0.2.80', '192.0.2.81']);
  });

  it('a lost answer to the POST of a long TXT with quotes inside: found by its target, not created twice', async () => {
    const value = `${'u'.repeat(254)}"v" ${'w'.repeat(60)}`; // OVH's split falls inside the quoted part
    h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/record`, times: 1, effect: { kind: 'applyThenDrop' } });
    const res = await applyDesired(h.zoneClient(alice), [ep(`lost.${ZONE}`, 'TXT', [value])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    const created = h.sim.draftRecords(ZONE).filter((r) => r.subDomain === 'lost');
    expect(created.map((r) => r.target)).toEqual([value]);
    expect(calls()).toEqual([
      `POST /domain/zone/${ZONE}/record`,
      `GET /domain/zone/${ZONE}/record`,
      `GET /domain/zone/${ZONE}/record/${created[0]!.id}`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    expect(h.sim.calls().find((c) => c.method === 'GET' && c.path === `/domain/zone/${ZONE}/record`)!.query).toEqual({ fieldType: 'TXT', subDomain: 'lost' });
  });

  it('duplicates of records nobody owns are never touched', async () => {
    h.sim.addRecord(ZONE, { subDomain: 'handmade', fieldType: 'TXT', target: 'x', ttl: 0 });
    h.sim.addRecord(ZONE, { subDomain: 'handmade', fieldType: 'TXT', target: 'x', ttl: 0 });
    h.sim.publish(ZONE);
    await resync(ZONE);
    h.sim.clearCalls();
    const res = await applyDesired(h.zoneClient(alice), [ep(`handmade.${ZONE}`, 'TXT', ['y'], 0)]);
    expect(res.zones[0]!.conflicts.map((c) => c.reason)).toEqual([expect.stringMatching(/without an owner/)]);
    expect(calls()).toEqual([]);
  });

  it.each([
    ['A', ep(`_svc.${ZONE}`, 'A', ['192.0.2.1'])],
    ['AAAA', ep(`_svc.${ZONE}`, 'AAAA', ['2001:db8::1'])],
    ['CNAME', ep(`_svc.${ZONE}`, 'CNAME', [`www.${ZONE}`])],
    ['MX (dnsplane allows "_" only in TXT and SRV names)', ep(`_svc.${ZONE}`, 'MX', [`10 mx.${ZONE}`])],
  ])('an underscore in a %s name is InvalidArgument, nothing sent', async (_t, e) => {
    await expectRejected(applyDesired(h.zoneClient(alice), [e]), Code.InvalidArgument, /endpoints\[0\]\.dnsName.*underscore/i);
    expect(calls()).toEqual([]);
  });

  it('DNSPLANE_CNAME_RELATIVE_ZONES is a comma list of zones, normalized (case, trailing dot, Unicode)', () => {
    const base = { OVH_APPLICATION_KEY: 'k', OVH_APPLICATION_SECRET: 's', OVH_CONSUMER_KEY: 'c' };
    expect(loadConfig(base).cnameRelativeZones).toEqual([]);
    expect(loadConfig({ ...base, DNSPLANE_CNAME_RELATIVE_ZONES: ' Rel.Test. , bücher.example,' }).cnameRelativeZones).toEqual([REL, IDN]);
    expect(() => loadConfig({ ...base, DNSPLANE_CNAME_RELATIVE_ZONES: 'a..b' })).toThrow(/DNSPLANE_CNAME_RELATIVE_ZONES\[0\]/);
  });

  it('a CNAME target may carry underscores (e.g. DKIM delegation)', async () => {
    await applyDesired(h.zoneClient(alice), [ep(`dkim.${ZONE}`, 'CNAME', ['s1._domainkey.mail.example.net'])]);
    expect(h.sim.writes()[0]!.body).toEqual(wire('CNAME', 'dkim', 's1._domainkey.mail.example.net.'));
  });
});
