/**
 * The failed-login limiter (core/tenants/login-limiter.ts), on its own clock: an address over its burst
 * is refused before any lookup, except for credentials known to have authenticated — from anywhere,
 * however many of them share the address (no cap per address); a credential that fails is forgotten;
 * the summary names the worst addresses by failures and by refusals.
 */
import { describe, expect, it } from 'vitest';
import { LoginLimiter } from '../../src/core/tenants/login-limiter.js';

function limiter(now: { t: number }) {
  const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  const l = new LoginLimiter({ burst: 3, perSecond: 1, summaryEveryMs: 60_000, now: () => now.t, log: (fields, msg) => lines.push({ fields, msg }) });
  return { l, lines };
}

describe('LoginLimiter', () => {
  it('refuses an address over its burst, then lets it in again as it refills', () => {
    const now = { t: 1_000_000 };
    const { l } = limiter(now);
    for (let i = 0; i < 3; i++) {
      expect(l.check('192.0.2.1', `bad${i}`)).toBeUndefined();
      l.failed('192.0.2.1', `bad${i}`);
    }
    expect(l.check('192.0.2.1', 'bad9')).toBe(1);
    expect(l.check('192.0.2.1', undefined)).toBe(1);
    // Another address is its own.
    expect(l.check('192.0.2.2', 'bad9')).toBeUndefined();
    now.t += 1_000;
    expect(l.check('192.0.2.1', 'bad9')).toBeUndefined();
  });

  it('lets every known credential through a limited address, a thousand of them, and forgets one that fails', () => {
    const now = { t: 1_000_000 };
    const { l } = limiter(now);
    const good = Array.from({ length: 1000 }, (_, i) => `good${i}`);
    // Authenticated from elsewhere: known wherever they come from next.
    for (const g of good) l.succeeded(g);
    for (let i = 0; i < 5; i++) l.failed('198.51.100.9', 'stale');
    expect(l.check('198.51.100.9', 'stale')).toBeGreaterThanOrEqual(1);
    for (const g of good) expect(l.check('198.51.100.9', g)).toBeUndefined();
    // A known credential that then fails (rotated away) is known no more.
    l.failed('198.51.100.9', 'good7');
    expect(l.check('198.51.100.9', 'good7')).toBeGreaterThanOrEqual(1);
    // Known for 15 minutes after it last authenticated.
    now.t += 15 * 60_000 - 1;
    for (let i = 0; i < 5; i++) l.failed('198.51.100.9', 'stale');
    expect(l.check('198.51.100.9', 'good8')).toBeUndefined();
    now.t += 2;
    for (let i = 0; i < 5; i++) l.failed('198.51.100.9', 'stale');
    expect(l.check('198.51.100.9', 'good8')).toBeGreaterThanOrEqual(1);
  });

  it('is bounded: the least recently known credentials go first', () => {
    const now = { t: 1_000_000 };
    const l = new LoginLimiter({ burst: 1, perSecond: 0.001, maxKnown: 3, now: () => now.t, log: () => undefined });
    for (const c of ['a', 'b', 'c', 'd']) l.succeeded(c);
    l.failed('192.0.2.1');
    expect(l.check('192.0.2.1', 'a')).toBeGreaterThanOrEqual(1);
    for (const c of ['b', 'c', 'd']) expect(l.check('192.0.2.1', c)).toBeUndefined();
  });

  it('summarizes failures and refusals by address in one line, the worst first', () => {
    const now = { t: 1_000_000 };
    const { l, lines } = limiter(now);
    for (let i = 0; i < 4; i++) l.failed('203.0.113.9', 'stale');
    for (let i = 0; i < 10; i++) l.check('203.0.113.9', 'stale');
    l.failed('192.0.2.1', 'typo');
    l.flush();
    expect(lines).toHaveLength(1);
    expect(lines[0]!.msg).toBe('failed logins: 5 from 2 address(es), 10 request(s) refused with 429 while limited');
    expect(lines[0]!.fields).toMatchObject({
      failedLogins: 5,
      refusedWhileLimited: 10,
      top: [
        { address: '203.0.113.9', failures: 4, refused: 10 },
        { address: '192.0.2.1', failures: 1, refused: 0 },
      ],
    });
    l.flush();
    expect(lines).toHaveLength(1);
  });
});
