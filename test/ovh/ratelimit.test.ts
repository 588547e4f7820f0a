/**
 * The OVH client's RateLimiter and limiterFor, on their own (the end-to-end proof against the
 * simulator's log is test/e2e/ratelimit.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { limiterFor, RateLimiter } from '../../src/ovh/ratelimit.js';

describe('RateLimiter', () => {
  it('spaces calls 1/rate apart, with no burst, and reports the wait', async () => {
    const limiter = new RateLimiter(50, 100);
    const starts: number[] = [];
    const waits = await Promise.all(
      Array.from({ length: 11 }, async () => {
        const waited = await limiter.acquire();
        starts.push(performance.now());
        limiter.release();
        return waited;
      }),
    );
    starts.sort((a, b) => a - b);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(19);
    expect(starts[10]! - starts[0]!).toBeGreaterThanOrEqual(199);
    expect(Math.min(...waits)).toBeLessThan(5); // the first one goes at once
    expect(Math.max(...waits)).toBeGreaterThanOrEqual(195);
  });

  it('holds at most maxConcurrent calls in flight; a release lets the next one go', async () => {
    const limiter = new RateLimiter(10_000, 2);
    await limiter.acquire();
    await limiter.acquire();
    let third = false;
    const pending = limiter.acquire().then(() => (third = true));
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

describe('limiterFor', () => {
  it('gives every client of one application key the same limiter, and other keys their own', () => {
    const a = limiterFor('host:443|app-key-1', 20, 8);
    expect(limiterFor('host:443|app-key-1', 20, 8)).toBe(a);
    expect(limiterFor('host:443|app-key-2', 20, 8)).not.toBe(a);
  });
});
