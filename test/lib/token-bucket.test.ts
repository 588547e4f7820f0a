/**
 * Requests per tenant (lib/token-bucket.ts TenantRateLimiter): a burst, then the rate; one tenant's bucket is its own;
 * the wait it says is whole seconds, at least one.
 */
import { expect, it } from 'vitest';
import { TenantRateLimiter } from '../../src/lib/token-bucket.js';

it('a burst, then the rate, per tenant; the wait in whole seconds', () => {
  let now = 0;
  const limiter = new TenantRateLimiter(2, 3, () => now);
  expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([undefined, undefined, undefined]);
  expect(limiter.take('a')).toBe(1);
  expect(limiter.take('b')).toBeUndefined();
  now = 500; // one more for a
  expect(limiter.take('a')).toBeUndefined();
  expect(limiter.take('a')).toBe(1);
  now = 10_000; // refilled to the burst, not beyond
  expect([limiter.take('a'), limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([undefined, undefined, undefined, 1]);
  expect(new TenantRateLimiter(0.1, 1, () => 0).take('x')).toBeUndefined();
  const slow = new TenantRateLimiter(0.1, 1, () => 0);
  slow.take('x');
  expect(slow.take('x')).toBe(10);
  expect(() => new TenantRateLimiter(0, 1)).toThrow(RangeError);
});
