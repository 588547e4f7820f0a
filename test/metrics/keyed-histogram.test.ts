/**
 * KeyedHistogram (src/metrics/series.ts) stands in for prom-client's Histogram on the hot path of every
 * request (dnsplane_rpc_duration_seconds): fed the same observations, the two print the same
 * /metrics text byte for byte, in the Prometheus and the OpenMetrics formats, and give the same JSON;
 * both refuse a value that is not a number and forget everything on reset.
 */
import { Histogram, Registry, type RegistryContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { KeyedHistogram } from '../../src/metrics/series.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const NAME = 'dnsplane_rpc_duration_seconds';
const HELP = 'Server time of each RPC, by procedure';

function pair(contentType?: typeof Registry.OPENMETRICS_CONTENT_TYPE) {
  const theirs = new Registry<RegistryContentType>();
  const ours = new Registry<RegistryContentType>();
  if (contentType) {
    theirs.setContentType(contentType);
    ours.setContentType(contentType);
  }
  const histogram = new Histogram({ name: NAME, help: HELP, labelNames: ['procedure'], buckets: BUCKETS, registers: [theirs] });
  const keyed = new KeyedHistogram(NAME, HELP, 'procedure', BUCKETS, ours);
  const observe = (procedure: string, seconds: number) => {
    histogram.observe({ procedure }, seconds);
    keyed.observe(procedure, seconds);
  };
  return { theirs, ours, histogram, keyed, observe };
}

/** Observations over every bucket, its bounds exactly, past the last one, and several keys in an order of their own. */
function feed(observe: (procedure: string, seconds: number) => void): void {
  const procedures = ['/dnsplane.v1.ZoneService/Records', 'unknown', '/dnsplane.v1.ZoneService/Apply', '/a"quoted\\path'];
  let n = 0;
  for (const seconds of [0, 0.0005, 0.001, 0.0011, 0.003, 0.0049999, 0.01, 0.2, 0.25, 1, 7.5, 30, 59.9, 60, 61, 3600, 1e-9, 0.123456789]) {
    for (const p of procedures.slice(0, 1 + (n++ % procedures.length))) observe(p, seconds);
  }
}

describe('KeyedHistogram', () => {
  it('prints what prom-client prints for a Histogram of one label, byte for byte (Prometheus text), and the same JSON', async () => {
    const { theirs, ours, observe } = pair();
    expect(await ours.metrics()).toBe(await theirs.metrics()); // nothing observed yet: the HELP and TYPE lines
    feed(observe);
    const text = await theirs.metrics();
    expect(text).toContain(`${NAME}_bucket{le="0.001",procedure="/dnsplane.v1.ZoneService/Records"}`);
    expect(await ours.metrics()).toBe(text);
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });

  it('prints the same in the OpenMetrics format', async () => {
    const { theirs, ours, observe } = pair(Registry.OPENMETRICS_CONTENT_TYPE);
    feed(observe);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('refuses a value that is not a finite number, as Histogram does, and forgets everything on reset', async () => {
    const { theirs, ours, histogram, keyed, observe } = pair();
    expect(() => keyed.observe('x', Number.NaN)).toThrow(TypeError);
    expect(() => histogram.observe({ procedure: 'x' }, Number.NaN)).toThrow(TypeError);
    expect(() => keyed.observe('x', Number.POSITIVE_INFINITY)).toThrow(TypeError);
    feed(observe);
    theirs.resetMetrics();
    ours.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    observe('after', 0.02);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
