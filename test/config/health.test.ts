/**
 * The health-check settings (src/config/health.ts through loadConfig): defaults, off, and bad values
 * refused naming the setting and the rule.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

const health = (env: Record<string, string>) => loadConfig({ DNSPLANE_DEMO: 'true', ...env }).health;

describe('health settings', () => {
  it('defaults: every 10 s, 2 s timeout, 3 failures, 2 successes, 64 in flight', () => {
    expect(health({})).toEqual({ intervalMs: 10_000, timeoutMs: 2000, failures: 3, successes: 2, concurrency: 64 });
  });

  it('reads each; off (or 0) turns the checker off', () => {
    expect(
      health({
        DNSPLANE_HEALTH_INTERVAL: '5s',
        DNSPLANE_HEALTH_TIMEOUT: '500ms',
        DNSPLANE_HEALTH_FAILURES: '5',
        DNSPLANE_HEALTH_SUCCESSES: '1',
        DNSPLANE_HEALTH_CONCURRENCY: '8',
      }),
    ).toEqual({
      intervalMs: 5000,
      timeoutMs: 500,
      failures: 5,
      successes: 1,
      concurrency: 8,
    });
    expect(health({ DNSPLANE_HEALTH_INTERVAL: 'off' }).intervalMs).toBe(0);
  });

  it.each([
    [{ DNSPLANE_HEALTH_INTERVAL: 'soon' }, /^DNSPLANE_HEALTH_INTERVAL: /],
    [{ DNSPLANE_HEALTH_INTERVAL: '2s', DNSPLANE_HEALTH_TIMEOUT: '2s' }, /^DNSPLANE_HEALTH_TIMEOUT: must be less than DNSPLANE_HEALTH_INTERVAL/],
    [{ DNSPLANE_HEALTH_FAILURES: '0' }, /^DNSPLANE_HEALTH_FAILURES: must be an integer from 1 to 100, got "0"/],
    [{ DNSPLANE_HEALTH_SUCCESSES: 'two' }, /^DNSPLANE_HEALTH_SUCCESSES: must be an integer from 1 to 100/],
    [{ DNSPLANE_HEALTH_CONCURRENCY: '-1' }, /^DNSPLANE_HEALTH_CONCURRENCY: /],
  ])('refuses %j', (env, rule) => {
    expect(() => health(env)).toThrow(rule);
  });
});
