/**
 * The DNS door's queries and zone transfers, end to end: a real server (Postgres, the OVH simulator over
 * HTTPS) with DNSPLANE_DNS_LISTEN on port 0, asked by BIND's dig (which checks every TSIG of every
 * answer) and by our own client for what dig cannot send. Transfers cost zero OVH calls.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import { soaSerial } from '../../src/core/dns-door/dns-zone.js';
import { RCODE, TSIG_ERROR, TYPE } from '../../src/dns/wire/index.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines, ep } from '../helpers/expect.js';
import { cliKey, memoryKeyring } from '../helpers/dns-keys.js';
import { describeWithTools, dig, digStatus } from '../helpers/dns-tools.js';
import { query, tcpExchange, udpExchange } from '../helpers/dns-client.js';
import { Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';

const ZONE = 'example.test';
const keyring = memoryKeyring();
let h: Harness;
let port: number;
let alice: { tenant: Tenant; token: string };
let aliceKey: TsigKey;
let bobKey: TsigKey;
let acmeKey: TsigKey;

const LONG_TXT = Array.from({ length: 12 }, (_, i) => `v=spf-like-value-${i}-${'x'.repeat(40)}`);

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        { subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' },
        { subDomain: '', fieldType: 'NS', target: 'ns1.sim.test.' },
        { subDomain: '', fieldType: 'MX', target: '10 mail.example.test.', ttl: 300 },
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 },
        { subDomain: 'www', fieldType: 'AAAA', target: '2001:db8::1', ttl: 300 },
        { subDomain: 'alias', fieldType: 'CNAME', target: 'www', ttl: 300 },
        { subDomain: '_sip._tcp', fieldType: 'SRV', target: '0 100 5060 sip.example.test.', ttl: 300 },
        { subDomain: '', fieldType: 'CAA', target: '0 issue "letsencrypt.org"', ttl: 300 },
        { subDomain: '*.wild', fieldType: 'A', target: '192.0.2.9', ttl: 300 },
        ...LONG_TXT.map((t) => ({ subDomain: 'big', fieldType: 'TXT', target: t, ttl: 300 })),
      ],
      'other.test': [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.50' }],
    },
    env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_DNS_RATE: '10000' },
    dnsKeyring: keyring,
  });
  port = h.server.dns!.port;
  alice = await createTenant(h.server.ctx.pool, { name: 'alice', zones: [ZONE] });
  const bob = await createTenant(h.server.ctx.pool, { name: 'bob', zones: ['other.test'] });
  aliceKey = keyring.add(alice.tenant, { algorithm: 'hmac-sha256' });
  bobKey = keyring.add(bob.tenant, { algorithm: 'hmac-sha512' });
  acmeKey = keyring.add(alice.tenant, { algorithm: 'hmac-sha1', acmeOnly: true });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

async function generation(): Promise<bigint> {
  return (await h.zoneClient(alice.token).records({ zones: [ZONE] })).zones[0]!.generation;
}

describe('queries', () => {
  it('answers the SOA of a managed zone, authoritative, with the generation as its serial', async () => {
    const a = await udpExchange(port, query(ZONE, TYPE.SOA));
    const m = a!.parsed.message;
    expect(m.header).toMatchObject({ rcode: RCODE.NOERROR, aa: true, qr: true });
    const soa = m.answers[0]!.data;
    expect(soa).toMatchObject({ kind: 'SOA', mname: 'dns1.sim.test', rname: `hostmaster.${ZONE}`, serial: soaSerial(await generation()) });
  });

  it('answers the SOA with its answer section from memory while the database holds the zone list locked (issue 43)', async () => {
    const serial = soaSerial(await generation());
    expect((await udpExchange(port, query(ZONE, TYPE.SOA)))!.parsed.message.answers).toHaveLength(1);
    // Another session takes the zones table: every fresh read of the generations waits for it.
    const holder = await h.server.ctx.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE zones IN ACCESS EXCLUSIVE MODE');
      const a = await udpExchange(port, query(ZONE, TYPE.SOA), 10_000);
      const m = a!.parsed.message;
      expect(m.header).toMatchObject({ rcode: RCODE.NOERROR, aa: true, qr: true });
      expect(m.answers.map((r) => r.data)).toEqual([expect.objectContaining({ kind: 'SOA', mname: 'dns1.sim.test', serial })]);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('answers names inside a zone from the cache; NXDOMAIN and NODATA carry the SOA (zone detection)', async () => {
    const www = (await udpExchange(port, query(`www.${ZONE}`, TYPE.A)))!.parsed.message;
    expect(www.header).toMatchObject({ rcode: RCODE.NOERROR, aa: true });
    expect(www.answers.map((r) => r.data)).toEqual([{ kind: 'A', address: '192.0.2.1' }]);

    const challenge = (await udpExchange(port, query(`_acme-challenge.${ZONE}`, TYPE.SOA)))!.parsed.message;
    expect(challenge.header).toMatchObject({ rcode: RCODE.NXDOMAIN, aa: true });
    expect(challenge.authorities[0]).toMatchObject({ type: TYPE.SOA, name: ZONE, ttl: 60 });

    const nodata = (await udpExchange(port, query(`www.${ZONE}`, TYPE.TXT)))!.parsed.message;
    expect(nodata.header.rcode).toBe(RCODE.NOERROR);
    expect(nodata.answers).toEqual([]);
    expect(nodata.authorities[0]?.type).toBe(TYPE.SOA);

    const alias = (await udpExchange(port, query(`alias.${ZONE}`, TYPE.A)))!.parsed.message;
    expect(alias.answers.map((r) => [r.name, r.type])).toEqual([
      [`alias.${ZONE}`, TYPE.CNAME],
      [`www.${ZONE}`, TYPE.A],
    ]);
    const wild = (await udpExchange(port, query(`x.wild.${ZONE}`, TYPE.A)))!.parsed.message;
    expect(wild.answers.map((r) => [r.name, r.data])).toEqual([[`x.wild.${ZONE}`, { kind: 'A', address: '192.0.2.9' }]]);
    expect(callLines(h.sim)).toEqual([]);
  });

  it('refuses names outside the managed zones, and classes other than IN', async () => {
    expect((await udpExchange(port, query('example.com', TYPE.A)))!.parsed.message.header).toMatchObject({ rcode: RCODE.REFUSED, aa: false });
    expect((await udpExchange(port, query('test', TYPE.SOA)))!.parsed.message.header.rcode).toBe(RCODE.REFUSED);
  });

  it('is no amplifier: ANY over UDP is empty with TC, a large unsigned answer over UDP is truncated', async () => {
    const any = (await udpExchange(port, query(ZONE, TYPE.ANY)))!;
    expect(any.parsed.message.header).toMatchObject({ tc: true, rcode: RCODE.NOERROR });
    expect(any.bytes.length).toBeLessThan(100);
    const anyTcp = (await tcpExchange(port, query(ZONE, TYPE.ANY)))[0]!.parsed.message;
    expect(new Set(anyTcp.answers.map((r) => r.type))).toEqual(new Set([TYPE.SOA, TYPE.NS, TYPE.MX, TYPE.CAA]));

    const big = (await udpExchange(port, query(`big.${ZONE}`, TYPE.TXT)))!;
    expect(big.bytes.length).toBeLessThanOrEqual(512);
    expect(big.parsed.message.header.tc).toBe(true);
    const bigTcp = (await tcpExchange(port, query(`big.${ZONE}`, TYPE.TXT)))[0]!.parsed.message;
    expect(bigTcp.answers).toHaveLength(LONG_TXT.length);
  });

  it('signs every answer to a signed query, and answers key errors as RFC 8945 says', async () => {
    const signed = (await tcpExchange(port, query(ZONE, TYPE.SOA, { key: aliceKey })))[0]!;
    expect(signed.parsed.tsig?.record.data).toMatchObject({ error: 0 });
    expect(keyring.used).toContain(aliceKey.name);

    const unknown = (await udpExchange(port, query(ZONE, TYPE.SOA, { key: { ...aliceKey, name: 'nobody.keys.dnsplane' } })))!.parsed;
    expect(unknown.message.header.rcode).toBe(RCODE.NOTAUTH);
    expect(unknown.tsig?.record.data).toMatchObject({ error: TSIG_ERROR.BADKEY, mac: Buffer.alloc(0) });

    const wrongSecret = (await udpExchange(port, query(ZONE, TYPE.SOA, { key: { ...aliceKey, secret: Buffer.alloc(32, 1) } })))!.parsed;
    expect(wrongSecret.message.header.rcode).toBe(RCODE.NOTAUTH);
    expect(wrongSecret.tsig?.record.data).toMatchObject({ error: TSIG_ERROR.BADSIG, mac: Buffer.alloc(0) });

    const wrongAlgorithm = (await udpExchange(port, query(ZONE, TYPE.SOA, { key: { ...aliceKey, algorithm: 'hmac-sha1' } })))!.parsed;
    expect(wrongAlgorithm.tsig?.record.data.error).toBe(TSIG_ERROR.BADKEY);

    const sent = Math.floor(Date.now() / 1000) - 1000;
    const stale = (await udpExchange(port, query(ZONE, TYPE.SOA, { key: aliceKey, timeSigned: sent })))!.parsed;
    expect(stale.message.header.rcode).toBe(RCODE.NOTAUTH);
    const t = stale.tsig!.record.data;
    expect(t).toMatchObject({ error: TSIG_ERROR.BADTIME, timeSigned: sent });
    expect(t.mac.length).toBe(32);
    expect(Math.abs(t.otherData.readUIntBE(0, 6) - Math.floor(Date.now() / 1000))).toBeLessThan(60);
  });

  it('moves the SOA serial with every apply', async () => {
    const before = (await udpExchange(port, query(ZONE, TYPE.SOA)))!.parsed.message.answers[0]!.data;
    await h.zoneClient(alice.token).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`new.${ZONE}`, 'A', ['192.0.2.77'])] } } },
      },
    });
    const after = (await udpExchange(port, query(ZONE, TYPE.SOA)))!.parsed.message.answers[0]!.data;
    expect(after?.kind === 'SOA' && before?.kind === 'SOA' && after.serial).toBe(before?.kind === 'SOA' ? before.serial + 1 : -1);
    const fresh = (await udpExchange(port, query(`new.${ZONE}`, TYPE.A)))!.parsed.message;
    expect(fresh.answers.map((r) => r.data)).toEqual([{ kind: 'A', address: '192.0.2.77' }]);
  });
});

describe('zone transfers', () => {
  it('AXFR: SOA first and last, every record set Records serves, signed message by message, no OVH call', async () => {
    const answers = await tcpExchange(port, query(ZONE, TYPE.AXFR, { key: aliceKey }), { transfer: true });
    const rrs = answers.flatMap((a) => a.parsed.message.answers);
    expect(rrs[0]?.type).toBe(TYPE.SOA);
    expect(rrs.at(-1)?.type).toBe(TYPE.SOA);
    expect(answers.every((a) => a.parsed.tsig !== undefined)).toBe(true);
    const records = (await h.zoneClient(alice.token).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints;
    const fromRecords = records.flatMap((e) => e.targets.map(() => `${e.dnsName} ${e.recordType}`)).sort();
    const fromAxfr = rrs
      .slice(1, -1)
      .map((r) => `${r.name} ${r.type === TYPE.CNAME ? 'CNAME' : Object.entries(TYPE).find(([, n]) => n === r.type)![0]}`)
      .sort();
    expect(fromAxfr).toEqual(fromRecords);
    expect(callLines(h.sim)).toEqual([]);
  });

  it('IXFR from the current serial: the SOA alone', async () => {
    const serial = soaSerial(await generation());
    const soa = {
      name: ZONE,
      type: TYPE.SOA,
      class: 1,
      ttl: 0,
      data: { kind: 'SOA' as const, mname: 'x', rname: 'y', serial, refresh: 0, retry: 0, expire: 0, minimum: 0 },
    };
    const answers = await tcpExchange(port, query(ZONE, TYPE.IXFR, { key: aliceKey, authorities: [soa] }), { transfer: true });
    expect(answers).toHaveLength(1);
    expect(answers[0]!.parsed.message.answers.map((r) => r.type)).toEqual([TYPE.SOA]);
  });

  it('refuses a transfer unsigned, by a tenant not granted the zone, by an ACME-only key, over UDP', async () => {
    const rcode = async (bytes: Buffer) => (await tcpExchange(port, bytes, { transfer: true }))[0]!.parsed.message.header.rcode;
    expect(await rcode(query(ZONE, TYPE.AXFR))).toBe(RCODE.REFUSED);
    expect(await rcode(query(ZONE, TYPE.AXFR, { key: bobKey }))).toBe(RCODE.REFUSED);
    expect(await rcode(query(ZONE, TYPE.AXFR, { key: acmeKey }))).toBe(RCODE.REFUSED);
    expect(await rcode(query('nope.test', TYPE.AXFR, { key: aliceKey }))).toBe(RCODE.NOTAUTH);
    expect((await udpExchange(port, query(ZONE, TYPE.AXFR, { key: aliceKey })))!.parsed.message.header.rcode).toBe(RCODE.FORMERR);
    const journal = await h.adminClient(await h.tenant('root', [], { admin: true })).listJournal({ zone: ZONE, limit: 10 });
    expect(
      journal.entries.some((e) => e.tenant === 'bob' && /AXFR refused \(REFUSED\): zone "example.test" is not one of tenant "bob"'s zones/.test(e.summary)),
    ).toBe(true);
  });
});

describeWithTools(['dig'], 'dig', () => {
  it('dig -y AXFR: every message verified by dig, the zone as Records serves it', async () => {
    const out = await dig(port, ['AXFR', ZONE], cliKey(aliceKey));
    expect(out.stdout + out.stderr).not.toMatch(/failed|could not be validated|Couldn't verify/i);
    const lines = out.stdout.split('\n').filter((l) => l && !l.startsWith(';') && !/\tTSIG\t/.test(l));
    expect(lines[0]).toMatch(/\tSOA\t/);
    expect(lines.at(-1)).toMatch(/\tSOA\t/);
    const records = (await h.zoneClient(alice.token).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints;
    expect(lines.length - 2).toBe(records.reduce((n, e) => n + e.targets.length, 0));
    expect(out.stdout).toMatch(new RegExp(`www\\.${ZONE}\\.\\s+300\\s+IN\\s+A\\s+192\\.0\\.2\\.1`));
    expect(out.stdout).toMatch(/_sip\._tcp\.example\.test\.\s+300\s+IN\s+SRV\s+0 100 5060 sip\.example\.test\./);
  });

  it('dig -y AXFR by another tenant, and a wrong secret, are refused', async () => {
    const other = await dig(port, ['AXFR', ZONE], cliKey(bobKey));
    expect(other.stdout).toMatch(/Transfer failed|REFUSED/);
    const wrong = await dig(port, ['SOA', ZONE], { ...cliKey(aliceKey), secret: Buffer.alloc(32, 7).toString('base64') });
    expect(digStatus(wrong.stdout)).toBe('NOTAUTH');
    expect(wrong.stdout).toMatch(/BADSIG/);
  });

  it('dig +norec SOA with a key: authoritative and verified', async () => {
    const out = await dig(port, ['+norec', 'SOA', ZONE], cliKey(acmeKey));
    expect(digStatus(out.stdout)).toBe('NOERROR');
    expect(out.stdout).toMatch(/flags: qr aa;/);
    expect(out.stdout + out.stderr).not.toMatch(/could not be validated|Couldn't verify/i);
  });
});
