/**
 * Cost control through a running server. The rate is asserted where the limiter decides it: the time
 * each call was granted its token, which the OVH client reports (OvhApi.observeCalls). On a loaded
 * machine a call can reach the simulator late, which makes the next window of the simulator's log
 * look short although the bucket never released early, so the simulator's log (`at`, the time each
 * call was received) is used for what delivery delays cannot break: every call it received went
 * through the limiter, and the whole run took long enough.
 *
 * - DNSPLANE_OVH_RATE=5: one token bucket per OVH application key, shared by every zone of the
 *   process: two zones synced at once (30 calls) are granted at least 200 ms apart, their calls
 *   interleaved.
 * - DNSPLANE_OVH_CONCURRENCY=2: never more than 2 calls in flight (with 150 ms of OVH latency).
 * - A cold sync of a large zone logs its progress.
 * - The drift check (core/drift/drift.ts) costs one call per zone when nothing changed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { OvhSimulator, type SimCall, type SimRecordInit } from '../../src/ovhsim/index.js';
import type { OvhCallInfo } from '../../src/ovh/client/transport.js';
import type { Server } from '../../src/server/server.js';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { memoryLogger, startServerOn, zoneClientFor } from '../helpers/sim-server.js';
import { rateViolations } from '../helpers/rate.js';

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

function records(n: number, prefix: string): SimRecordInit[] {
  return Array.from({ length: n }, (_, i) => ({ subDomain: `${prefix}${i}`, fieldType: 'A', target: `198.51.100.${i % 250}`, ttl: 300 }));
}

async function harness(zones: Record<string, SimRecordInit[]>, env: Record<string, string>): Promise<Harness> {
  const h = await startHarness({ zones, env });
  cleanup.push(() => h.close());
  return h;
}

describe('rate limit: one token bucket per application key, for every zone of the process', () => {
  it('DNSPLANE_OVH_RATE=5: 30 calls over two zones, granted at least 200 ms apart, take at least 5 s as the simulator logged them', async () => {
    // 13 records per zone (11 + OVH's 2 apex NS): a cold sync is 1 list + 13 GETs + 1 SOA = 15 calls.
    const h = await harness({ 'one.test': records(11, 'a'), 'two.test': records(11, 'b') }, { DNSPLANE_OVH_RATE: '5' });
    const [t1, t2] = [await h.tenant('t1', ['one.test']), await h.tenant('t2', ['two.test'])];
    const calls: OvhCallInfo[] = [];
    const unobserve = h.server.ctx.ovh.observeCalls((c) => calls.push(c));
    h.sim.clearCalls();
    // Two tenants read their zone at the same time: both cold syncs run concurrently.
    await Promise.all([h.zoneClient(t1).records({ zones: ['one.test'] }), h.zoneClient(t2).records({ zones: ['two.test'] })]);
    unobserve();

    const log = h.sim.calls();
    expect(log).toHaveLength(30);
    // Every call the simulator received was granted by the limiter (and reported once).
    const key = (c: { method: string; path: string }) => `${c.method} ${c.path}`;
    expect(calls.map(key).sort()).toEqual(log.map(key).sort());
    // The limiter's guarantee, on its own clock: no 6 consecutive grants within 1 s (5 intervals of 200 ms).
    const granted = calls.map((c) => c.grantedAt).sort((a, b) => a - b);
    expect(rateViolations(granted, 5)).toEqual([]);
    expect(granted[granted.length - 1]! - granted[0]!).toBeGreaterThanOrEqual(29 * 200 - 1e-6);
    // As OVH would count them: the grants span 5.8 s; the log's span is shorter only by how much later
    // the first call was delivered than the last one, and 5 s leaves 800 ms for that.
    const at = log.map((c) => c.at);
    const span = at[at.length - 1]! - at[0]!;
    expect(span).toBeGreaterThanOrEqual(5000);
    // The zones shared the bucket: their syncs overlapped in time (one zone's calls fall on both sides of
    // some of the other's, not one zone after the other), and the grants of both together kept the rate.
    const zoneOf = (c: SimCall) => (c.path.includes('/one.test') ? 1 : 2);
    const pattern = log.map(zoneOf).join('');
    const switches = log.slice(1).filter((c, i) => zoneOf(c) !== zoneOf(log[i]!)).length;
    expect(switches, pattern).toBeGreaterThanOrEqual(2);
    console.log(
      `rate 5/s: ${log.length} calls granted over ${(granted[granted.length - 1]! - granted[0]!).toFixed(0)} ms, received over ${span} ms by the simulator (>= ${(log.length - 1) * 200} ms expected); zones in call order: ${pattern}`,
    );
  });

  it('DNSPLANE_OVH_CONCURRENCY=2: never more than 2 calls in flight', async () => {
    const latency = 150;
    const h = await harness({ 'wide.test': records(10, 'w') }, { DNSPLANE_OVH_CONCURRENCY: '2', DNSPLANE_OVH_RATE: '1000' });
    const t = await h.tenant('t', ['wide.test']);
    h.sim.faults.setLatency(latency);
    const calls: OvhCallInfo[] = [];
    const unobserve = h.server.ctx.ovh.observeCalls((c) => calls.push(c));
    h.sim.clearCalls();
    await h.zoneClient(t).records({ zones: ['wide.test'] }); // 1 list + 12 GETs + 1 SOA
    unobserve();
    const at = h.sim.calls().map((c) => c.at);
    expect(at).toHaveLength(14);
    // Of 3 calls received in a row, two were never in flight together: one ended (at least `latency` after
    // the simulator received it) before the other was sent (at the latest when the simulator received it).
    // So calls i and i+2 were received at least `latency` apart, however late any was delivered; the 15 ms
    // are for the simulator's timer, which fires on the event loop's clock, not Date.now()'s.
    for (let i = 0; i + 2 < at.length; i++) expect(at[i + 2]! - at[i]!, `calls ${i + 1} and ${i + 3}`).toBeGreaterThanOrEqual(latency - 15);
    // ... and 2 were in flight at once (the bound is 2, not 1): as the client saw them, a call was granted
    // while another one, granted before it, had not yet had its answer.
    const overlapping = calls.filter((c) => calls.some((o) => o !== c && o.grantedAt <= c.grantedAt && c.grantedAt < o.grantedAt + o.durationMs)).length;
    expect(overlapping).toBeGreaterThanOrEqual(4);
    h.sim.faults.setLatency(0);
  });
});

describe('cold sync of a large zone', () => {
  let sim: OvhSimulator;
  let db: TestDatabase;
  let server: Server;

  it('logs its progress every 500 records, then the total', async () => {
    sim = await OvhSimulator.start({ zones: { 'big.test': records(1200, 'r') } });
    db = await testDatabase();
    const { log, lines } = memoryLogger();
    server = await startServerOn(sim, db.url, { DNSPLANE_OVH_RATE: '100000', DNSPLANE_OVH_CONCURRENCY: '16' }, log);
    cleanup.push(async () => {
      await server.close();
      await sim.stop();
      await db.drop();
    });
    const token = (await createTenant(server.ctx.pool, { name: 'big', zones: ['big.test'] })).token;
    sim.clearCalls();
    const res = await zoneClientFor(server, token).records({ zones: ['big.test'], includeForeign: true });
    expect(res.zones[0]!.endpoints.length).toBe(1200 + 1); // 1200 A sets + the apex NS set
    expect(sim.calls().filter((c) => c.path !== '/auth/time')).toHaveLength(1 + 1202 + 1);

    const progress = lines.filter((l) => l['msg'] === 'syncing zone').map((l) => [l['zone'], l['done'], l['total']]);
    expect(progress).toEqual([
      ['big.test', 500, 1202],
      ['big.test', 1000, 1202],
    ]);
    expect(lines.find((l) => l['msg'] === 'zone synced')).toMatchObject({ zone: 'big.test', records: 1202 });
  });
});

describe('the drift check', () => {
  it('costs one OVH call per zone when nothing changed: GET …/soa', async () => {
    const h = await harness({ 'calm.test': records(5, 'c'), 'still.test': records(5, 's') }, { DNSPLANE_DRIFT_INTERVAL: 'off' });
    const t = await h.tenant('t', ['calm.test', 'still.test']);
    await h.zoneClient(t).records({}); // both zones synced
    h.sim.clearCalls();
    const results = [await checkZoneDrift(h.server.ctx, 'calm.test'), await checkZoneDrift(h.server.ctx, 'still.test')];
    expect(results.map((r) => [r.zone, r.status, r.calls])).toEqual([
      ['calm.test', 'unchanged', 1],
      ['still.test', 'unchanged', 1],
    ]);
    expect(h.sim.calls().map((c) => `${c.method} ${c.path}`)).toEqual(['GET /domain/zone/calm.test/soa', 'GET /domain/zone/still.test/soa']);
  });
});
