/**
 * The PROXY protocol header read from a connection's first bytes (net/proxy-protocol.ts): v1 and v2 as
 * HAProxy's spec writes them, every prefix of a header asking for more, the proxy's own connections
 * (LOCAL, UNKNOWN, AF_UNSPEC) naming no client, and each malformed form refused with its reason.
 */
import { describe, expect, it } from 'vitest';
import { readProxyHeader, V1_MAX_BYTES } from '../../src/net/proxy-protocol.js';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v2(command: number, family: number, addresses: Buffer, tlvs = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0x20 | command;
  head[1] = family;
  head.writeUInt16BE(addresses.length + tlvs.length, 2);
  return Buffer.concat([SIG, head, addresses, tlvs]);
}

function ipv4(src: number[], dst: number[], sport: number, dport: number): Buffer {
  const b = Buffer.alloc(12);
  Buffer.from(src).copy(b, 0);
  Buffer.from(dst).copy(b, 4);
  b.writeUInt16BE(sport, 8);
  b.writeUInt16BE(dport, 10);
  return b;
}

describe('PROXY protocol v1', () => {
  it('reads TCP4 and TCP6 lines, naming the source as the client; what follows is left alone', () => {
    const line = 'PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\n';
    const bytes = Buffer.from(`${line}GET / HTTP/1.1\r\n`, 'latin1');
    expect(readProxyHeader(bytes)).toEqual({ state: 'header', version: 1, length: line.length, client: { address: '192.0.2.7', port: 51234 } });
    expect(readProxyHeader(Buffer.from('PROXY TCP6 2001:db8::7 2001:db8::1 1 65535\r\n'))).toMatchObject({
      state: 'header',
      client: { address: '2001:db8::7', port: 1 },
    });
  });

  it('UNKNOWN names no client; every prefix of a header asks for more; other first bytes are no header', () => {
    expect(readProxyHeader(Buffer.from('PROXY UNKNOWN\r\n'))).toEqual({ state: 'header', version: 1, length: 15 });
    const line = Buffer.from('PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\n');
    for (let n = 1; n < line.length; n++) expect(readProxyHeader(line.subarray(0, n))).toEqual({ state: 'more' });
    expect(readProxyHeader(Buffer.from('GET / HTTP/1.1\r\n'))).toEqual({ state: 'none' });
    expect(readProxyHeader(Buffer.from('PRI * HTTP/2.0\r\n'))).toEqual({ state: 'none' });
    expect(readProxyHeader(Buffer.from('PROXZ'))).toEqual({ state: 'none' });
  });

  it('refuses malformed lines with the reason', () => {
    const bad = (text: string) => readProxyHeader(Buffer.from(text, 'latin1'));
    expect(bad('PROXY TCP4 192.0.2.7 198.51.100.1 51234\r\n')).toEqual({
      state: 'invalid',
      reason: expect.stringMatching(/needs source, destination and both ports/),
    });
    expect(bad('PROXY TCP4 2001:db8::7 198.51.100.1 1 2\r\n')).toEqual({
      state: 'invalid',
      reason: expect.stringMatching(/source "2001:db8::7" is not an IPv4 address/),
    });
    expect(bad('PROXY TCP4 192.0.2.7 198.51.100.1 65536 2\r\n')).toEqual({
      state: 'invalid',
      reason: expect.stringMatching(/source port "65536" is not 0-65535/),
    });
    expect(bad('PROXY TCP4 192.0.2.7 198.51.100.1 0080 2\r\n')).toMatchObject({ state: 'invalid' });
    expect(bad('PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n')).toEqual({
      state: 'invalid',
      reason: expect.stringMatching(/protocol "UDP4" is not TCP4, TCP6 or UNKNOWN/),
    });
    expect(bad(`PROXY ${'x'.repeat(V1_MAX_BYTES)}`)).toEqual({ state: 'invalid', reason: expect.stringMatching(/no CRLF within 107 bytes/) });
  });
});

describe('PROXY protocol v2', () => {
  it('reads IPv4 and IPv6 PROXY headers, TLVs skipped; what follows is left alone', () => {
    const h4 = v2(1, 0x11, ipv4([203, 0, 113, 9], [10, 0, 0, 1], 40000, 8080), Buffer.from([0x20, 0x00, 0x01, 0x07]));
    expect(readProxyHeader(Buffer.concat([h4, Buffer.from('GET /')]))).toEqual({
      state: 'header',
      version: 2,
      length: h4.length,
      client: { address: '203.0.113.9', port: 40000 },
    });
    const addr6 = Buffer.alloc(36);
    Buffer.from('20010db8000000000000000000000007', 'hex').copy(addr6, 0);
    addr6.writeUInt16BE(5555, 32);
    expect(readProxyHeader(v2(1, 0x21, addr6))).toMatchObject({ client: { address: '2001:db8::7', port: 5555 } });
    // IPv4 mapped into IPv6 is written as such (the front then names it by its IPv4 address).
    const mapped = Buffer.alloc(36);
    Buffer.from('00000000000000000000ffffc0000207', 'hex').copy(mapped, 0);
    expect(readProxyHeader(v2(1, 0x21, mapped))).toMatchObject({ client: { address: '::ffff:192.0.2.7' } });
  });

  it("LOCAL and AF_UNSPEC are the proxy's own connections: no client; prefixes ask for more", () => {
    expect(readProxyHeader(v2(0, 0x11, ipv4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2)))).toEqual({ state: 'header', version: 2, length: 28 });
    expect(readProxyHeader(v2(1, 0x00, Buffer.alloc(0)))).toEqual({ state: 'header', version: 2, length: 16 });
    const whole = v2(1, 0x11, ipv4([203, 0, 113, 9], [10, 0, 0, 1], 1, 2));
    for (let n = 1; n < whole.length; n++) expect(readProxyHeader(whole.subarray(0, n))).toEqual({ state: 'more' });
  });

  it('refuses a wrong version, command, family or a short address block with the reason', () => {
    const base = v2(1, 0x11, ipv4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2));
    const version1 = Buffer.from(base);
    version1[12] = 0x11;
    expect(readProxyHeader(version1)).toEqual({ state: 'invalid', reason: 'v2: version 1, not 2' });
    const command = Buffer.from(base);
    command[12] = 0x22;
    expect(readProxyHeader(command)).toEqual({ state: 'invalid', reason: 'v2: command 2 is neither LOCAL (0) nor PROXY (1)' });
    expect(readProxyHeader(v2(1, 0x41, Buffer.alloc(12)))).toEqual({ state: 'invalid', reason: 'v2: address family 4 is unknown' });
    expect(readProxyHeader(v2(1, 0x11, Buffer.alloc(6)))).toEqual({ state: 'invalid', reason: 'v2: an IPv4 header needs 12 bytes of addresses, got 6' });
    expect(readProxyHeader(v2(1, 0x21, Buffer.alloc(12)))).toEqual({ state: 'invalid', reason: 'v2: an IPv6 header needs 36 bytes of addresses, got 12' });
    const huge = Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0xff, 0xff])]);
    expect(readProxyHeader(huge)).toEqual({ state: 'invalid', reason: expect.stringMatching(/a header of 65551 bytes, over/) });
  });
});
