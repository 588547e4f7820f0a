/**
 * The OVH client's RateLimiter and limiterFor, on their own (the end-to-end proof through a running
 * server is test/e2e/ratelimit.test.ts). Spacing is asserted on the limiter's grant times: on an
 * injected clock for exact values, and on the real clock for the lower bounds a loaded machine cannot
 * break (a late timer only makes grants later).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { limiterFor, RateLimiter, type Grant, type GrantNotice, type OvhFlow } from '../../src/ovh/ratelimit.js';
import { rateViolations } from '../helpers/rate.js';

afterEach(() => {
  vi.useRealTimers();
});

async function burst(limiter: RateLimiter, n: number): Promise<Grant[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const grant = await limiter.acquire();
      limiter.release();
      return grant;
    }),
  );
}

describe('RateLimiter', () => {
  it('on an injected clock: grants exactly 1/rate apart, the first at once, and reports each wait', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const t0 = Date.now();
    const limiter = new RateLimiter(50, 100, () => Date.now() - t0);
    const pending = burst(limiter, 11);
    await vi.advanceTimersByTimeAsync(1_000);
    const grants = await pending;
    expect(grants.map((g) => g.grantedAt)).toEqual([0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200]);
    expect(grants.map((g) => g.waitedMs)).toEqual([0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200]);
    // An idle bucket holds one token, not more: after a long pause, the second call still waits 1/rate.
    await vi.advanceTimersByTimeAsync(5_000);
    const later = burst(limiter, 2);
    await vi.advanceTimersByTimeAsync(100);
    expect((await later).map((g) => g.waitedMs)).toEqual([0, 20]);
  });

  it('on the real clock: grants at least 1/rate apart, however late the timers fire', async () => {
    const limiter = new RateLimiter(50, 100);
    const grants = await burst(limiter, 11);
    const at = grants.map((g) => g.grantedAt).sort((a, b) => a - b);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!, `grants ${i} and ${i + 1}`).toBeGreaterThanOrEqual(20 - 1e-6);
    expect(rateViolations(at, 50, 11)).toEqual([]);
    expect(Math.max(...grants.map((g) => g.waitedMs))).toBeGreaterThanOrEqual(200 - 1e-6);
  });

  it('holds at most maxConcurrent calls in flight; a release lets the next one go', async () => {
    const limiter = new RateLimiter(10_000, 2);
    await limiter.acquire();
    await limiter.acquire();
    let third = false;
    const pending = limiter.acquire().then(() => (third = true));
    // Whatever the load, the third cannot get through before a release: give it every chance to.
    await new Promise((r) => setTimeout(r, 30));
    expect(third).toBe(false);
    limiter.release();
    await pending;
    expect(third).toBe(true);
  });

  it('refuses a rate or a bound that makes no sense', () => {
    expect(() => new RateLimiter(0, 1)).toThrow(/rate/);
    expect(() => new RateLimiter(1, 0)).toThrow(/maxConcurrent/);
  });
});

describe('rateViolations (the check the rate tests use)', () => {
  it('fails a burst: 6 calls in 0.2 s at 5/s', () => {
    const burst6 = [0, 40, 80, 120, 160, 200];
    expect(rateViolations(burst6, 5)).toHaveLength(1);
    // ... also hidden among well-spaced calls, and even one call 2 ms early.
    const spaced = Array.from({ length: 12 }, (_, i) => i * 200);
    expect(rateViolations([...spaced, 2400, 2440, 2480, 2520, 2560, 2600], 5).length).toBeGreaterThan(0);
    expect(rateViolations([0, 200, 400, 600, 800, 998], 5)).toEqual(['calls 1..6 within 998.000 ms (at 5/s they need 1000 ms)']);
  });

  it('passes calls exactly 1/rate apart, in any order', () => {
    const spaced = Array.from({ length: 30 }, (_, i) => 1000 + i * 200);
    expect(rateViolations(spaced, 5)).toEqual([]);
    expect(rateViolations([...spaced].reverse(), 5)).toEqual([]);
    // Late grants (a timer that fired late) only widen the spans.
    expect(
      rateViolations(
        spaced.map((t, i) => t + i * 7),
        5,
      ),
    ).toEqual([]);
  });
});

describe('limiterFor', () => {
  it('gives every client of one application key the same limiter, and other keys their own', () => {
    const a = limiterFor('host:443|app-key-1', 20, 8);
    expect(limiterFor('host:443|app-key-1', 20, 8)).toBe(a);
    expect(limiterFor('host:443|app-key-2', 20, 8)).not.toBe(a);
  });
});

describe('RateLimiter: a fair share between tenants and zones', () => {
  /**
   * Queues the calls (each released as soon as granted) and returns the grants in the order the limiter
   * decided them. One call in flight at a time, at a high rate: the order is the limiter's choice alone.
   */
  async function grantOrder(limiter: RateLimiter, calls: OvhFlow[]): Promise<GrantNotice[]> {
    const grants: GrantNotice[] = [];
    const stop = limiter.observe((g) => grants.push(g));
    await Promise.all(calls.map((flow) => limiter.acquire(flow).then(() => limiter.release())));
    stop();
    return grants;
  }
  const label = (g: GrantNotice) => `${g.flow.tenant ?? '-'}/${g.flow.zone ?? '-'}`;

  it("round robin between tenants: B's calls are granted in turn with A's, not behind A's whole queue", async () => {
    const limiter = new RateLimiter(10_000, 1);
    const calls = [
      ...Array.from({ length: 10 }, () => ({ tenant: 'a', zone: 'big.test' })),
      { tenant: 'b', zone: 'small.test' },
      { tenant: 'b', zone: 'small.test' },
    ];
    const grants = await grantOrder(limiter, calls);
    // a1 goes at once; then the ring is [a, b]: a, b, a, b, then a's rest.
    expect(grants.map(label)).toEqual(['a/big.test', 'a/big.test', 'b/small.test', 'a/big.test', 'b/small.test', ...Array(7).fill('a/big.test')]);
    const bs = grants.filter((g) => g.flow.tenant === 'b');
    // Granted after 1 and 3 others; in a FIFO they would have waited for all 9 of a's queued before them ...
    expect(bs.map((g) => g.grantedWhileWaiting)).toEqual([1, 3]);
    expect(bs[0]!.queued).toBe(9); // ... which were still there to be jumped
    expect(bs.map((g) => g.seq)).toEqual([3, 5]);
  });

  it('within a tenant, round robin between its zones; a tenant with many zones still gets one turn, like a tenant with one', async () => {
    const limiter = new RateLimiter(10_000, 1);
    const calls: OvhFlow[] = [];
    for (let i = 0; i < 3; i++) for (const zone of ['z1', 'z2', 'z3']) calls.push({ tenant: 'a', zone });
    calls.push({ tenant: 'b', zone: 'y' }, { tenant: 'b', zone: 'y' });
    const grants = await grantOrder(limiter, calls);
    expect(grants.map(label)).toEqual(['a/z1', 'a/z2', 'b/y', 'a/z3', 'b/y', 'a/z1', 'a/z2', 'a/z3', 'a/z1', 'a/z2', 'a/z3']);
  });

  it('work of no tenant (drift, recovery) takes turns as one tenant of its own; one flow alone is plain FIFO', async () => {
    const limiter = new RateLimiter(10_000, 1);
    const grants = await grantOrder(limiter, [{ zone: 'z' }, { zone: 'z' }, { zone: 'z' }, { tenant: 't', zone: 'z' }]);
    expect(grants.map(label)).toEqual(['-/z', '-/z', 't/z', '-/z']);
    // One flow alone: its calls in arrival order, each after the ones before it. A limiter of its own:
    // on the one above, the first call finds the bucket empty when the phases follow within 1/rate
    // (0.1 ms), waits for a token, and every count shifts by one.
    const fifo = await grantOrder(
      new RateLimiter(10_000, 1),
      Array.from({ length: 5 }, () => ({ tenant: 'x', zone: 'only' })),
    );
    expect(fifo.map((g) => g.grantedWhileWaiting)).toEqual([0, 0, 1, 2, 3]);
  });
});
