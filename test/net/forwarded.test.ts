/**
 * The client behind trusted HTTP proxies (net/forwarded.ts, net/address.ts): the rightmost address of
 * X-Forwarded-For or Forwarded that is not itself a trusted proxy; what a client writes into the
 * header itself is never reached; DNSPLANE_TRUSTED_PROXIES parsed with errors naming the entry.
 */
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/dns/errors.js';
import { parseTrustedProxies, TrustedProxies } from '../../src/net/address.js';
import { clientFromHeader } from '../../src/net/forwarded.js';

const trusted = new TrustedProxies(parseTrustedProxies('10.0.0.0/8, fd00::/8, 192.0.2.10'));
const PEER = '10.0.0.5';

describe('X-Forwarded-For', () => {
  it('takes the rightmost address that is not a trusted proxy, skipping trusted hops, ports and IPv6 brackets', () => {
    expect(clientFromHeader('203.0.113.7', 'x-forwarded-for', PEER, trusted)).toBe('203.0.113.7');
    expect(clientFromHeader('203.0.113.7, 10.1.1.1', 'x-forwarded-for', PEER, trusted)).toBe('203.0.113.7');
    expect(clientFromHeader('198.51.100.1, 203.0.113.7:4711', 'x-forwarded-for', PEER, trusted)).toBe('203.0.113.7');
    expect(clientFromHeader('[2001:db8::7]:443', 'x-forwarded-for', PEER, trusted)).toBe('2001:db8::7');
    expect(clientFromHeader('::ffff:203.0.113.7', 'x-forwarded-for', PEER, trusted)).toBe('203.0.113.7');
  });

  it('a client naming someone else is not believed: the proxy appended the real address to its right', () => {
    // The client sent "X-Forwarded-For: 203.0.113.66"; the trusted proxy appended what it saw.
    expect(clientFromHeader('203.0.113.66, 198.51.100.20', 'x-forwarded-for', PEER, trusted)).toBe('198.51.100.20');
  });

  it('all hops trusted: the leftmost; absent, empty or unreadable: the proxy that sent it', () => {
    expect(clientFromHeader('10.9.9.9, 10.1.1.1', 'x-forwarded-for', PEER, trusted)).toBe('10.9.9.9');
    expect(clientFromHeader(undefined, 'x-forwarded-for', PEER, trusted)).toBe(PEER);
    expect(clientFromHeader('', 'x-forwarded-for', PEER, trusted)).toBe(PEER);
    expect(clientFromHeader('garbage', 'x-forwarded-for', PEER, trusted)).toBe(PEER);
    expect(clientFromHeader('203.0.113.66, unknown', 'x-forwarded-for', PEER, trusted)).toBe(PEER);
    expect(clientFromHeader('203.0.113.7', 'none', PEER, trusted)).toBe(PEER);
    expect(clientFromHeader(`${'1.2.3.4, '.repeat(1000)}203.0.113.7`, 'x-forwarded-for', PEER, trusted)).toBe(PEER);
  });
});

describe('Forwarded (RFC 7239)', () => {
  it('reads for= of each element, quoted and bracketed forms, other pairs and case ignored', () => {
    expect(clientFromHeader('for=203.0.113.7;proto=https;by=10.0.0.5', 'forwarded', PEER, trusted)).toBe('203.0.113.7');
    expect(clientFromHeader('For="[2001:db8:cafe::17]:4711", for=10.1.1.1', 'forwarded', PEER, trusted)).toBe('2001:db8:cafe::17');
    expect(clientFromHeader('for=198.51.100.1, for="203.0.113.7:80";proto=http', 'forwarded', PEER, trusted)).toBe('203.0.113.7');
    expect(clientFromHeader('for=_hidden, for=10.1.1.1', 'forwarded', PEER, trusted)).toBe('10.1.1.1');
    expect(clientFromHeader('proto=https', 'forwarded', PEER, trusted)).toBe(PEER);
  });
});

describe('DNSPLANE_TRUSTED_PROXIES', () => {
  it('takes CIDRs and single addresses of both families; matches IPv4-mapped addresses', () => {
    expect(parseTrustedProxies(' 10.0.0.0/8 ,FD00::/8,192.0.2.10,,')).toEqual(['10.0.0.0/8', 'fd00::/8', '192.0.2.10/32']);
    expect(trusted.has('10.200.1.1')).toBe(true);
    expect(trusted.has('::ffff:10.200.1.1')).toBe(true);
    expect(trusted.has('fd12::1')).toBe(true);
    expect(trusted.has('192.0.2.10')).toBe(true);
    expect(trusted.has('192.0.2.11')).toBe(false);
    expect(trusted.has('not an address')).toBe(false);
    expect(new TrustedProxies([]).has('10.0.0.1')).toBe(false);
  });

  it('refuses a bad entry naming it and the rule', () => {
    const bad = (text: string) => () => parseTrustedProxies(text);
    expect(bad('10.0.0.0/8, ingress')).toThrow(InvalidInputError);
    expect(bad('10.0.0.0/8, ingress')).toThrow('DNSPLANE_TRUSTED_PROXIES[1]: "ingress" is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8, 192.0.2.10)');
    expect(bad('10.0.0.0/33')).toThrow('DNSPLANE_TRUSTED_PROXIES[0]: "10.0.0.0/33": the prefix length must be a whole number from 0 to 32');
    expect(bad('fd00::/129')).toThrow(/from 0 to 128/);
    expect(bad('10.0.0.0/x')).toThrow(/prefix length/);
  });
});
