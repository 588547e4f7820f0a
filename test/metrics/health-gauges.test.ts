/**
 * The health gauges (src/metrics/metrics.ts): dnsplane_target_health and dnsplane_target_set_all_down
 * come from one read of the target_health rows per scrape, not one per gauge; the next scrape reads again.
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
