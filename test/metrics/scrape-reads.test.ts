/**
 * Gauges read from Postgres at scrape time (src/metrics/metrics.ts) that share their rows read them
 * once per scrape, not once per gauge: the health gauges (dnsplane_target_health and
 * dnsplane_target_set_all_down), the zone gauges, the in-flight journal gauges. The next scrape reads again.
 */
import { expect, it, vi } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';

it('one read of the health rows per scrape feeds both gauges', async () => {
  const metrics = new Metrics({ defaultMetrics: false, eventLoop: false });
  const health = vi.fn(async () => [
    { zone: 'z.test', name: 'www.z.test', target: '192.0.2.1', passing: false },
    { zone: 'z.test', name: 'www.z.test', target: '192.0.2.2', passing: false },
    { zone: 'z.test', name: 'api.z.test', target: '192.0.2.3', passing: true },
  ]);
  metrics.sources.health = health;
  const text = await metrics.registry.metrics();
  expect(health).toHaveBeenCalledTimes(1);
  expect(text).toMatch(/^dnsplane_target_health\{zone="z\.test",name="www\.z\.test",target="192\.0\.2\.1"\} 0$/m);
  expect(text).toMatch(/^dnsplane_target_health\{zone="z\.test",name="api\.z\.test",target="192\.0\.2\.3"\} 1$/m);
  expect(text).toMatch(/^dnsplane_target_set_all_down\{zone="z\.test",name="www\.z\.test"\} 1$/m);
  expect(text).toMatch(/^dnsplane_target_set_all_down\{zone="z\.test",name="api\.z\.test"\} 0$/m);
  await metrics.registry.metrics();
  expect(health).toHaveBeenCalledTimes(2);
});

it('one read of the zone rows and one of the in-flight journal rows per scrape, for their two gauges each', async () => {
  const metrics = new Metrics({ defaultMetrics: false, eventLoop: false });
  const zones = vi.fn(async () => [{ zone: 'z.test', generation: 7n, records: 12 }]);
  const inFlight = vi.fn(async () => [{ zone: 'z.test', count: 1, oldestSeconds: 3 }]);
  Object.assign(metrics.sources, { zones, inFlight });
  const text = await metrics.registry.metrics();
  expect([zones.mock.calls.length, inFlight.mock.calls.length]).toEqual([1, 1]);
  for (const line of [
    'dnsplane_zone_generation{zone="z.test"} 7',
    'dnsplane_zone_records{zone="z.test"} 12',
    'dnsplane_journal_in_flight{zone="z.test"} 1',
    'dnsplane_journal_in_flight_oldest_seconds{zone="z.test"} 3',
  ])
    expect(text.split('\n')).toContain(line);
});
