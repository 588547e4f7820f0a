import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/dns/errors.js';
import { canonicalTarget, targetsEqual } from '../../src/dns/targets.js';
import { decodeTxt, formatTxtPresentation, parseTxtPresentation } from '../../src/dns/txt.js';
import type { RecordType } from '../../src/dns/types.js';

function rule(type: RecordType, target: string): string {
  try {
    canonicalTarget(type, target, 'endpoints[1].targets[0]');
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    expect((err as InvalidInputError).field).toBe('endpoints[1].targets[0]');
    return (err as InvalidInputError).rule;
  }
  throw new Error(`${type} ${JSON.stringify(target)} was accepted`);
}

const c = (type: RecordType, target: string, zone?: string): string => canonicalTarget(type, target, 'f', zone === undefined ? {} : { zone });

describe('A', () => {
  it.each(['0.0.0.0', '192.0.2.1', '255.255.255.255', '10.0.100.9'])('accepts %s', (ip) => {
    expect(c('A', ip)).toBe(ip);
    expect(c('A', ` ${ip} `)).toBe(ip);
  });
  it.each(['256.0.0.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '1.2.3.-4', 'a.b.c.d', '::1', '', '1.2.3.4/32'])('rejects %j', (ip) => {
    expect(rule('A', ip)).toMatch(/is not an IPv4 address/);
  });
});

describe('AAAA', () => {
  it.each([
    ['2001:DB8:0:0::1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1'], // the longest run
    ['1:0:0:1:0:0:1:1', '1::1:0:0:1:1'], // the first of two equal runs
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group is not compressed
    ['::ffff:192.0.2.1', '::ffff:192.0.2.1'],
    ['::FFFF:c000:0201', '::ffff:192.0.2.1'], // IPv4-mapped, in mixed notation
    ['0:0:0:0:0:ffff:c000:201', '::ffff:192.0.2.1'],
    ['64:ff9b::192.0.2.1', '64:ff9b::c000:201'],
  ])('%s -> %s', (input, canonical) => {
    expect(c('AAAA', input)).toBe(canonical);
  });
  it.each(['1::2::3', 'fe80::1%eth0', '[::1]', '12345::', '1.2.3.4', 'g::1', ''])('rejects %j', (ip) => {
    expect(rule('AAAA', ip)).toMatch(/is not an IPv6 address/);
  });
  it('compares by canonical form', () => {
    expect(targetsEqual('AAAA', '2001:DB8:0:0::1', '2001:db8::1')).toBe(true);
    expect(targetsEqual('AAAA', '2001:db8::1', '2001:db8::2')).toBe(false);
    expect(targetsEqual('AAAA', 'bad', 'bad')).toBe(false);
  });
});

describe('CNAME and NS', () => {
  it('normalizes the host name', () => {
    expect(c('CNAME', 'WWW.Example.COM.')).toBe('www.example.com');
    expect(c('CNAME', 'bücher.example')).toBe('xn--bcher-kva.example');
    expect(c('CNAME', '_dmarc.example.com')).toBe('_dmarc.example.com');
    expect(c('NS', 'dns10.ovh.net.')).toBe('dns10.ovh.net');
    expect(c('CNAME', '@', 'example.com')).toBe('example.com');
  });
  it('rejects what is not a host name', () => {
    expect(rule('CNAME', '.')).toMatch(/must be a host name, not the root/);
    expect(rule('CNAME', 'a..b')).toMatch(/empty label/);
    expect(rule('NS', '*.example.com')).toMatch(/wildcards are not allowed/);
    expect(rule('CNAME', '')).toMatch(/must not be empty/);
  });
});

describe('MX', () => {
  it('is "<preference> <host>"', () => {
    expect(c('MX', '10 MX.Example.com.')).toBe('10 mx.example.com');
    expect(c('MX', ' 010\tmx.example.com ')).toBe('10 mx.example.com');
    expect(c('MX', '0 .')).toBe('0 .'); // null MX
    expect(c('MX', '65535 mx.example.com')).toBe('65535 mx.example.com');
  });
  it.each([
    ['mx.example.com', /"<preference> <host>"/],
    ['10 mx.example.com extra', /"<preference> <host>"/],
    ['65536 mx.example.com', /MX preference must be an integer from 0 to 65535/],
    ['-1 mx.example.com', /MX preference/],
    ['x mx.example.com', /MX preference/],
    ['10 mx..example.com', /empty label/],
  ])('rejects %j', (target, expected) => {
    expect(rule('MX', target)).toMatch(expected);
  });
});

describe('SRV', () => {
  it('is "<priority> <weight> <port> <host>"', () => {
    expect(c('SRV', '0 100 5002 Registry.NSM-System.example.com.')).toBe('0 100 5002 registry.nsm-system.example.com');
    expect(c('SRV', '0 0 0 .')).toBe('0 0 0 .');
    expect(c('SRV', '1 2 3 _x.example.com')).toBe('1 2 3 _x.example.com');
  });
  it.each([
    ['0 100 registry.example.com', /"<priority> <weight> <port> <host>"/],
    ['65536 1 1 a.example', /SRV priority must be an integer from 0 to 65535/],
    ['1 65536 1 a.example', /SRV weight/],
    ['1 1 65536 a.example', /SRV port/],
    ['1 1 1.5 a.example', /SRV port/],
  ])('rejects %j', (target, expected) => {
    expect(rule('SRV', target)).toMatch(expected);
  });
});

describe('TXT', () => {
  it('is the text, unquoted', () => {
    expect(c('TXT', 'v=spf1 -all')).toBe('v=spf1 -all');
    expect(c('TXT', '"v=spf1 -all"')).toBe('v=spf1 -all');
    expect(c('TXT', '  leading and trailing spaces are text  ')).toBe('  leading and trailing spaces are text  ');
    expect(c('TXT', '"heritage=external-dns,external-dns/owner=a"')).toBe('heritage=external-dns,external-dns/owner=a');
  });
  it('decodes the split form and escapes', () => {
    expect(c('TXT', '"abc" "def"')).toBe('abcdef');
    expect(c('TXT', '"say \\"hi\\""')).toBe('say "hi"');
    expect(c('TXT', '"back\\\\slash"')).toBe('back\\slash');
  });
  it('strips one pair of unescaped surrounding quotes (as OVH answers)', () => {
    expect(c('TXT', '"a"b"')).toBe('a"b');
    expect(c('TXT', '"say "hi""')).toBe('say "hi"');
    expect(c('TXT', '"a" "b" c"')).toBe('a" "b" c');
  });
  it('takes values that are not quoted literally', () => {
    expect(c('TXT', 'a"b')).toBe('a"b');
    expect(c('TXT', '"')).toBe('"');
    expect(c('TXT', 'x "y"')).toBe('x "y"');
    expect(c('TXT', '"unterminated')).toBe('"unterminated');
  });
  it('accepts 4000 characters and rejects more', () => {
    expect(c('TXT', 'x'.repeat(4000))).toHaveLength(4000);
    expect(rule('TXT', 'x'.repeat(4001))).toBe('a TXT value is at most 4000 characters (got 4001)');
  });
  it.each([
    ['', /must not be empty/],
    ['""', /must not be empty/],
    ['"" ""', /must not be empty/],
    ['a\nb', /control characters/],
    ['"\\"x\\""', /ambiguous TXT value/],
    ['""x""', /ambiguous TXT value/],
  ])('rejects %j', (target, expected) => {
    expect(rule('TXT', target)).toMatch(expected);
  });
  it('presentation form round-trips any text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 700 }), fc.integer({ min: 1, max: 300 }), (text, chunk) => {
        expect(parseTxtPresentation(formatTxtPresentation(text, chunk))).toBe(text);
      }),
    );
    expect(formatTxtPresentation('x'.repeat(300))).toBe(`"${'x'.repeat(255)}" "${'x'.repeat(45)}"`);
    expect(formatTxtPresentation('')).toBe('""');
  });
});

describe('CAA', () => {
  it('is <flags> <tag> "<value>"', () => {
    expect(c('CAA', '0 issue "letsencrypt.org"')).toBe('0 issue "letsencrypt.org"');
    expect(c('CAA', '0 ISSUE letsencrypt.org')).toBe('0 issue "letsencrypt.org"');
    expect(c('CAA', '128  IssueWild  ";"')).toBe('128 issuewild ";"');
    expect(c('CAA', '0 issue "ca.example; account=1 2"')).toBe('0 issue "ca.example; account=1 2"');
    expect(c('CAA', '0 issue ""')).toBe('0 issue ""');
    expect(c('CAA', '0 iodef "mailto:security@example.com"')).toBe('0 iodef "mailto:security@example.com"');
    expect(c('CAA', '0 issue "a\\"b"')).toBe('0 issue "a\\"b"');
  });
  it.each([
    ['0 issue', /a CAA target is/],
    ['256 issue "x"', /CAA flags must be an integer from 0 to 255/],
    ['0 tbs "x"', /unsupported CAA tag "tbs" \(supported: issue, issuewild, iodef\)/],
    ['0 issue "x" y', /one double-quoted string/],
    ['0 issue "x', /one double-quoted string/],
    ['0 issue a b', /unquoted CAA value must not contain spaces/],
    ['0 iodef "ftp://x"', /iodef value must be a mailto:/],
  ])('rejects %j', (target, expected) => {
    expect(rule('CAA', target)).toMatch(expected);
  });
});

describe('canonical form', () => {
  const samples: [RecordType, string][] = [
    ['A', '192.0.2.1'],
    ['AAAA', '2001:DB8:0:0::1'],
    ['AAAA', '::ffff:c000:201'],
    ['CNAME', 'Target.Example.org.'],
    ['NS', 'ns1.example.net'],
    ['MX', '010 Mx.Example.com.'],
    ['SRV', '0 100 05002 Registry.example.com.'],
    ['TXT', '"a" "b"'],
    ['TXT', 'a"b'],
    ['CAA', '0 ISSUE letsencrypt.org'],
  ];
  it.each(samples)('is idempotent: %s %j', (type, target) => {
    const once = c(type, target);
    expect(c(type, once)).toBe(once);
    expect(targetsEqual(type, target, once)).toBe(true);
  });
  it('is idempotent on random TXT values', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 60, unit: fc.constantFrom('a', ' ', '"', '\\', 'b') }), (text) => {
        let once: string;
        try {
          once = c('TXT', text);
        } catch {
          return;
        }
        expect(c('TXT', once)).toBe(once);
        expect(decodeTxt(once)).toBe(once);
        // The same value after OVH's quoting, escaped or not.
        expect(c('TXT', formatTxtPresentation(once))).toBe(once);
        // Unescaped quoting is lossy only when the text holds a backslash or `" "`.
        if (!/\\|"\s+"/.test(once)) expect(c('TXT', `"${once}"`)).toBe(once);
      }),
    );
  });
});
