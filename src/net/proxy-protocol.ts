/**
 * The PROXY protocol header a proxy puts before a connection's first byte to say whose connection it
 * is (HAProxy's spec, versions 1 and 2: HAProxy `send-proxy` / `send-proxy-v2`, ingress-nginx and
 * nginx's `proxy_protocol`, AWS NLB, Envoy). Pure: bytes in, what they say out; the front decides
 * whom it believes (api/front/proxied.ts).
 *
 * - v1: one text line, `PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n`, or `PROXY UNKNOWN…\r\n`,
 *   107 bytes at most;
 * - v2: a 12-byte signature, the version and command (LOCAL: the proxy's own connection, a health
 *   check; PROXY: a client's), the family, a length, the addresses, then TLVs (skipped).
 */
import net from 'node:net';
import { formatIpv6 } from '../dns/targets.js';

/** v2's signature: `\r\n\r\n\0\r\nQUIT\n`. */
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
/** v1's longest line, CRLF included (the spec's bound). */
export const V1_MAX_BYTES = 107;
/** v2's header bound here: 16 bytes and the addresses and TLVs it announces (TLVs run to a few hundred bytes in practice). */
export const V2_MAX_BYTES = 16 + 2048;

export type ProxyHeader =
  /** The bytes so far may still be a header: read more. */
  | { state: 'more' }
  /** Not a PROXY header: the connection starts with its own bytes. */
  | { state: 'none' }
  /**
   * A header of `length` bytes; `client` the connection's source it names, none for the proxy's own
   * connection (v2 LOCAL, v1 UNKNOWN, an unspecified or UNIX family).
   */
  | { state: 'header'; version: 1 | 2; length: number; client?: { address: string; port: number } }
  | { state: 'invalid'; reason: string };

/** Whether `bytes` start like a PROXY header (as far as they go). */
function startsLike(bytes: Buffer, prefix: Buffer): boolean {
  const n = Math.min(bytes.length, prefix.length);
  return bytes.subarray(0, n).equals(prefix.subarray(0, n));
}

/** What the first bytes of a connection say. */
export function readProxyHeader(bytes: Buffer): ProxyHeader {
  if (bytes.length === 0) return { state: 'more' };
  if (startsLike(bytes, V2_SIGNATURE)) return bytes.length < V2_SIGNATURE.length ? { state: 'more' } : readV2(bytes);
  if (startsLike(bytes, V1_PREFIX)) return bytes.length < V1_PREFIX.length ? { state: 'more' } : readV1(bytes);
  return { state: 'none' };
}

function readV1(bytes: Buffer): ProxyHeader {
  const end = bytes.indexOf('\r\n', 0, 'latin1');
  if (end < 0) return bytes.length >= V1_MAX_BYTES ? { state: 'invalid', reason: `v1: no CRLF within ${V1_MAX_BYTES} bytes` } : { state: 'more' };
  const length = end + 2;
  if (length > V1_MAX_BYTES) return { state: 'invalid', reason: `v1: a line of ${length} bytes, over ${V1_MAX_BYTES}` };
  const line = bytes.subarray(0, end).toString('latin1');
  const parts = line.split(' ');
  const protocol = parts[1];
  if (protocol === 'UNKNOWN') return { state: 'header', version: 1, length };
  if (protocol !== 'TCP4' && protocol !== 'TCP6') return { state: 'invalid', reason: `v1: protocol ${JSON.stringify(protocol)} is not TCP4, TCP6 or UNKNOWN` };
  if (parts.length !== 6) return { state: 'invalid', reason: `v1: ${protocol} needs source, destination and both ports, got ${parts.length - 2} field(s)` };
  const [, , source, destination, sourcePort, destinationPort] = parts as [string, string, string, string, string, string];
  const family = protocol === 'TCP4' ? 4 : 6;
  for (const [what, address] of [
    ['source', source],
    ['destination', destination],
  ] as const) {
    if (net.isIP(address) !== family) return { state: 'invalid', reason: `v1: ${what} ${JSON.stringify(address.slice(0, 45))} is not an IPv${family} address` };
  }
  for (const [what, port] of [
    ['source port', sourcePort],
    ['destination port', destinationPort],
  ] as const) {
    if (!/^(0|[1-9]\d{0,4})$/.test(port) || Number(port) > 65535)
      return { state: 'invalid', reason: `v1: ${what} ${JSON.stringify(port.slice(0, 8))} is not 0-65535` };
  }
  return { state: 'header', version: 1, length, client: { address: source, port: Number(sourcePort) } };
}

function readV2(bytes: Buffer): ProxyHeader {
  if (bytes.length < 16) return { state: 'more' };
  const versionCommand = bytes[12]!;
  if (versionCommand >> 4 !== 2) return { state: 'invalid', reason: `v2: version ${versionCommand >> 4}, not 2` };
  const command = versionCommand & 0x0f;
  if (command > 1) return { state: 'invalid', reason: `v2: command ${command} is neither LOCAL (0) nor PROXY (1)` };
  const familyTransport = bytes[13]!;
  const announced = bytes.readUInt16BE(14);
  const length = 16 + announced;
  if (length > V2_MAX_BYTES) return { state: 'invalid', reason: `v2: a header of ${length} bytes, over ${V2_MAX_BYTES}` };
  if (bytes.length < length) return { state: 'more' };
  // LOCAL: the proxy speaking for itself (its health checks); the addresses, if any, are ignored.
  if (command === 0) return { state: 'header', version: 2, length };
  const family = familyTransport >> 4;
  const body = bytes.subarray(16, length);
  if (family === 1) {
    if (body.length < 12) return { state: 'invalid', reason: `v2: an IPv4 header needs 12 bytes of addresses, got ${body.length}` };
    return { state: 'header', version: 2, length, client: { address: [...body.subarray(0, 4)].join('.'), port: body.readUInt16BE(8) } };
  }
  if (family === 2) {
    if (body.length < 36) return { state: 'invalid', reason: `v2: an IPv6 header needs 36 bytes of addresses, got ${body.length}` };
    return { state: 'header', version: 2, length, client: { address: ipv6Text(body.subarray(0, 16)), port: body.readUInt16BE(32) } };
  }
  // AF_UNSPEC and AF_UNIX: no address to believe; the connection is the proxy's.
  if (family === 0 || family === 3) return { state: 'header', version: 2, length };
  return { state: 'invalid', reason: `v2: address family ${family} is unknown` };
}

/** 16 bytes as an IPv6 address in RFC 5952 text (IPv4-mapped as ::ffff:a.b.c.d, then hostOf makes it IPv4). */
function ipv6Text(b: Buffer): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i));
  return formatIpv6(groups);
}
