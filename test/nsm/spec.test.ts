/**
 * src/nsm/spec.ts: what a domain publishes and the validation of a request. Pure, no I/O.
 */
import { describe, expect, it } from 'vitest';
import { inSyncScope } from '../../src/core/plan/input.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import { domainEndpoints, domainScope, nsmUrl, serviceUrls, validatePublish, type PublishInput } from '../../src/nsm/spec.js';

const D = 'cluster1.nsm.example.com';

function invalid(input: PublishInput): InvalidInputError {
  try {
    validatePublish(input);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidInputError);
    return e as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError');
}

describe('validatePublish', () => {
  it('normalizes the domain, labels and addresses; defaults the namespace', () => {
    const spec = validatePublish({
      domain: 'Cluster1.NSM.example.com.',
      ttl: 120,
      services: [
        { name: 'Registry', port: 5002, addresses: ['2001:DB8:0:0::1', '192.0.2.1'] },
        { name: 'vl3-ipam', namespace: 'ns-vl3', addresses: ['192.0.2.7'], addressOnly: true },
      ],
    });
    expect(spec).toEqual({
      domain: D,
      ttl: 120,
      services: [
        {
          name: 'registry',
          namespace: 'nsm-system',
          dnsName: `registry.nsm-system.${D}`,
          port: 5002,
          ipv4: '192.0.2.1',
          ipv6: '2001:db8::1',
          addressOnly: false,
        },
        { name: 'vl3-ipam', namespace: 'ns-vl3', dnsName: `vl3-ipam.ns-vl3.${D}`, port: 0, ipv4: '192.0.2.7', addressOnly: true },
      ],
    });
  });

  it('names the field and the rule', () => {
    expect(invalid({ domain: D, services: [{ name: 'registry', port: 5002, addresses: ['192.0.2.1', '192.0.2.2'] }] }).field).toBe('services[0].addresses[1]');
    expect(invalid({ domain: D, services: [{ name: 'registry', port: 0x10000, addresses: ['192.0.2.1'] }] }).message).toBe(
      'services[0].port: must be a port from 1 to 65535 (got 65536)',
    );
    expect(invalid({ domain: D, services: [{ name: 'registry', port: 5002.5, addresses: ['192.0.2.1'] }] }).field).toBe('services[0].port');
    expect(invalid({ domain: D, services: [{ name: 'registry', port: 5002, addresses: ['fe80::1%eth0'] }] }).field).toBe('services[0].addresses[0]');
    expect(invalid({ domain: D, services: [{ name: 'registry', port: 5002, addresses: ['010.0.0.1'] }] }).field).toBe('services[0].addresses[0]');
    expect(invalid({ domain: D, services: Array.from({ length: 17 }, (_, i) => ({ name: `s${i}`, port: 1, addresses: ['192.0.2.1'] })) }).message).toMatch(
      /^services: at most 16 services/,
    );
    // The whole name must fit in 253 octets.
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.example.com`;
    expect(invalid({ domain: long, services: [{ name: 'r'.repeat(63), port: 1, addresses: ['192.0.2.1'] }] }).message).toMatch(/^services\[0\]\.name: .*253/);
  });
});

describe('what a domain publishes', () => {
  it('per service: one SRV "0 100 port name" at the name itself, one A and/or one AAAA; no SRV when address-only', () => {
    const spec = validatePublish({
      domain: D,
      services: [
        { name: 'registry', port: 5002, addresses: ['192.0.2.1', '2001:db8::1'] },
        { name: 'nsmgr-proxy', port: 5004, addresses: ['2001:db8::2'] },
        { name: 'vl3-ipam', addresses: ['192.0.2.7'], addressOnly: true },
      ],
    });
    expect(domainEndpoints(spec)).toEqual([
      { dnsName: `registry.nsm-system.${D}`, recordType: 'SRV', targets: [`0 100 5002 registry.nsm-system.${D}`], ttl: 0 },
      { dnsName: `registry.nsm-system.${D}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 0 },
      { dnsName: `registry.nsm-system.${D}`, recordType: 'AAAA', targets: ['2001:db8::1'], ttl: 0 },
      { dnsName: `nsmgr-proxy.nsm-system.${D}`, recordType: 'SRV', targets: [`0 100 5004 nsmgr-proxy.nsm-system.${D}`], ttl: 0 },
      { dnsName: `nsmgr-proxy.nsm-system.${D}`, recordType: 'AAAA', targets: ['2001:db8::2'], ttl: 0 },
      { dnsName: `vl3-ipam.nsm-system.${D}`, recordType: 'A', targets: ['192.0.2.7'], ttl: 0 },
    ]);
    expect(spec.services.map(serviceUrls)).toEqual([['tcp://192.0.2.1:5002', 'tcp://[2001:db8::1]:5002'], ['tcp://[2001:db8::2]:5004'], []]);
  });

  it('formats URLs as NSM does: IPv6 (and IPv4-mapped IPv6) in brackets', () => {
    expect(nsmUrl('192.0.2.1', 5002)).toBe('tcp://192.0.2.1:5002');
    expect(nsmUrl('2001:db8::1', 5002)).toBe('tcp://[2001:db8::1]:5002');
    expect(nsmUrl('::ffff:192.0.2.1', 5002)).toBe('tcp://[::ffff:192.0.2.1]:5002');
  });

  it('a domain owns the SRV, A and AAAA sets exactly two labels below it, nothing else', () => {
    const scope = domainScope(D);
    expect(inSyncScope(scope, `registry.nsm-system.${D}`, 'SRV')).toBe(true);
    expect(inSyncScope(scope, `registry.nsm-system.${D}`, 'A')).toBe(true);
    expect(inSyncScope(scope, `vl3-ipam.other-ns.${D}`, 'AAAA')).toBe(true);
    expect(inSyncScope(scope, `registry.nsm-system.${D}`, 'TXT')).toBe(false);
    expect(inSyncScope(scope, `registry.nsm-system.${D}`, 'CNAME')).toBe(false);
    expect(inSyncScope(scope, `api.${D}`, 'A')).toBe(false);
    expect(inSyncScope(scope, D, 'A')).toBe(false);
    expect(inSyncScope(scope, `x.registry.nsm-system.${D}`, 'A')).toBe(false);
    // A nested domain's services are its own, not the parent's.
    expect(inSyncScope(domainScope('nsm.example.com'), `registry.nsm-system.${D}`, 'A')).toBe(false);
    expect(inSyncScope(scope, `registry.nsm-system.x${D}`, 'A')).toBe(false);
  });
});
