/**
 * The client address a chain of HTTP proxies reports in `X-Forwarded-For` or `Forwarded` (RFC 7239),
 * believed only as far as the proxies are trusted: each proxy appends the address it got the request
 * from, so the entries are read from the right, past every trusted proxy, and the first address that
 * is not one is the client's ("the rightmost address not itself trusted"). What a client writes into
 * the header itself sits to the left of what the first trusted proxy appended, and is never reached.
 * Pure.
 */
import net from 'node:net';
import type { TrustedProxies } from './address.js';
import { hostOf } from './address.js';

/** Which header the trusted proxies write (DNSPLANE_CLIENT_ADDRESS_HEADER); none: only the PROXY protocol is believed. */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded' | 'none';

export const FORWARDED_HEADERS: readonly ForwardedHeader[] = ['x-forwarded-for', 'forwarded', 'none'];

/** Longest header value read (a longer one is read up to here: its rightmost entries are then lost, and the proxy's own address is used). */
const MAX_HEADER_CHARS = 4096;

/**
 * The client behind `peer` (the address the request came from, itself a trusted proxy) as `value`
 * (the header's value, its lines joined by commas) reports it; `peer` when the header is absent, says
 * nothing readable, or every entry is a trusted proxy's but the leftmost… which is then the client.
 */
export function clientFromHeader(value: string | undefined, kind: ForwardedHeader, peer: string, trusted: TrustedProxies): string {
  if (value === undefined || kind === 'none' || value.length > MAX_HEADER_CHARS) return peer;
  const entries = kind === 'forwarded' ? forwardedFor(value) : value.split(',').map((s) => s.trim());
  let client = peer;
  for (let i = entries.length - 1; i >= 0; i--) {
    const address = addressOf(entries[i]!);
    // An entry that is not an address (`unknown`, an obfuscated name, garbage): nothing further left
    // can be believed; the last trusted hop is as far as we know.
    if (address === undefined) return client;
    client = address;
    if (!trusted.has(address)) return address;
  }
  return client;
}

/** The `for=` values of a Forwarded header's elements, in order (an element without one counts as unreadable). */
function forwardedFor(value: string): string[] {
  const out: string[] = [];
  for (const element of splitOutsideQuotes(value, ',')) {
    let found = '';
    for (const pair of splitOutsideQuotes(element, ';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== 'for') continue;
      found = pair.slice(eq + 1).trim();
      if (found.startsWith('"') && found.endsWith('"') && found.length >= 2) found = found.slice(1, -1).replace(/\\(.)/g, '$1');
    }
    out.push(found);
  }
  return out;
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if (c === separator && !quoted) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** An entry's address: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]:4711`; undefined when it is none. */
function addressOf(entry: string): string | undefined {
  let text = entry.trim();
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    text = text.slice(1, close);
  } else if (text.includes('.') && text.includes(':') && text.indexOf(':') === text.lastIndexOf(':')) {
    text = text.slice(0, text.indexOf(':')); // IPv4 with a port
  }
  return net.isIP(text) === 0 ? undefined : hostOf(text.toLowerCase());
}
