/**
 * The authoritative DNS server: UDP through Node's resolver (c-ares), TCP through raw dns-packet frames.
 */
import dgram from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import dnsPacket from 'dns-packet';
import type { Answer, DecodedPacket, Packet, RecordType } from 'dns-packet';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { clientFor, trust } from '../helpers/sim-clients.js';

const ZONE = 'example.test';
const LONG_TXT = 'x'.repeat(300);
let sim: OvhSimulator;
let resolver: Resolver;

beforeAll(async () => {
  sim = await OvhSimulator.start({
    zones: {
      [ZONE]: [
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.1' },
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.2', ttl: 300 },
        { subDomain: 'v6', fieldType: 'AAAA', target: '2001:db8::1' },
        { subDomain: 'alias', fieldType: 'CNAME', target: 'www' },
        { subDomain: 'abs', fieldType: 'CNAME', target: 'www.example.test.' },
        { subDomain: 'ext', fieldType: 'CNAME', target: 'elsewhere.invalid.' },
        { subDomain: '', fieldType: 'MX', target: '10 mail' },
        { subDomain: '', fieldType: 'MX', target: '20 mx.other.invalid.' },
        { subDomain: 'mail', fieldType: 'A', target: '192.0.2.25' },
        { subDomain: 'txt', fieldType: 'TXT', target: 'hello world' },
        { subDomain: 'long', fieldType: 'TXT', target: LONG_TXT },
        { subDomain: 'spf', fieldType: 'SPF', target: 'v=spf1 -all' },
        { subDomain: '_registry._tcp.nsm', fieldType: 'SRV', target: '0 5 5002 registry.nsm' },
        { subDomain: '', fieldType: 'CAA', target: '0 issue "ca.example"' },
        { subDomain: 'deep.a.b', fieldType: 'A', target: '192.0.2.40' },
        { subDomain: '*.wild', fieldType: 'A', target: '192.0.2.50' },
        { subDomain: 'sub', fieldType: 'NS', target: 'ns.sub' },
        { subDomain: 'ns.sub', fieldType: 'A', target: '192.0.2.53' },
        ...Array.from({ length: 12 }, (_, i) => ({ subDomain: 'big', fieldType: 'TXT', target: `${i}-${'y'.repeat(100)}` })),
      ],
    },
  });
  trust(sim);
  resolver = new Resolver({ timeout: 10_000, tries: 1 }); // a bound for a lost answer only; a loaded machine answers late;
  resolver.setServers([`127.0.0.1:${sim.dnsPort}`]);
});

afterAll(async () => {
  await sim?.stop();
});

const errorCode = async (p: Promise<unknown>): Promise<string | undefined> => {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  }
};

/** One query over TCP with 2-byte length framing. */
function tcpQuery(name: string, type: RecordType): Promise<DecodedPacket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(sim.dnsPort, '127.0.0.1');
    let buf = Buffer.alloc(0);
    socket.on('connect', () => {
      socket.write(dnsPacket.streamEncode({ type: 'query', id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name }] }));
    });
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        socket.end();
        resolve(dnsPacket.decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
      }
    });
    socket.on('error', reject);
  });
}

/** One raw query over UDP. */
function udpQuery(packet: Packet): Promise<DecodedPacket> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    socket.on('message', (msg) => {
      socket.close();
      resolve(dnsPacket.decode(msg));
    });
    socket.on('error', reject);
    socket.send(dnsPacket.encode(packet), sim.dnsPort, '127.0.0.1');
  });
}

const rcodeOf = (p: DecodedPacket): string => (p as DecodedPacket & { rcode: string }).rcode;

describe('DNS over UDP (Node resolver)', () => {
  it('answers A with TTL 0 served as 3600, case-insensitively', async () => {
    const answers = await resolver.resolve4('WWW.Example.Test', { ttl: true });
    expect(answers.sort((a, b) => a.address.localeCompare(b.address))).toEqual([
      { address: '192.0.2.1', ttl: 3600 },
      { address: '192.0.2.2', ttl: 300 },
    ]);
  });

  it('answers AAAA', async () => {
    expect(await resolver.resolve6('v6.example.test')).toEqual(['2001:db8::1']);
  });

  it('answers TXT, splitting values over 255 bytes; SPF records are TXT', async () => {
    expect(await resolver.resolveTxt('txt.example.test')).toEqual([['hello world']]);
    expect(await resolver.resolveTxt('long.example.test')).toEqual([['x'.repeat(255), 'x'.repeat(45)]]);
    expect(await resolver.resolveTxt('spf.example.test')).toEqual([['v=spf1 -all']]);
  });

  it('answers MX with relative targets resolved against the zone', async () => {
    const mx = await resolver.resolveMx('example.test');
    expect(mx.sort((a, b) => a.priority - b.priority)).toEqual([
      { exchange: 'mail.example.test', priority: 10 },
      { exchange: 'mx.other.invalid', priority: 20 },
    ]);
  });

  it('answers SRV (the NSM lookup)', async () => {
    expect(await resolver.resolveSrv('_registry._tcp.nsm.example.test')).toEqual([{ name: 'registry.nsm.example.test', port: 5002, priority: 0, weight: 5 }]);
  });

  it('answers CNAME and follows it inside the zone', async () => {
    expect(await resolver.resolveCname('alias.example.test')).toEqual(['www.example.test']);
    expect(await resolver.resolveCname('abs.example.test')).toEqual(['www.example.test']);
    expect((await resolver.resolve4('alias.example.test')).sort()).toEqual(['192.0.2.1', '192.0.2.2']);
    const raw = await udpQuery({ type: 'query', id: 1, questions: [{ type: 'A', name: 'alias.example.test' }] });
    expect(raw.answers?.map((a) => a.type)).toEqual(['CNAME', 'A', 'A']);
    const ext = await udpQuery({ type: 'query', id: 2, questions: [{ type: 'A', name: 'ext.example.test' }] });
    expect(ext.answers).toEqual([expect.objectContaining({ type: 'CNAME', data: 'elsewhere.invalid' })]);
    expect(rcodeOf(ext)).toBe('NOERROR');
  });

  it('answers CAA, NS and SOA (serial = soaSerial)', async () => {
    expect(await resolver.resolveCaa('example.test')).toEqual([{ critical: 0, issue: 'ca.example' }]);
    expect((await resolver.resolveNs('example.test')).sort()).toEqual(['dns1.sim.test', 'ns1.sim.test']);
    const soa = await resolver.resolveSoa('example.test');
    expect(soa).toMatchObject({ nsname: 'dns1.sim.test', hostmaster: 'tech.sim.test', serial: sim.soaSerial(ZONE), minttl: 300 });
  });

  it('distinguishes NXDOMAIN from NODATA, both with the SOA in authority', async () => {
    expect(await errorCode(resolver.resolve4('nope.example.test'))).toBe('ENOTFOUND');
    expect(await errorCode(resolver.resolve6('www.example.test'))).toBe('ENODATA');
    // An empty non-terminal exists: NODATA, not NXDOMAIN.
    expect(await errorCode(resolver.resolve4('a.b.example.test'))).toBe('ENODATA');
    const nx = await udpQuery({ type: 'query', id: 3, questions: [{ type: 'A', name: 'nope.example.test' }] });
    expect(rcodeOf(nx)).toBe('NXDOMAIN');
    expect(nx.flag_aa).toBe(true);
    expect(nx.answers).toEqual([]);
    expect(nx.authorities).toEqual([expect.objectContaining({ type: 'SOA', name: 'example.test', ttl: 300 })]);
    const nodata = await udpQuery({ type: 'query', id: 4, questions: [{ type: 'AAAA', name: 'www.example.test' }] });
    expect(rcodeOf(nodata)).toBe('NOERROR');
    expect(nodata.answers).toEqual([]);
    expect(nodata.authorities?.[0]?.type).toBe('SOA');
  });

  it('refuses names outside every zone', async () => {
    expect(await errorCode(resolver.resolve4('www.other.invalid'))).toBe('EREFUSED');
    const refused = await udpQuery({ type: 'query', id: 5, questions: [{ type: 'A', name: 'notexample.test' }] });
    expect(rcodeOf(refused)).toBe('REFUSED');
    expect(refused.flag_aa).toBe(false);
  });

  it('answers wildcards for names that do not exist', async () => {
    const answer = await udpQuery({ type: 'query', id: 6, questions: [{ type: 'A', name: 'anything.wild.example.test' }] });
    expect(answer.answers).toEqual([expect.objectContaining({ name: 'anything.wild.example.test', type: 'A', data: '192.0.2.50' })]);
    expect(await errorCode(resolver.resolve4('wild.example.test'))).toBe('ENODATA');
  });

  it('refers delegated names (NS below the apex) without AA, with glue', async () => {
    const ref = await udpQuery({ type: 'query', id: 7, questions: [{ type: 'A', name: 'host.sub.example.test' }] });
    expect(rcodeOf(ref)).toBe('NOERROR');
    expect(ref.flag_aa).toBe(false);
    expect(ref.answers).toEqual([]);
    expect(ref.authorities).toEqual([expect.objectContaining({ type: 'NS', name: 'sub.example.test', data: 'ns.sub.example.test' })]);
    expect(ref.additionals).toEqual([expect.objectContaining({ type: 'A', name: 'ns.sub.example.test', data: '192.0.2.53' })]);
  });

  it('truncates large UDP answers (TC) and the resolver gets them over TCP', async () => {
    const udp = await udpQuery({ type: 'query', id: 8, questions: [{ type: 'TXT', name: 'big.example.test' }] });
    expect(udp.flag_tc).toBe(true);
    expect(udp.answers).toEqual([]);
    const txt = await resolver.resolveTxt('big.example.test');
    expect(txt).toHaveLength(12);
  });

  it('answers from the published zone only: a new record appears after /refresh', async () => {
    const client = clientFor(sim);
    await client.requestPromised('POST', `/domain/zone/${ZONE}/record`, { fieldType: 'A', subDomain: 'fresh', target: '192.0.2.99' });
    expect(await errorCode(resolver.resolve4('fresh.example.test'))).toBe('ENOTFOUND');
    const serial = sim.soaSerial(ZONE);
    await client.requestPromised('POST', `/domain/zone/${ZONE}/refresh`);
    expect(await resolver.resolve4('fresh.example.test')).toEqual(['192.0.2.99']);
    expect((await resolver.resolveSoa('example.test')).serial).toBeGreaterThan(serial);
  });
});

describe('DNS over TCP (dns-packet stream framing)', () => {
  it('answers A authoritatively', async () => {
    const res = await tcpQuery('www.example.test', 'A');
    expect(res.id).toBe(4242);
    expect(res.flag_qr).toBe(true);
    expect(res.flag_aa).toBe(true);
    expect(res.flag_rd).toBe(true);
    expect(res.answers?.map((a) => (a as Answer & { data: string }).data).sort()).toEqual(['192.0.2.1', '192.0.2.2']);
  });

  it('answers TXT with 255-byte strings, MX, SRV and CNAME', async () => {
    const txt = await tcpQuery('long.example.test', 'TXT');
    const data = (txt.answers![0] as Answer & { data: Buffer[] }).data;
    expect(data.map((b) => b.length)).toEqual([255, 45]);
    const big = await tcpQuery('big.example.test', 'TXT');
    expect(big.flag_tc).toBe(false);
    expect(big.answers).toHaveLength(12);
    const mx = await tcpQuery('example.test', 'MX');
    expect(mx.answers?.map((a) => a.type)).toEqual(['MX', 'MX']);
    expect(mx.additionals).toEqual([expect.objectContaining({ name: 'mail.example.test', data: '192.0.2.25' })]);
    const srv = await tcpQuery('_registry._tcp.nsm.example.test', 'SRV');
    expect(srv.answers).toEqual([expect.objectContaining({ type: 'SRV', data: { priority: 0, weight: 5, port: 5002, target: 'registry.nsm.example.test' } })]);
    const cname = await tcpQuery('alias.example.test', 'AAAA');
    expect(cname.answers?.map((a) => a.type)).toEqual(['CNAME']);
    expect(cname.authorities?.[0]?.type).toBe('SOA');
  });

  it('answers NXDOMAIN, NODATA and REFUSED', async () => {
    const nx = await tcpQuery('missing.example.test', 'A');
    expect(rcodeOf(nx)).toBe('NXDOMAIN');
    expect(nx.authorities?.[0]).toMatchObject({ type: 'SOA', data: { serial: sim.soaSerial(ZONE) } });
    const nodata = await tcpQuery('txt.example.test', 'A');
    expect(rcodeOf(nodata)).toBe('NOERROR');
    expect(nodata.answers).toEqual([]);
    const refused = await tcpQuery('example.invalid', 'A');
    expect(rcodeOf(refused)).toBe('REFUSED');
  });

  it('serves several framed queries on one connection', async () => {
    const answers = await new Promise<DecodedPacket[]>((resolve, reject) => {
      const socket = net.connect(sim.dnsPort, '127.0.0.1');
      const got: DecodedPacket[] = [];
      let buf = Buffer.alloc(0);
      socket.on('connect', () => {
        const q = (id: number, name: string): Buffer => dnsPacket.streamEncode({ type: 'query', id, questions: [{ type: 'A', name }] });
        socket.write(Buffer.concat([q(1, 'www.example.test'), q(2, 'mail.example.test')]));
      });
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
          const len = buf.readUInt16BE(0);
          got.push(dnsPacket.decode(buf.subarray(2, 2 + len)));
          buf = buf.subarray(2 + len);
        }
        if (got.length === 2) {
          socket.end();
          resolve(got);
        }
      });
      socket.on('error', reject);
    });
    expect(answers.map((a) => a.id)).toEqual([1, 2]);
  });
});
