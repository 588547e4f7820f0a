import { describe, expect, it } from 'vitest';
import {
  endpointsEqual,
  normalizeEndpoint,
  normalizeEndpoints,
  validateEndpointSet,
  type EndpointInput,
  type NormalizeEndpointOptions,
} from '../../src/dns/endpoint.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import type { Endpoint } from '../../src/dns/types.js';

const zone = 'example.com';

function fails(e: EndpointInput, opts: NormalizeEndpointOptions = { zone }): InvalidInputError {
  try {
    normalizeEndpoint(e, 'endpoints[3]', opts);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    return err as InvalidInputError;
  }
  throw new Error('accepted');
}

describe('normalizeEndpoint', () => {
  it.each([
    ['dnsName', { dnsName: 'a\u0000.example.com', recordType: 'A', targets: ['192.0.2.1'] }, 'endpoints[3].dnsName', /NUL character \(U\+0000\) at offset 1/],
    ['a target', { dnsName: 'a.example.com', recordType: 'TXT', targets: ['ok', 'b\u0000'] }, 'endpoints[3].targets[1]', /NUL character/],
    [
      'setIdentifier',
      { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], setIdentifier: 'x\ud800' },
      'endpoints[3].setIdentifier',
      /lone UTF-16 surrogate at offset 1/,
    ],
    [
      'a label value',
      { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], labels: { note: '\udc00' } },
      'endpoints[3].labels["note"]',
      /lone UTF-16 surrogate/,
    ],
    [
      'a label key',
      { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], labels: { 'k\u0000': 'v' } },
      'endpoints[3].labels key "k\\u0000"',
      /NUL character/,
    ],
  ])('a string Postgres cannot store in %s is refused, naming it', (_what, e, field, rule) => {
    const err = fails(e as EndpointInput);
    expect(err.field).toBe(field);
    expect(err.rule).toMatch(rule);
  });

  it('a valid surrogate pair (an emoji in a TXT target) is text', () => {
    expect(normalizeEndpoint({ dnsName: 'a.example.com', recordType: 'TXT', targets: ['ok \ud83d\ude00'] }, 'endpoints[3]', { zone }).targets).toEqual([
      'ok \ud83d\ude00',
    ]);
  });

  it('normalizes name, type, targets (canonical, sorted, de-duplicated) and TTL', () => {
    const e = normalizeEndpoint({ dnsName: 'WWW.Example.com.', recordType: 'aaaa', targets: ['2001:db8::2', '2001:DB8::1', '2001:db8:0::1'], ttl: 300 }, 'e', {
      zone,
    });
    expect(e).toEqual({ dnsName: 'www.example.com', recordType: 'AAAA', targets: ['2001:db8::1', '2001:db8::2'], ttl: 300 });
  });

  it('defaults the TTL to 0 and keeps non-empty metadata', () => {
    const e = normalizeEndpoint({ dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], setIdentifier: 'x', labels: { owner: 'k1' } }, 'e');
    expect(e).toEqual({
      dnsName: 'a.example.com',
      recordType: 'A',
      targets: ['192.0.2.1'],
      ttl: 0,
      setIdentifier: 'x',
      labels: { owner: 'k1' },
    });
    const bare = normalizeEndpoint({ dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], setIdentifier: '', labels: {} }, 'e');
    expect(bare).toEqual({ dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: 0 });
  });

  it('names the field of a bad target', () => {
    const err = fails({ dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1', 'nope'] });
    expect(err.field).toBe('endpoints[3].targets[1]');
  });

  it.each<[string, EndpointInput, string, RegExp]>([
    [
      'unknown type',
      { dnsName: 'a.example.com', recordType: 'HINFO', targets: ['x'] },
      'recordType',
      /unsupported record type "HINFO" \(supported: A, AAAA, CNAME, TXT, MX, SRV, CAA, NS, PTR, NAPTR, TLSA, SSHFP, LOC, DNAME, SPF, DKIM, DMARC\)/,
    ],
    ['no targets', { dnsName: 'a.example.com', recordType: 'A', targets: [] }, 'targets', /at least one target is required/],
    [
      '65 targets',
      { dnsName: 'a.example.com', recordType: 'TXT', targets: Array.from({ length: 65 }, (_, i) => `t${i}`) },
      'targets',
      /at most 64 targets \(got 65\)/,
    ],
    ['negative TTL', { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: -1 }, 'ttl', /must not be negative \(got -1\)/],
    ['huge TTL', { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: 2147483648 }, 'ttl', /at most 2147483647/],
    ['fractional TTL', { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: 1.5 }, 'ttl', /whole number of seconds \(got 1.5\)/],
    ['NaN TTL', { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], ttl: Number.NaN }, 'ttl', /whole number/],
    [
      'underscore in an A name',
      { dnsName: '_a.example.com', recordType: 'A', targets: ['192.0.2.1'] },
      'dnsName',
      /underscores are only allowed in TXT, SRV, TLSA, SPF, DKIM, DMARC names \(got A record "_a.example.com"\)/,
    ],
    [
      'underscore in a CNAME name',
      { dnsName: 'a_b.example.com', recordType: 'CNAME', targets: ['x.example.org'] },
      'dnsName',
      /only allowed in TXT, SRV, TLSA/,
    ],
    ['wildcard NS', { dnsName: '*.example.com', recordType: 'NS', targets: ['ns.example.org'] }, 'dnsName', /wildcard name is not allowed for NS/],
    [
      'two CNAME targets',
      { dnsName: 'a.example.com', recordType: 'CNAME', targets: ['x.example.org', 'y.example.org'] },
      'targets',
      /exactly one target \(got 2\)/,
    ],
    [
      'CNAME at the apex',
      { dnsName: 'example.com', recordType: 'CNAME', targets: ['x.example.org'] },
      'dnsName',
      /a CNAME cannot be at the zone apex \(example.com\)/,
    ],
    ['apex NS', { dnsName: 'Example.com.', recordType: 'NS', targets: ['ns.example.org'] }, 'dnsName', /apex NS records are managed by OVH/],
    ['name outside the zone', { dnsName: 'a.example.org', recordType: 'A', targets: ['192.0.2.1'] }, 'dnsName', /is not in zone "example.com"/],
  ])('rejects %s', (_what, input, field, expected) => {
    const err = fails(input);
    expect(err.field).toBe(`endpoints[3].${field}`);
    expect(err.rule).toMatch(expected);
  });

  it('allows underscores in TXT and SRV names, wildcards but for NS, NS below the apex', () => {
    expect(normalizeEndpoint({ dnsName: '_acme-challenge.example.com', recordType: 'TXT', targets: ['x'] }, 'e', { zone }).dnsName).toBe(
      '_acme-challenge.example.com',
    );
    expect(normalizeEndpoint({ dnsName: '_sip._tcp.example.com', recordType: 'SRV', targets: ['0 0 5060 sip.example.com'] }, 'e', { zone }).targets).toEqual([
      '0 0 5060 sip.example.com',
    ]);
    expect(normalizeEndpoint({ dnsName: '*.example.com', recordType: 'CNAME', targets: ['x.example.org'] }, 'e', { zone }).dnsName).toBe('*.example.com');
    expect(normalizeEndpoint({ dnsName: 'sub.example.com', recordType: 'NS', targets: ['ns.example.org.'] }, 'e', { zone }).targets).toEqual([
      'ns.example.org',
    ]);
  });

  it('counts CNAME targets after de-duplication', () => {
    expect(normalizeEndpoint({ dnsName: 'a.example.com', recordType: 'CNAME', targets: ['X.example.org', 'x.example.org.'] }, 'e', { zone }).targets).toEqual([
      'x.example.org',
    ]);
  });

  it('finds the zone among several (longest match) and applies the apex rules', () => {
    const zones = ['example.com', 'sub.example.com'];
    const err = fails({ dnsName: 'sub.example.com', recordType: 'CNAME', targets: ['x.example.org'] }, { zones });
    expect(err.rule).toMatch(/apex \(sub.example.com\)/);
    expect(fails({ dnsName: 'a.example.net', recordType: 'A', targets: ['192.0.2.1'] }, { zones }).rule).toMatch(
      /in none of the zones in scope \(example.com, sub.example.com\)/,
    );
  });

  it('without a zone the apex rules cannot apply', () => {
    expect(normalizeEndpoint({ dnsName: 'example.com', recordType: 'CNAME', targets: ['x.example.org'] }, 'e').recordType).toBe('CNAME');
  });
});

describe('validateEndpointSet', () => {
  const ep = (dnsName: string, recordType: Endpoint['recordType'], targets: string[]): Endpoint => ({ dnsName, recordType, targets, ttl: 0 });

  it('accepts distinct sets', () => {
    expect(() =>
      validateEndpointSet(
        [ep('a.example.com', 'A', ['192.0.2.1']), ep('a.example.com', 'AAAA', ['::1']), ep('b.example.com', 'CNAME', ['a.example.com'])],
        'endpoints',
      ),
    ).not.toThrow();
  });

  it('rejects two sets with the same name and type, naming both indexes', () => {
    const err = (() => {
      try {
        validateEndpointSet(
          [ep('a.example.com', 'A', ['192.0.2.1']), ep('b.example.com', 'A', ['192.0.2.1']), ep('a.example.com', 'A', ['192.0.2.2'])],
          'endpoints',
        );
      } catch (e) {
        return e as InvalidInputError;
      }
      throw new Error('accepted');
    })();
    expect(err.field).toBe('endpoints[2]');
    expect(err.rule).toBe('duplicate record set a.example.com A: endpoints[0] has the same name and type');
  });

  it('rejects a CNAME beside another type, in either order', () => {
    expect(() => validateEndpointSet([ep('a.example.com', 'TXT', ['x']), ep('a.example.com', 'CNAME', ['b.example.com'])], 'endpoints')).toThrow(
      'endpoints[1]: a.example.com has a CNAME (endpoints[1]) and a TXT record set (endpoints[0]); a CNAME cannot coexist with other record types',
    );
    expect(() => validateEndpointSet([ep('a.example.com', 'CNAME', ['b.example.com']), ep('a.example.com', 'A', ['192.0.2.1'])], 'endpoints')).toThrow(
      'endpoints[1]: a.example.com has a CNAME (endpoints[0]) and a A record set (endpoints[1])',
    );
  });

  it('normalizeEndpoints does both', () => {
    expect(() =>
      normalizeEndpoints(
        [
          { dnsName: 'A.example.com', recordType: 'A', targets: ['192.0.2.1'] },
          { dnsName: 'a.example.com.', recordType: 'a', targets: ['192.0.2.2'] },
        ],
        'desired.endpoints',
        { zone },
      ),
    ).toThrow(/desired.endpoints\[1\]: duplicate record set a.example.com A/);
  });
});

describe('endpointsEqual', () => {
  it('compares name, type, TTL and targets, not metadata', () => {
    const a: Endpoint = { dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1', '192.0.2.2'], ttl: 60 };
    expect(endpointsEqual(a, { ...a, targets: ['192.0.2.2', '192.0.2.1'], labels: { x: 'y' } })).toBe(true);
    expect(endpointsEqual(a, { ...a, ttl: 61 })).toBe(false);
    expect(endpointsEqual(a, { ...a, targets: ['192.0.2.1'] })).toBe(false);
  });
});
