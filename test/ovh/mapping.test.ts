import { describe, expect, it } from 'vitest';
import { normalizeEndpoint } from '../../src/dns/endpoint.js';
import { formatTxtPresentation } from '../../src/dns/txt.js';
import type { Endpoint, RecordType } from '../../src/dns/types.js';
import { adjustEndpointForOvh, endpointTargetToOvh, ovhRecordKey, ovhTtl, recordsToEndpoints } from '../../src/ovh/mapping.js';
import type { OvhRecord } from '../../src/ovh/types.js';

const zone = 'example.com';
let nextId = 5000000000;
const rec = (subDomain: string, fieldType: string, target: string, ttl = 300): OvhRecord => ({
  id: String(nextId++),
  zone,
  subDomain,
  fieldType,
  target,
  ttl,
});

describe('recordsToEndpoints', () => {
  it('groups records by name and type, apex included, sorted', () => {
    const { endpoints: out } = recordsToEndpoints(
      [rec('www', 'A', '192.0.2.2'), rec('', 'A', '192.0.2.9'), rec('www', 'A', '192.0.2.1'), rec('www', 'AAAA', '2001:DB8::1')],
      zone,
    );
    expect(out).toEqual([
      { dnsName: 'example.com', recordType: 'A', targets: ['192.0.2.9'], ttl: 300 },
      { dnsName: 'www.example.com', recordType: 'A', targets: ['192.0.2.1', '192.0.2.2'], ttl: 300 },
      { dnsName: 'www.example.com', recordType: 'AAAA', targets: ['2001:db8::1'], ttl: 300 },
    ]);
  });

  it('resolves host targets: absolute with a dot, otherwise relative to the zone', () => {
    const { endpoints: out } = recordsToEndpoints(
      [
        rec('a', 'CNAME', 'www'),
        rec('b', 'CNAME', 'lb.example.org.'),
        rec('c', 'CNAME', 'lb.example.org'), // BIND: relative
        rec('d', 'CNAME', '@'),
        rec('', 'NS', 'dns10.ovh.net.'),
        rec('', 'MX', '10 mx1'),
        rec('', 'MX', '20 mx.example.org.'),
        rec('_sip._tcp', 'SRV', '0 100 5060 sip'),
        rec('_x._tcp', 'SRV', '0 0 0 .'),
      ],
      zone,
    );
    const byName = Object.fromEntries(out.map((e) => [`${e.dnsName} ${e.recordType}`, e.targets]));
    expect(byName).toEqual({
      'a.example.com CNAME': ['www.example.com'],
      'b.example.com CNAME': ['lb.example.org'],
      'c.example.com CNAME': ['lb.example.org.example.com'],
      'd.example.com CNAME': ['example.com'],
      'example.com NS': ['dns10.ovh.net'],
      'example.com MX': ['10 mx1.example.com', '20 mx.example.org'],
      '_sip._tcp.example.com SRV': ['0 100 5060 sip.example.com'],
      '_x._tcp.example.com SRV': ['0 0 0 .'],
    });
  });

  it('unquotes TXT: quoted, split, escaped, or plain', () => {
    const long = 'k='.padEnd(400, 'x');
    const { endpoints: out } = recordsToEndpoints(
      [
        rec('a', 'TXT', '"v=spf1 -all"'),
        rec('b', 'TXT', formatTxtPresentation(long)),
        rec('c', 'TXT', '"say \\"hi\\""'),
        rec('c2', 'TXT', '"say "hi""'),
        rec('d', 'TXT', 'plain text'),
        rec('e', 'TXT', '"heritage=external-dns,external-dns/owner=k1,external-dns/resource=ingress/ns/web"'),
        rec('f', 'TXT', long),
      ],
      zone,
    );
    expect(out.map((e) => e.targets[0])).toEqual([
      'v=spf1 -all',
      long,
      'say "hi"',
      'say "hi"',
      'plain text',
      'heritage=external-dns,external-dns/owner=k1,external-dns/resource=ingress/ns/web',
      long,
    ]);
    expect(formatTxtPresentation(long)).toMatch(/^"k=x{253}" "x{145}"$/);
  });

  it("returns the types OVH added after its schema's 17 (HTTPS, SVCB) apart, untouched", () => {
    const https = rec('', 'HTTPS', '1 . alpn=h2');
    const svcb = rec('_x', 'SVCB', '1 . alpn=h2');
    const m = recordsToEndpoints([https, rec('', 'A', '192.0.2.1'), svcb], zone);
    expect(m.endpoints).toHaveLength(1);
    expect(m.ignored).toEqual([https, svcb]);
  });

  it('reads SPF as TXT (quoted), DKIM and DMARC raw, each a set of its own', () => {
    const m = recordsToEndpoints(
      [rec('', 'SPF', '"v=spf1 -all"'), rec('sel._domainkey', 'DKIM', 'v=DKIM1;k=rsa;p=abc'), rec('_dmarc', 'DMARC', 'v=DMARC1;p=none;')],
      zone,
    );
    expect(m.warnings).toEqual([]);
    expect(m.endpoints.map((e) => [e.dnsName, e.recordType, e.targets])).toEqual([
      [`_dmarc.${zone}`, 'DMARC', ['v=DMARC1;p=none;']],
      [zone, 'SPF', ['v=spf1 -all']],
      [`sel._domainkey.${zone}`, 'DKIM', ['v=DKIM1;k=rsa;p=abc']],
    ]);
  });

  it('takes the minimum of differing TTLs, with a warning', () => {
    const r1 = rec('www', 'A', '192.0.2.1', 300);
    const r2 = rec('www', 'A', '192.0.2.2', 60);
    const m = recordsToEndpoints([r1, r2], zone);
    expect(m.endpoints[0]?.ttl).toBe(60);
    expect(m.warnings).toEqual([
      { key: 'www.example.com A', recordIds: [r1.id, r2.id], message: 'the records have different TTLs (60, 300); using the minimum, 60' },
    ]);
  });

  it('keeps invalid targets and names raw, with a warning, and merges duplicates', () => {
    const m = recordsToEndpoints([rec('www', 'A', '01.2.3.4'), rec('WWW', 'A', '192.0.2.1'), rec('www', 'A', '192.0.2.1'), rec('bad name', 'TXT', 'x')], zone);
    expect(m.endpoints).toEqual([
      { dnsName: 'bad name.example.com', recordType: 'TXT', targets: ['x'], ttl: 300 },
      { dnsName: 'www.example.com', recordType: 'A', targets: ['01.2.3.4', '192.0.2.1'], ttl: 300 },
    ]);
    expect(m.warnings.map((w) => w.message)).toEqual([
      'the name "bad name.example.com" is not a valid DNS name; kept as it is',
      'target "01.2.3.4" is not a valid A target; kept as it is',
      'target "192.0.2.1" is held by 2 records (duplicates); the next change of this set removes the copies',
    ]);
  });

  it('ovhRecordKey groups like recordsToEndpoints', () => {
    expect(ovhRecordKey(rec('WWW', 'a', '192.0.2.1'), zone)).toBe('www.example.com A');
    expect(ovhRecordKey(rec('', 'TXT', 'x'), zone)).toBe('example.com TXT');
  });
});

describe('endpointTargetToOvh', () => {
  it.each<[RecordType, string, string, boolean]>([
    ['A', '192.0.2.1', '192.0.2.1', false],
    ['AAAA', '2001:db8::1', '2001:db8::1', false],
    ['CNAME', 'www.example.com', 'www.example.com.', false],
    ['CNAME', 'www.example.com', 'www', true],
    ['CNAME', 'lb.example.org', 'lb.example.org.', true],
    ['CNAME', 'example.com', 'example.com.', true], // the apex cannot be written relative
    ['NS', 'ns1.example.org', 'ns1.example.org.', true],
    ['MX', '10 mx.example.com', '10 mx.example.com.', false],
    ['MX', '0 .', '0 .', false],
    ['SRV', '0 100 5002 registry.example.com', '0 100 5002 registry.example.com.', false],
    ['SRV', '0 0 0 .', '0 0 0 .', false],
    ['TXT', 'say "hi"', 'say "hi"', false],
    ['CAA', '0 issue "letsencrypt.org"', '0 issue "letsencrypt.org"', false],
  ])('%s %j -> %j (cnameRelative %s)', (type, canonical, sent, cnameRelative) => {
    expect(endpointTargetToOvh(type, canonical, zone, { cnameRelative })).toBe(sent);
  });

  it('round-trips every type through OVH records, apex included', () => {
    const inputs: [string, RecordType, string[]][] = [
      ['example.com', 'A', ['192.0.2.1', '192.0.2.2']],
      ['example.com', 'AAAA', ['2001:DB8:0:0::1', '::ffff:192.0.2.1']],
      ['example.com', 'MX', ['10 mx1.example.com', '20 mx.example.org', '0 .']],
      ['example.com', 'TXT', ['v=spf1 -all', 'x'.repeat(400), 'say "hi"', '"quoted"']],
      ['example.com', 'CAA', ['0 issue "letsencrypt.org"', '128 iodef "mailto:a@example.com"']],
      ['www.example.com', 'CNAME', ['lb.example.com']],
      ['sub.example.com', 'NS', ['ns1.example.org', 'ns2.example.org']],
      ['_sip._tcp.example.com', 'SRV', ['0 100 5060 sip.example.com', '1 0 0 .']],
      ['*.example.com', 'A', ['192.0.2.3']],
    ];
    for (const cnameRelative of [false, true]) {
      for (const [dnsName, recordType, targets] of inputs) {
        const e: Endpoint = normalizeEndpoint({ dnsName, recordType, targets, ttl: 3600 }, 'e', { zone });
        const subDomain = dnsName === zone ? '' : dnsName.slice(0, -zone.length - 1);
        const records = e.targets.map((t) => rec(subDomain, recordType, endpointTargetToOvh(recordType, t, zone, { cnameRelative }), e.ttl));
        expect(recordsToEndpoints(records, zone).endpoints).toEqual([e]);
        // OVH's answers quote TXT: the same endpoint comes back.
        if (recordType === 'TXT') {
          const answered = records.map((r) => ({ ...r, target: formatTxtPresentation(r.target) }));
          expect(recordsToEndpoints(answered, zone).endpoints).toEqual([e]);
          const unescaped = records.map((r) => ({ ...r, target: `"${r.target}"` }));
          expect(recordsToEndpoints(unescaped, zone).endpoints).toEqual([e]);
        }
      }
    }
  });
});

describe('TTL', () => {
  it('ovhTtl keeps 0 and 60+, raises 1-59 to 60 with a warning', () => {
    expect(ovhTtl(0)).toEqual({ ttl: 0 });
    expect(ovhTtl(60)).toEqual({ ttl: 60 });
    expect(ovhTtl(86400)).toEqual({ ttl: 86400 });
    expect(ovhTtl(30)).toEqual({ ttl: 60, warning: "TTL 30 raised to OVH's minimum of 60" });
    expect(ovhTtl(1).ttl).toBe(60);
    expect(() => ovhTtl(-1)).toThrow(RangeError);
  });

  it('adjustEndpointForOvh gives the endpoint as OVH will hold it', () => {
    const e: Endpoint = { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: 30 };
    expect(adjustEndpointForOvh(e)).toEqual({
      endpoint: { ...e, ttl: 60 },
      warnings: ["a.example.com A: TTL 30 raised to OVH's minimum of 60"],
    });
    const f = { ...e, ttl: 300 };
    expect(adjustEndpointForOvh(f)).toEqual({ endpoint: f, warnings: [] });
  });
});
