/**
 * The settings of health checks (core/health/, issue 30, docs/failover.md), read for config/config.ts (which
 * lists them in SETTINGS with their help): DNSPLANE_HEALTH_INTERVAL, DNSPLANE_HEALTH_TIMEOUT,
 * DNSPLANE_HEALTH_FAILURES, DNSPLANE_HEALTH_SUCCESSES, DNSPLANE_HEALTH_CONCURRENCY.
 */
import { InvalidInputError } from '../dns/errors.js';

export interface HealthConfig {
  /** DNSPLANE_HEALTH_INTERVAL: a round of checks this often; 0: no checker in this process. */
  intervalMs: number;
  /** DNSPLANE_HEALTH_TIMEOUT: one check's bound (under the interval). */
  timeoutMs: number;
  /** DNSPLANE_HEALTH_FAILURES: failed checks in a row that withdraw a target. */
  failures: number;
  /** DNSPLANE_HEALTH_SUCCESSES: passing checks in a row that restore it. */
  successes: number;
  /** DNSPLANE_HEALTH_CONCURRENCY: checks in flight at most, for the process. */
  concurrency: number;
}

export const HEALTH_SETTINGS = [
  {
    name: 'DNSPLANE_HEALTH_INTERVAL',
    default: '10s',
    help: 'record sets with a health check (the label dnsplane/health-check; docs/failover.md) have each target checked this often, by one replica at a time per set; 0 or off: this replica checks nothing',
  },
  { name: 'DNSPLANE_HEALTH_TIMEOUT', default: '2s', help: 'one check (TCP connect, or HTTP(S) answer) fails past this; less than DNSPLANE_HEALTH_INTERVAL' },
  {
    name: 'DNSPLANE_HEALTH_FAILURES',
    default: '3',
    help: 'failed checks in a row that withdraw a target from OVH (never the last of its set: all failing, all stay); 1-100',
  },
  { name: 'DNSPLANE_HEALTH_SUCCESSES', default: '2', help: 'passing checks in a row that restore a withdrawn target; 1-100' },
  { name: 'DNSPLANE_HEALTH_CONCURRENCY', default: '64', help: 'health checks in flight at most, for the whole process' },
];

type Duration = (value: string, field: string) => number;

function count(value: string, field: string, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new InvalidInputError(field, `must be an integer from 1 to ${max}, got "${value}"`);
  return Number(value);
}

export function healthConfig(get: (name: string) => string | undefined, duration: Duration): HealthConfig {
  const interval = get('DNSPLANE_HEALTH_INTERVAL') ?? '10s';
  const intervalMs = /^(0|off)$/i.test(interval) ? 0 : duration(interval, 'DNSPLANE_HEALTH_INTERVAL');
  const timeoutMs = duration(get('DNSPLANE_HEALTH_TIMEOUT') ?? '2s', 'DNSPLANE_HEALTH_TIMEOUT');
  if (timeoutMs <= 0) throw new InvalidInputError('DNSPLANE_HEALTH_TIMEOUT', 'must be above 0');
  if (intervalMs > 0 && timeoutMs >= intervalMs) {
    throw new InvalidInputError(
      'DNSPLANE_HEALTH_TIMEOUT',
      `must be less than DNSPLANE_HEALTH_INTERVAL (${intervalMs} ms), got ${timeoutMs} ms: a round ends before the next begins`,
    );
  }
  return {
    intervalMs,
    timeoutMs,
    failures: count(get('DNSPLANE_HEALTH_FAILURES') ?? '3', 'DNSPLANE_HEALTH_FAILURES', 100),
    successes: count(get('DNSPLANE_HEALTH_SUCCESSES') ?? '2', 'DNSPLANE_HEALTH_SUCCESSES', 100),
    concurrency: count(get('DNSPLANE_HEALTH_CONCURRENCY') ?? '64', 'DNSPLANE_HEALTH_CONCURRENCY', 10_000),
  };
}
