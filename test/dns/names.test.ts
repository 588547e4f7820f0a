import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/dns/errors.js';
import {
  absoluteName,
  findZone,
  isInZone,
  normalizeName,
  normalizeNameByLabels,
  subDomainOf,
  toUnicode,
  zoneFinder,
  type NameOptions,
} from '../../src/dns/names.js';

function rejection(input: string, opts?: NameOptions): InvalidInputError {
  try {
    normalizeName(input, 'endpoints[0].dnsName', opts);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    return err as InvalidInputError;
  }
  throw new Error(`${JSON.stringify(input)} was accepted`);
}

describe('normalizeName', () => {
  it('lowercases and removes the trailing dot', () => {
    expect(normalizeName('WWW.Example.COM.', 'f')).toBe('www.example.com');
    expect(normalizeName('example.com', 'f')).toBe('example.com');
    expect(normalizeName('a-b.0-9.example', 'f')).toBe('a-b.0-9.example');
  });

  it('keeps names whose last label is numeric (no IPv4 parsing)', () => {
    expect(normalizeName('foo.1', 'f')).toBe('foo.1');
  });

  it('converts IDN labels to punycode and back', () => {
    expect(normalizeName('bücher.example', 'f')).toBe('xn--bcher-kva.example');
    expect(normalizeName('Bücher.Example.', 'f')).toBe('xn--bcher-kva.example');
    expect(toUnicode('xn--bcher-kva.example')).toBe('bücher.example');
    expect(toUnicode(normalizeName('www.bücher.example', 'f'))).toBe('www.bücher.example');
    // An undecodable xn-- label is shown as it is.
    expect(toUnicode('xn--zz.example')).toBe('xn--zz.example');
  });

  it('names the field and the rule', () => {
    const err = rejection('a..b');
    expect(err.field).toBe('endpoints[0].dnsName');
    expect(err.message).toBe('endpoints[0].dnsName: empty label in "a..b" (two dots in a row, or a leading dot)');
  });

  it.each([
    ['empty name', '', /must not be empty/],
    ['root', '.', /root name/],
    ['two dots', 'a..b', /empty label/],
    ['leading dot', '.a.b', /empty label/],
    ['two trailing dots', 'a.b..', /empty label/],
    ['64-octet label', `${'x'.repeat(64)}.example`, /is 64 octets long; at most 63 are allowed/],
    ['257-octet name', `${'abcdefghi.'.repeat(25)}example`, /the name is 257 octets long; at most 253 are allowed/],
    ['huge input', 'x'.repeat(2000), /longer than 253 octets/],
    ['space', 'a b.example', /contains the character " "; only letters, digits and hyphens/],
    ['punctuation', 'a!b.example', /contains the character "!"/],
    ['leading hyphen', '-a.example', /must not start or end with a hyphen/],
    ['trailing hyphen', 'a-.example', /must not start or end with a hyphen/],
    ['underscore', 'a_b.example', /contains "_"; underscores are not allowed here/],
    ['wildcard', '*.example', /contains "\*"; wildcards are not allowed here/],
    ['label mapped to nothing', '\u00ad.example', /not a valid internationalized domain label/],
    ['ideographic full stop', 'a\u3002b.example', /not a valid internationalized domain label/],
  ])('rejects: %s', (_what, input, rule) => {
    expect(rejection(input).rule).toMatch(rule);
  });

  it('counts the length in octets of the punycode form', () => {
    // 60 'ü' become a punycode label far over 63 octets.
    expect(rejection(`${'ü'.repeat(60)}.example`).rule).toMatch(/octets long; at most 63/);
    expect(normalizeName(`${'a'.repeat(63)}.example`, 'f')).toHaveLength(71);
    const max = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    expect(normalizeName(max, 'f')).toHaveLength(253);
    expect(normalizeName(`${max}.`, 'f')).toHaveLength(253);
  });

  it('allows underscores anywhere in a label when asked', () => {
    const opts = { allowUnderscore: true };
    expect(normalizeName('_sip._tcp.example.com', 'f', opts)).toBe('_sip._tcp.example.com');
    expect(normalizeName('a_b_.example', 'f', opts)).toBe('a_b_.example');
    expect(normalizeName('_-a.example', 'f', opts)).toBe('_-a.example');
    expect(rejection('_a-.example', opts).rule).toMatch(/must not start or end with a hyphen/);
  });

  it('allows "*" only as the whole leftmost label when asked', () => {
    const opts = { allowWildcard: true };
    expect(normalizeName('*.Example.com', 'f', opts)).toBe('*.example.com');
    expect(rejection('a.*.example', opts).rule).toBe('"*" is only allowed as the whole leftmost label (label 2 is "*")');
    expect(rejection('*a.example', opts).rule).toMatch(/whole leftmost label/);
    expect(rejection('*.*.example', opts).rule).toMatch(/whole leftmost label/);
  });
});

describe('zone arithmetic', () => {
  it('isInZone', () => {
    expect(isInZone('example.com', 'example.com')).toBe(true);
    expect(isInZone('www.example.com', 'example.com')).toBe(true);
    expect(isInZone('wwwexample.com', 'example.com')).toBe(false);
    expect(isInZone('example.org', 'example.com')).toBe(false);
  });

  it('subDomainOf', () => {
    expect(subDomainOf('example.com', 'example.com')).toBe('');
    expect(subDomainOf('a.b.example.com', 'example.com')).toBe('a.b');
    expect(() => subDomainOf('example.org', 'example.com')).toThrow(RangeError);
  });

  it('absoluteName', () => {
    expect(absoluteName('', 'example.com')).toBe('example.com');
    expect(absoluteName('WWW', 'example.com')).toBe('www.example.com');
    expect(absoluteName('_sip._tcp', 'example.com')).toBe('_sip._tcp.example.com');
  });

  it('findZone picks the longest matching zone', () => {
    const zones = ['example.com', 'sub.example.com', 'other.org'];
    expect(findZone('a.sub.example.com', zones)).toBe('sub.example.com');
    expect(findZone('sub.example.com', zones)).toBe('sub.example.com');
    expect(findZone('b.example.com', zones)).toBe('example.com');
    expect(findZone('example.net', zones)).toBeUndefined();
  });

  it('zoneFinder answers as findZone does, for any names and zones', () => {
    const name = fc.array(fc.constantFrom('a', 'b', 'sub', 'example', 'com'), { minLength: 1, maxLength: 5 }).map((ls) => ls.join('.'));
    fc.assert(
      fc.property(fc.array(name, { maxLength: 6 }), fc.array(name, { maxLength: 10 }), (zones, names) => {
        const find = zoneFinder(zones);
        for (const n of names) expect(find(n)).toBe(findZone(n, zones));
      }),
    );
  });
});

describe('normalizeName fast path', () => {
  const outcome = (f: () => string): string => {
    try {
      return `ok ${f()}`;
    } catch (e) {
      return `error ${(e as Error).message}`;
    }
  };
  // Names built from the characters the rules are about: case, hyphens, underscores, wildcards, dots,
  // digits, long labels, non-ASCII.
  const label = fc.oneof(
    fc.stringMatching(/^[a-zA-Z0-9_*-]{1,8}$/),
    fc.constantFrom('*', '-a', 'a-', '_x', 'xn--bcher-kva', 'Bücher', 'K', 'a'.repeat(63), 'a'.repeat(64), ''),
  );
  const name = fc.tuple(fc.array(label, { minLength: 1, maxLength: 6 }), fc.boolean()).map(([ls, dot]) => ls.join('.') + (dot ? '.' : ''));

  it('answers exactly what the label-by-label walk answers (value or error message)', () => {
    fc.assert(
      fc.property(name, fc.boolean(), fc.boolean(), (n, allowUnderscore, allowWildcard) => {
        fc.pre(n !== '' && n !== '.');
        const opts = { allowUnderscore, allowWildcard };
        expect(outcome(() => normalizeName(n, 'f', opts))).toBe(outcome(() => normalizeNameByLabels(n, 'f', opts)));
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps the length limit of the whole name', () => {
    const long = `${Array.from({ length: 4 }, () => 'a'.repeat(62)).join('.')}.ab`; // 254 octets
    expect(long.length).toBe(254);
    expect(() => normalizeName(long, 'f')).toThrow(/254 octets long; at most 253/);
    expect(normalizeName(long.slice(0, 253), 'f')).toBe(long.slice(0, 253));
  });
});
