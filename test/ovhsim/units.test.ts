/**
 * The simulator's pure parts and OVH's wire rules it answers by (ovhwire/): signing, path patterns,
 * rule counting, record rules, serials.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FaultSet, patternToRegExp } from '../../src/ovhsim/faults.js';
import { absoluteName, bindZoneFile, txtWireStrings } from '../../src/ovhsim/records.js';
import { nextSerial } from '../../src/ovhsim/state.js';
import { OvhApiError } from '../../src/ovhwire/errors.js';
import { normalizeRecord, txtForAnswer } from '../../src/ovhwire/records.js';
import { signRequest, signedUrlCandidates, stripPort } from '../../src/ovhwire/signature.js';

describe('signature', () => {
  it('is "$1$" + sha1 of AS+CK+METHOD+URL+BODY+TS', () => {
    const expected = `$1$${createHash('sha1').update('as+ck+GET+https://h/1.0/x?a=1++123').digest('hex')}`;
    expect(signRequest('as', 'ck', 'GET', 'https://h/1.0/x?a=1', '', 123)).toBe(expected);
  });

  it('accepts the URL with and without the port', () => {
    expect(signedUrlCandidates('127.0.0.1:8443', '/1.0/a')).toEqual(['https://127.0.0.1:8443/1.0/a', 'https://127.0.0.1/1.0/a']);
    expect(stripPort('[::1]:8443')).toBe('[::1]');
    expect(signedUrlCandidates('[::1]:8443', '/1.0/a')).toContain('https://::1/1.0/a');
    expect(stripPort('localhost')).toBe('localhost');
  });
});

describe('fault patterns and counting', () => {
  it('matches `*` within a segment and `**` across segments', () => {
    const one = patternToRegExp('/domain/zone/*/record');
    expect(one.test('/domain/zone/a.test/record')).toBe(true);
    expect(one.test('/domain/zone/a.test/record/1')).toBe(false);
    expect(patternToRegExp('/domain/**').test('/domain/zone/a.test/record/1')).toBe(true);
    expect(patternToRegExp('/1.0/domain/zone').test('/domain/zone')).toBe(true);
    expect(patternToRegExp('/domain/zone/a.test').test('/domain/zone/aXtest')).toBe(false);
  });

  it('counts every matching call for every rule; the first rule added wins', () => {
    const set = new FaultSet();
    const a = set.fail({ method: 'get', nth: 2, effect: { kind: 'drop' } });
    const b = set.fail({ times: 3, effect: { kind: 'hang' } });
    expect(set.match('GET', '/x')?.kind).toBe('hang'); // a: 1st (no), b fires
    expect(set.match('GET', '/x')?.kind).toBe('drop'); // a: 2nd, fires first
    expect(set.match('POST', '/x')?.kind).toBe('hang'); // a does not match POST; b: 3rd and last
    expect(set.match('GET', '/x')).toBeUndefined();
    expect([a.matched, a.fired, a.active, b.matched, b.fired, b.active]).toEqual([2, 1, false, 3, 3, false]);
  });

  it('nth with times fires on a window of calls', () => {
    const set = new FaultSet();
    set.fail({ nth: 2, times: 2, effect: { kind: 'drop' } });
    expect([1, 2, 3, 4].map(() => set.match('GET', '/') !== undefined)).toEqual([false, true, true, false]);
  });

  it('refuses malformed rules and clears latency with the rules', () => {
    const set = new FaultSet();
    expect(() => set.fail({ nth: 0, effect: { kind: 'drop' } })).toThrow();
    expect(() => set.fail({ times: 1.5, effect: { kind: 'drop' } })).toThrow();
    set.setLatency(50);
    set.fail({ effect: { kind: 'drop' } });
    set.clear();
    expect(set.latencyMs()).toBe(0);
    expect(set.match('GET', '/')).toBeUndefined();
  });
});

describe('record rules', () => {
  const bad = (input: Record<string, unknown>): string => {
    try {
      normalizeRecord(input, 'z.test');
    } catch (err) {
      if (err instanceof OvhApiError) return err.body.message;
    }
    return 'accepted';
  };

  it('normalizes subDomain, ttl and TXT quotes', () => {
    expect(normalizeRecord({ fieldType: 'TXT', subDomain: 'A.B', target: '"x"', ttl: 7 }, 'z.test')).toEqual({
      fieldType: 'TXT',
      subDomain: 'a.b',
      target: 'x',
      ttl: 60,
    });
    expect(normalizeRecord({ fieldType: 'A', target: '192.0.2.1' }, 'z.test')).toMatchObject({ subDomain: '', ttl: 0 });
    expect(normalizeRecord({ fieldType: 'A', subDomain: '*', target: '192.0.2.1' }, 'z.test').subDomain).toBe('*');
  });

  it('refuses what OVH refuses', () => {
    expect(bad({ fieldType: 'CNAME', subDomain: '_x', target: 'y' })).toBe('Invalid domain name, underscore not allowed');
    expect(bad({ fieldType: 'A', subDomain: 'a.*', target: '192.0.2.1' })).toMatch(/Invalid domain name/);
    expect(bad({ fieldType: 'A', subDomain: 'x', target: '192.0.2.1', ttl: 1.5 })).toMatch(/ttl/);
    expect(bad({ fieldType: 'CAA', subDomain: '', target: '300 issue "x"' })).toMatch(/Invalid CAA/);
    expect(bad({ fieldType: 'CNAME', subDomain: 'x', target: 'has space' })).toMatch(/Invalid CNAME/);
    expect(bad({ fieldType: 'TXT', subDomain: 'x', target: 'line\nbreak' })).toMatch(/control/);
    expect(bad({ fieldType: 'a', subDomain: 'x', target: '192.0.2.1' })).toMatch(/NamedResolutionFieldTypeEnum/);
  });

  it('makes targets absolute by the BIND rule', () => {
    expect(absoluteName('www', 'z.test')).toBe('www.z.test');
    expect(absoluteName('www.other.test', 'z.test')).toBe('www.other.test.z.test');
    expect(absoluteName('WWW.other.test.', 'z.test')).toBe('www.other.test');
    expect(absoluteName('@', 'z.test')).toBe('z.test');
  });

  it('shows and serves TXT as OVH does', () => {
    expect(txtForAnswer('a')).toBe('"a"');
    expect(txtForAnswer('a'.repeat(256))).toBe(`"${'a'.repeat(255)}" "a"`);
    expect(txtWireStrings('plain').map(String)).toEqual(['plain']);
    expect(txtWireStrings('a" "b').map(String)).toEqual(['a', 'b']);
    expect(txtWireStrings('é'.repeat(200)).map((b) => b.length)).toEqual([255, 145]);
  });

  it('exports TXT-like types as TXT', () => {
    const text = bindZoneFile(
      'z.test',
      [{ subDomain: '', fieldType: 'SPF', target: 'v=spf1 -all', ttl: 0 }],
      2025010100,
      { email: 'a@b.c', refresh: 1, retry: 2, expire: 3, nxDomainTtl: 4, ttl: 5 },
      ['ns.test'],
      3600,
    );
    expect(text).toContain('IN TXT    "v=spf1 -all"');
    expect(text).toContain('IN SOA ns.test. a.b.c. (2025010100 1 2 3 4)');
  });
});

describe('serials', () => {
  it('go up strictly, YYYYMMDDnn style', () => {
    const day = new Date(Date.UTC(2025, 0, 15));
    expect(nextSerial(2024123105, day)).toBe(2025011500);
    expect(nextSerial(2025011500, day)).toBe(2025011501);
    expect(nextSerial(2025011599, day)).toBe(2025011600);
  });
});
