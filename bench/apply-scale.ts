/**
 * bench/apply-scale — what one apply costs as the zone grows (issue 28, part 1). Not part of `npm test`:
 * `npx tsx bench/apply-scale.ts`.
 *
 * In process, against the OVH simulator over real HTTPS through the real client and a fresh
 * database on DATABASE_URL's server (else an embedded Postgres): for each zone size N (BENCH_APPLY_N, default 1000,50000 records)
 *  - one one-record create applied alone, R times (BENCH_APPLY_R, default 5): min / median / max ms;
 *  - C one-record creates (BENCH_APPLY_C, default 100), one per tenant, all at the same moment, with
 *    coalescing on (DNSPLANE_APPLY_COALESCE's default, 2 s) and the default lock timeout (30 s):
 *    applied / refused, the slowest answer, the refreshes sent and the coalesced groups' sizes;
 *  - two replicas (two pools on the database, each its own view) taking turns, R times each, each
 *    hearing the other's NOTIFY (BENCH_APPLY_DEAF=1: neither listens): median ms, and how many of
 *    those applies read the zone whole;
 * and the ratio of each figure at N to the first N's.
 */
import { apply } from '../src/core/apply/index.js';
import type { CoreContext } from '../src/core/context.js';
import { createTenant, type Tenant } from '../src/core/tenants/tenants.js';
import { heardZoneChange, zoneMemoryReads } from '../src/core/reads/zone-memory.js';
import { ensureSynced } from '../src/core/zones/zones.js';
import { OvhSimulator, type SimRecordInit } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';
import { coreBench, median, positiveEnv } from './lib.js';

const SIZES = (process.env['BENCH_APPLY_N'] ?? '1000,50000').split(',').map(Number);
const REPEAT = positiveEnv('BENCH_APPLY_R', 5);
const CONCURRENT = positiveEnv('BENCH_APPLY_C', 100);
const ZONE = 'example.com';
const TYPES = ['A', 'AAAA', 'TXT', 'CNAME'] as const;

function records(n: number): SimRecordInit[] {
  const out: SimRecordInit[] = [];
  for (let i = 0; i < n; i++) {
    const type = TYPES[i % TYPES.length]!;
    const target =
      type === 'A'
        ? `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
        : type === 'AAAA'
          ? `2001:db8::${i.toString(16)}`
          : type === 'TXT'
            ? `"v=${i}"`
            : `t${i}.${ZONE}.`;
    out.push({ subDomain: `r${i}`, fieldType: type, target, ttl: 300 });
  }
  return out;
}

interface Figures {
  n: number;
  alone: number[];
  applied: number;
  refused: number;
  slowest: number;
  refreshes: number;
  groups: number[];
  heapMb: number;
  turns: number[];
  wholeReads: number;
}

let heapMb = 0;
let turnsMs: number[] = [];
let wholeReads = 0;

async function run(n: number): Promise<Figures> {
  const sim = await OvhSimulator.start({ zones: { [ZONE]: records(n - 2) }, behavior: { expandedRecordLists: 'honoured', expandedListMaxPageSize: null } });
  const groups: number[] = [];
  // Every metric a no-op but the groups' sizes.
  const core = await coreBench(
    'dnsplane_apply_scale',
    sim,
    ZONE,
    { lockTimeoutMs: 30_000, planTtlMs: 3_600_000, syncConcurrency: 4, maxChangePercent: 100, applyBatch: 100, applyCoalesceMs: 2_000 },
    {
      applyGroupPublished: (_z: string, size: number) => groups.push(size),
    },
    { listen: process.env['BENCH_APPLY_DEAF'] !== '1' },
  );
  const { ctx, pool } = core;
  try {
    await ensureSynced(ctx, ZONE);
    const tenants: Tenant[] = [];
    for (let i = 0; i < CONCURRENT; i++) tenants.push((await createTenant(pool, { name: `t${i}`, zones: [ZONE] })).tenant);
    const create = (tenant: Tenant, name: string) =>
      apply(ctx, tenant, {
        input: {
          kind: 'changes',
          policy: 'sync',
          changes: { create: [{ dnsName: `${name}.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 }], updateOld: [], updateNew: [], delete: [] },
        },
      });
    // Warm: the first apply reads what it needs for the first time.
    await create(tenants[0]!, 'warm');
    const alone: number[] = [];
    for (let i = 0; i < REPEAT; i++) {
      const t0 = performance.now();
      const r = await create(tenants[0]!, `alone${i}`);
      alone.push(performance.now() - t0);
      if (r.zones[0]?.status !== 'applied') throw new Error(`alone ${i}: ${r.zones[0]?.status} ${r.zones[0]?.error?.message}`);
    }
    groups.length = 0;
    sim.clearCalls();
    const t0 = performance.now();
    let slowest = 0;
    const outcomes = await Promise.all(
      tenants.map((t, i) =>
        create(t, `storm${i}`).then(
          (r) => {
            slowest = Math.max(slowest, performance.now() - t0);
            return r.zones[0]?.status === 'applied';
          },
          () => {
            slowest = Math.max(slowest, performance.now() - t0);
            return false;
          },
        ),
      ),
    );
    const applied = outcomes.filter(Boolean).length;
    const refreshes = sim.calls().filter((c) => c.method === 'POST' && c.path.endsWith('/refresh')).length;
    const stormGroups = [...groups];
    // Two replicas taking turns: a second pool (its own view), each hearing NOTIFY (as server/server.ts wires it)
    // unless BENCH_APPLY_DEAF; the time of each apply, and how often a view was read whole.
    const pool2 = new (await import('pg')).default.Pool({ connectionString: core.url, max: 10 });
    pool2.on('error', () => undefined);
    const journal2 = store.createSidePool(pool2);
    journal2.on('error', () => undefined);
    const deaf = process.env['BENCH_APPLY_DEAF'] === '1';
    // The first replica (core's pool) listens as coreBench wires it; the second as server/server.ts wires it too.
    const listeners = deaf ? [] : [await store.listen(pool2, { zone: (z, g, changed) => heardZoneChange(pool2, z, g, changed) })];
    const ctx2: CoreContext = { ...ctx, pool: pool2, journalPool: journal2 };
    await create(tenants[0]!, 'warm2').then(() => undefined);
    const readsBefore = (zoneMemoryReads.get(pool) ?? 0) + (zoneMemoryReads.get(pool2) ?? 0);
    const turns: number[] = [];
    for (let i = 0; i < REPEAT * 2; i++) {
      const side = i % 2 ? ctx2 : ctx;
      // Wait for the other replica's NOTIFY to arrive, as a real client's next request would be later.
      await new Promise((r) => setTimeout(r, 20));
      const t1 = performance.now();
      await apply(side, tenants[0]!, {
        input: {
          kind: 'changes',
          policy: 'sync',
          changes: { create: [{ dnsName: `turn${i}.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 }], updateOld: [], updateNew: [], delete: [] },
        },
      });
      turns.push(performance.now() - t1);
    }
    turnsMs = turns;
    wholeReads = (zoneMemoryReads.get(pool) ?? 0) + (zoneMemoryReads.get(pool2) ?? 0) - readsBefore;
    for (const l of listeners) await l.stop();
    await journal2.end();
    await pool2.end();
    global.gc?.();
    heapMb = process.memoryUsage().heapUsed / 2 ** 20;
    return { n, alone, applied, refused: outcomes.length - applied, slowest, refreshes, groups: stormGroups, heapMb, turns: turnsMs, wholeReads };
  } finally {
    await core.close();
    await sim.stop();
  }
}

const results: Figures[] = [];
for (const n of SIZES) {
  const f = await run(n);
  results.push(f);
  const first = results[0]!;
  console.log(
    [
      `N=${n}`,
      `alone ms min/med/max ${Math.min(...f.alone).toFixed(0)}/${median(f.alone).toFixed(0)}/${Math.max(...f.alone).toFixed(0)} (median ×${(median(f.alone) / median(first.alone)).toFixed(2)})`,
      `${CONCURRENT} at once: ${f.applied} applied, ${f.refused} refused, slowest ${(f.slowest / 1000).toFixed(1)} s (×${(f.slowest / first.slowest).toFixed(2)})`,
      `refreshes ${f.refreshes}, groups ${f.groups.join(' ')}`,
      `heap after ${f.heapMb.toFixed(0)} MB`,
      `two replicas taking turns (${process.env['BENCH_APPLY_DEAF'] === '1' ? 'no NOTIFY' : 'NOTIFY heard'}): median ${median(f.turns).toFixed(0)} ms, whole reads ${f.wholeReads} of ${f.turns.length}`,
    ].join(' | '),
  );
}
