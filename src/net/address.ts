/**
 * Client addresses as dnsplane names them, and the proxies it believes about them
 * (DNSPLANE_TRUSTED_PROXIES): the peers whose PROXY protocol header and Forwarded / X-Forwarded-For
 * headers say who the client is (client-address.ts). Nothing here does I/O.
 */
import net from 'node:net';
import { InvalidInputError } from '../dns/errors.js';

/** An address as one host: IPv4 mapped into IPv6 (`::ffff:192.0.2.1`) is its IPv4 address. */
export function hostOf(address: string | undefined): string {
  if (!address) return 'unknown';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The peers whose word on the client's address is believed. */
export class TrustedProxies {
  private readonly list = new net.BlockList();

  /** `ranges`: CIDRs as parseTrustedProxies checked them. */
  constructor(readonly ranges: readonly string[]) {
    for (const range of ranges) {
      const [address, bits] = range.split('/') as [string, string];
      const family = net.isIPv4(address) ? 'ipv4' : 'ipv6';
      this.list.addSubnet(address, Number(bits), family);
    }
  }

  get empty(): boolean {
    return this.ranges.length === 0;
  }

  /** Whether `address` (an IP address, IPv4 mapped into IPv6 included) is one of the proxies. */
  has(address: string): boolean {
    if (this.ranges.length === 0) return false;
    const family = net.isIP(address);
    if (family === 0) return false;
    return this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/**
 * DNSPLANE_TRUSTED_PROXIES: a comma list of CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses (a
 * /32 or /128). Each made canonical (`10.0.0.0/8`); a bad entry is refused naming it and the rule.
 */
export function parseTrustedProxies(text: string, field = 'DNSPLANE_TRUSTED_PROXIES'): string[] {
  const out: string[] = [];
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const [i, entry] of entries.entries()) {
    const where = `${field}[${i}]`;
    const slash = entry.indexOf('/');
    const address = slash < 0 ? entry : entry.slice(0, slash);
    const family = net.isIP(address);
    if (family === 0) throw new InvalidInputError(where, `${JSON.stringify(entry)} is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8, 192.0.2.10)`);
    const max = family === 4 ? 32 : 128;
    const bitsText = slash < 0 ? String(max) : entry.slice(slash + 1);
    const bits = /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : Number.NaN;
    if (!(bits >= 0 && bits <= max)) throw new InvalidInputError(where, `${JSON.stringify(entry)}: the prefix length must be a whole number from 0 to ${max}`);
    out.push(`${address.toLowerCase()}/${bits}`);
  }
  return out;
}
