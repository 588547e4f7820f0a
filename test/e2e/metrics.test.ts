/**
 * /metrics on the API listener: after some traffic (a cold sync, cache reads, applies, a retried OVH
 * call, a stale plan) every series of issue 5 is there with the values that traffic implies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultReadCacheBytes } from '../../src/core/reads/sizing.js';
import { ApplyStatus, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { ep } from '../helpers/expect.js';
import { seriesValue } from '../helpers/prometheus.js';

const ZONE = 'example.com';
let h: Harness;
let alice: string;
let text: string;

/** The value of one series line, e.g. value('dnsplane_ovh_requests_total', {method: 'GET', …}). */
function value(name: string, labels: Record<string, string> = {}): number | undefined {
  return seriesValue(text, name, labels);
}

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [{ subDomain: 'manual', fieldType: 'A', target: '192.0.2.200', ttl: 600 }] } });
  alice = await h.tenant('alice', [ZONE]);
  const client = h.zoneClient(alice);

  // A cold sync (miss) whose SOA read is answered 503 once (retried), then a hit and a not-modified answer.
  h.sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 1, effect: { kind: 'status', status: 503 } });
  const first = await client.records({ zones: [ZONE] });
  await client.records({ zones: [ZONE] });
  await client.records({ zones: [ZONE], knownGenerations: { [ZONE]: first.zones[0]!.generation } });

  // One apply that creates,
  const desired = { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints: [ep(`www.${ZONE}`, 'A', ['192.0.2.1'])] } } };
  expect(ApplyStatus[(await client.apply({ source: { case: 'plan', value: desired } })).zones[0]!.status]).toBe('APPLIED');
  // one with nothing to do, one more that applies, and a stored plan it made stale (it wrote the set the plan creates).
  expect(ApplyStatus[(await client.apply({ source: { case: 'plan', value: desired } })).zones[0]!.status]).toBe('NO_CHANGES');
  const stale = await client.plan({
    policy: Policy.UPSERT_ONLY,
    input: { case: 'desired', value: { zones: [], endpoints: [ep(`api.${ZONE}`, 'A', ['192.0.2.2'])] } },
  });
  await client.apply({
    source: { case: 'plan', value: { ...desired, input: { case: 'desired', value: { zones: [], endpoints: [ep(`api.${ZONE}`, 'A', ['192.0.2.3'])] } } } },
  });
  await client.apply({ source: { case: 'planId', value: stale.plan!.id } }).catch(() => undefined);

  const res = await fetch(`${h.server.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  text = await res.text();
});

afterAll(async () => {
  await h?.close();
});

describe('/metrics', () => {
  it('counts OVH requests by method, route and status, as the simulator saw them', () => {
    const seen = new Map<string, number>();
    for (const c of h.sim.calls()) {
      const route = c.path.replace(/^\/domain\/zone\/[^/]+/, '/domain/zone/{zone}').replace(/\/record\/\d+$/, '/record/{id}');
      const key = `${c.method} ${route} ${c.status}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    expect(seen.size).toBeGreaterThan(4);
    for (const [key, n] of seen) {
      const [method, route, status] = key.split(' ') as [string, string, string];
      expect(value('dnsplane_ovh_requests_total', { method, route, status }), key).toBe(n);
    }
    expect(value('dnsplane_ovh_requests_total', { method: 'POST', route: '/domain/zone/{zone}/refresh', status: '204' })).toBe(2);
    expect(value('dnsplane_ovh_request_duration_seconds_count', { method: 'POST', route: '/domain/zone/{zone}/record' })).toBe(2);
  });

  it('counts retries and the rate-limit wait', () => {
    expect(value('dnsplane_ovh_requests_total', { method: 'GET', route: '/domain/zone/{zone}/soa', status: '503' })).toBe(1);
    expect(value('dnsplane_ovh_retries_total', { method: 'GET', route: '/domain/zone/{zone}/soa' })).toBe(1);
    expect(value('dnsplane_ovh_ratelimit_wait_seconds_count')).toBe(h.sim.calls().length);
    expect(value('dnsplane_ovh_ratelimit_wait_seconds_sum')).toBeGreaterThanOrEqual(0);
  });

  it('times applies per zone and outcome, and the zone lock wait', () => {
    expect(value('dnsplane_apply_duration_seconds_count', { zone: ZONE, outcome: 'applied' })).toBe(2);
    expect(value('dnsplane_apply_duration_seconds_count', { zone: ZONE, outcome: 'no_changes' })).toBe(1);
    expect(value('dnsplane_apply_duration_seconds_count', { zone: ZONE, outcome: 'stale' })).toBe(1);
    expect(value('dnsplane_lock_wait_seconds_count', { zone: ZONE, operation: 'apply' })).toBe(4);
    expect(value('dnsplane_lock_wait_seconds_count', { zone: ZONE, operation: 'sync' })).toBe(1);
  });

  it('counts cache hits, not-modified answers and misses', () => {
    expect(value('dnsplane_cache_reads_total', { zone: ZONE, result: 'miss' })).toBe(1);
    expect(value('dnsplane_cache_reads_total', { zone: ZONE, result: 'hit' })).toBe(2);
    expect(value('dnsplane_cache_reads_total', { zone: ZONE, result: 'not_modified' })).toBe(1);
    // What the Records cache keeps (the zone's base, its answers, their bytes), within its bound: with
    // DNSPLANE_READ_CACHE_BYTES unset, a quarter of this process's V8 heap limit, at least 128 MiB.
    const bound = defaultReadCacheBytes();
    expect(bound).toBeGreaterThanOrEqual(128 * 2 ** 20);
    expect(value('dnsplane_read_cache_bytes', { of: 'bound' })).toBe(bound);
    expect(value('dnsplane_read_cache_bytes', { of: 'kept' })).toBeGreaterThan(0);
    expect(value('dnsplane_read_cache_bytes', { of: 'kept' })).toBeLessThanOrEqual(bound);
  });

  it('reports each zone generation and record count from Postgres', async () => {
    const zones = await h.zoneClient(alice).listZones({});
    const z = zones.zones.find((x) => x.name === ZONE)!;
    expect(value('dnsplane_zone_generation', { zone: ZONE })).toBe(Number(z.generation));
    expect(value('dnsplane_zone_records', { zone: ZONE })).toBe(h.sim.draftRecords(ZONE).length);
    expect(value('dnsplane_dry_run')).toBe(0);
    expect(value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('times every RPC by procedure (server time) and each Plan in core', () => {
    expect(value('dnsplane_rpc_duration_seconds_count', { procedure: '/dnsplane.v1.ZoneService/Records' })).toBe(3);
    expect(value('dnsplane_rpc_duration_seconds_count', { procedure: '/dnsplane.v1.ZoneService/Apply' })).toBe(4);
    expect(value('dnsplane_rpc_duration_seconds_count', { procedure: '/dnsplane.v1.ZoneService/Plan' })).toBe(1);
    expect(value('dnsplane_rpc_duration_seconds_sum', { procedure: '/dnsplane.v1.ZoneService/Plan' })).toBeGreaterThan(0);
    expect(value('dnsplane_plan_duration_seconds_count')).toBe(1);
  });

  it("exports the event-loop delay: a histogram since start, and prom-client's per-scrape gauges", () => {
    expect(value('dnsplane_event_loop_delay_seconds_count')).toBeGreaterThan(0);
    expect(value('dnsplane_event_loop_delay_seconds_bucket', { le: '+Inf' })).toBe(value('dnsplane_event_loop_delay_seconds_count'));
    expect(value('nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0);
    expect(value('nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('labels an unknown path as procedure "unknown" (bounded label values)', async () => {
    await fetch(`${h.server.url}/no.such.Service/Nothing?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    text = await (await fetch(`${h.server.url}/metrics`)).text();
    expect(value('dnsplane_rpc_duration_seconds_count', { procedure: 'unknown' })).toBe(1);
    expect(text).not.toContain('no.such.Service');
  });
});
