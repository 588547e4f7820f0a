/**
 * Cost control, measured where OVH would measure it: on the simulator's call log (`at`, the time each
 * call was received), not on the test's clock.
 *
 * - DNSPLANE_OVH_RATE=5: one token bucket per OVH application key, shared by every zone of the
 *   process: two zones synced at once (30 calls) take at least 5 s, their calls interleaved.
 * - DNSPLANE_OVH_CONCURRENCY=2: never more than 2 calls in flight (with 150 ms of OVH latency).
 * - A cold sync of a large zone logs its progress.
 * - The drift check (core/drift.ts) costs one call per zone when nothing changed.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { OvhSimulator, type SimCall, type SimRecordInit } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server.js';
import { checkZoneDrift } from '../../src/core/drift.js';
import { createTenant } from '../../src/core/tenants.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { memoryLogger, startServerOn, zoneClientFor } from '../helpers/sim-server.js';

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
  it('DNSPLANE_OVH_RATE=5: 30 calls over two zones take at least 5 s as the simulator logged them', async () => {
    // 13 records per zone (11 + OVH's 2 apex NS): a cold sync is 1 list + 13 GETs + 1 SOA = 15 calls.
    const h = await harness({ 'one.test': records(11, 'a'), 'two.test': records(11, 'b') }, { DNSPLANE_OVH_RATE: '5' });
    const [t1, t2] = [await h.tenant('t1', ['one.test']), await h.tenant('t2', ['two.test'])];
    h.sim.clearCalls();
    // Two tenants read their zone at the same time: both cold syncs run concurrently.
    await Promise.all([h.zoneClient(t1).records({ zones: ['one.test'] }), h.zoneClient(t2).records({ zones: ['two.test'] })]);

    const log = h.sim.calls();
    expect(log).toHaveLength(30);
    const at = log.map((c) => c.at);
    const span = at[at.length - 1]! - at[0]!;
    expect(span).toBeGreaterThanOrEqual(5000);
    // No burst: any 6 consecutive calls span at least 1 s (5 intervals of 200 ms; 50 ms of slack for the network).
    for (let i = 0; i + 5 < at.length; i++) expect(at[i + 5]! - at[i]!, `calls ${i + 1}..${i + 6}`).toBeGreaterThanOrEqual(950);
    // The zones shared the bucket: their calls are interleaved, not one zone after the other.
    const zoneOf = (c: SimCall) => (c.path.includes('/one.test') ? 1 : 2);
    const pattern = log.map(zoneOf).join('');
    const switches = log.slice(1).filter((c, i) => zoneOf(c) !== zoneOf(log[i]!)).length;
    expect(switches, pattern).toBeGreaterThanOrEqual(3);
    console.log(`rate 5/s: ${log.length} calls in ${span} ms as logged by the simulator (>= ${(log.length - 1) * 200} ms expected); zones in call order: ${pattern}`);
  }, 30_000);

  it('DNSPLANE_OVH_CONCURRENCY=2: never more than 2 calls in flight', async () => {
    const latency = 150;
    const h = await harness({ 'wide.test': records(10, 'w') }, { DNSPLANE_OVH_CONCURRENCY: '2', DNSPLANE_OVH_RATE: '1000' });
    const t = await h.tenant('t', ['wide.test']);
    h.sim.faults.setLatency(latency);
    h.sim.clearCalls();
    await h.zoneClient(t).records({ zones: ['wide.test'] }); // 1 list + 12 GETs + 1 SOA
    const at = h.sim.calls().map((c) => c.at);
    expect(at).toHaveLength(14);
    // Call i+2 can only start once one of calls <= i+1 ended, which is at least `latency` after call i started.
    for (let i = 0; i + 2 < at.length; i++) expect(at[i + 2]! - at[i]!, `calls ${i + 1} and ${i + 3}`).toBeGreaterThanOrEqual(latency - 15);
    // ... and 2 were in flight at once (the bound is 2, not 1).
    const pairs = at.slice(1).filter((t1, i) => t1 - at[i]! < latency / 2).length;
    expect(pairs).toBeGreaterThanOrEqual(4);
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
  }, 60_000);
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
