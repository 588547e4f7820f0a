/**
 * Reading external-dns's TXT registry back (pure): names with and without the record type, with a
 * prefix, a suffix, the %{record_type} template; values with the heritage.
 */
import { describe, expect, it } from 'vitest';
import { parseRegistryName, parseRegistryValue, registryClaims } from '../../src/core/admin/import-txt.js';
import type { Endpoint } from '../../src/dns/types.js';

const none = { prefix: '', suffix: '' };

describe('parseRegistryName (external-dns AffixNameMapper.ToEndpointName)', () => {
  it.each([
    ['a-www.example.com', none, 'www.example.com', 'A'],
    ['aaaa-www.example.com', none, 'www.example.com', 'AAAA'],
    ['cname-api.example.com', none, 'api.example.com', 'CNAME'],
    ['www.example.com', none, 'www.example.com', ''], // old format: no type
    ['txt-www.example.com', none, 'txt-www.example.com', ''], // TXT has no typed registry name
    ['A-WWW.Example.COM.', none, 'www.example.com', 'A'],
    ['_extdns.a-shop.example.net', { prefix: '_extdns.', suffix: '' }, 'shop.example.net', 'A'],
    ['_extdns.legacy.example.net', { prefix: '_extdns.', suffix: '' }, 'legacy.example.net', ''],
    ['reg-cname-api.example.com', { prefix: 'reg-', suffix: '' }, 'api.example.com', 'CNAME'],
    ['cname-reg.api.example.com', { prefix: '%{record_type}-reg.', suffix: '' }, 'api.example.com', 'CNAME'],
    // Old records were written with the template dropped (external-dns's dropAffixTemplate).
    ['-reg.api.example.com', { prefix: '%{record_type}-reg.', suffix: '' }, 'api.example.com', ''],
    ['a-www-ext.example.com', { prefix: '', suffix: '-ext' }, 'www.example.com', 'A'],
    ['www-ext.example.com', { prefix: '', suffix: '-ext' }, 'www.example.com', ''],
    ['www.ext.example.com', { prefix: '', suffix: '.ext' }, 'www.example.com', ''],
    ['www-a.example.com', { prefix: '', suffix: '-%{record_type}' }, 'www.example.com', 'A'],
  ])('%s with %j -> %s %s', (txt, affix, name, type) => {
    expect(parseRegistryName(txt, affix)).toEqual({ dnsName: name, recordType: type });
  });

  it('a name without the affix is not a registry name', () => {
    expect(parseRegistryName('a-www.example.com', { prefix: '_extdns.', suffix: '' })).toBeUndefined();
    expect(parseRegistryName('a-www.example.com', { prefix: '', suffix: '-ext' })).toBeUndefined();
  });
});

describe('parseRegistryValue (external-dns NewLabelsFromString, plain)', () => {
  it('reads the owner and resource, quoted or not', () => {
    const text = 'heritage=external-dns,external-dns/owner=cluster-1,external-dns/resource=ingress/default/web';
    expect(parseRegistryValue(text)).toEqual({ owner: 'cluster-1', resource: 'ingress/default/web' });
    expect(parseRegistryValue(`"${text}"`)).toEqual({ owner: 'cluster-1', resource: 'ingress/default/web' });
  });

  it('is not a registry value without the external-dns heritage', () => {
    expect(parseRegistryValue('v=spf1 -all')).toBeUndefined();
    expect(parseRegistryValue('heritage=someone-else,external-dns/owner=x')).toBeUndefined();
    expect(parseRegistryValue('external-dns/owner=x')).toBeUndefined();
  });
});

describe('registryClaims', () => {
  const ep = (dnsName: string, recordType: Endpoint['recordType'], targets: string[]): Endpoint => ({ dnsName, recordType, targets, ttl: 300 });
  const reg = (owner: string) => `heritage=external-dns,external-dns/owner=${owner},external-dns/resource=service/default/x`;

  it('typed records win over old untyped ones; the untyped one never claims AAAA', () => {
    const { claims } = registryClaims(
      'example.com',
      [
        ep('web.example.com', 'A', ['192.0.2.1']),
        ep('web.example.com', 'AAAA', ['2001:db8::1']),
        ep('web.example.com', 'TXT', [reg('old-owner')]),
        ep('a-web.example.com', 'TXT', [reg('new-owner')]),
        ep('nobody.example.com', 'A', ['192.0.2.9']),
      ],
      { prefix: '', suffix: '' },
    );
    expect(Object.fromEntries([...claims].map(([k, c]) => [k, `${c.ownerId} via ${c.registryName}`]))).toEqual({
      'web.example.com A': 'new-owner via a-web.example.com',
      'web.example.com TXT': 'old-owner via web.example.com',
      'a-web.example.com TXT': 'new-owner via a-web.example.com',
    });
  });
});
