/**
 * bench/plan-scale — what a request that touches one record costs as the zone grows, on the paths that
 * are not an apply (issue 28: "a cost that grows with the zone on a per-request path is a bug"):
 * a Plan of one create (dry run, stored), and the served OVH API's per-call reads and writes
 * (a listing filtered by sub-domain, one record by id, the zone's facts, a staged create judged, a
 * refresh publishing one staged create).
 * Not part of `npm test`: `npm run bench:plan-scale` (a fresh database on DATABASE_URL's server, else an embedded Postgres).
 *
 * In process, against the OVH simulator over real HTTPS through the real client and a fresh database
 * on DATABASE_URL's server (else an embedded Postgres): for each zone size N (BENCH_PLAN_N, default 1000,50000 records, record set
 * i owned by tenant i mod BENCH_PLAN_TENANTS, default 1000), R timed calls each (BENCH_PLAN_R, default
 * 20) after one warm-up: median ms; then, after one change of the zone, the first call of each of T
 * tenants (BENCH_PLAN_T, default 100): the first (which reads the new generation's base and indexes it,
 * once) and the round of the others; and each figure's ratio to the first N's.
 */
import type { CoreContext } from '../src/core/context.js';
import { draftRecord, draftRecords, zoneFacts } from '../src/core/ovh-api/draft-view.js';
import { plan } from '../src/core/plan/stored.js';
import { refreshDraft, stageCreate } from '../src/core/ovh-api/staging.js';
import { createTenant, type Tenant } from '../src/core/tenants/tenants.js';
import { ensureSynced } from '../src/core/zones/zones.js';
import { OvhSimulator, type SimRecordInit } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';
import { coreBench, median, positiveEnv } from './lib.js';

const SIZES = (process.env['BENCH_PLAN_N'] ?? '1000,50000').split(',').map(Number);
const TENANTS = positiveEnv('BENCH_PLAN_TENANTS', 1000);
const REPEAT = positiveEnv('BENCH_PLAN_R', 20);
const FIRST = positiveEnv('BENCH_PLAN_T', 100);
const ZONE = 'example.com';

function records(n: number): SimRecordInit[] {
  const out: SimRecordInit[] = [];
  for (let i = 0; i < n; i++)
    out.push({
      subDomain: `r${i}`,
      fieldType: i % 2 ? 'TXT' : 'A',
      target: i % 2 ? `"v=${i}"` : `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      ttl: 300,
    });
  return out;
}

type Figures = Record<string, number>;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm: what the first call builds once per generation
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function run(n: number): Promise<Figures> {
  const sim = await OvhSimulator.start({ zones: { [ZONE]: records(n) }, behavior: { expandedRecordLists: 'honoured', expandedListMaxPageSize: null } });
  const core = await coreBench('dnsplane_plan_scale', sim, ZONE, {
    lockTimeoutMs: 30_000,
    planTtlMs: 3_600_000,
    syncConcurrency: 4,
    maxChangePercent: 100,
    applyBatch: 100,
    applyCoalesceMs: 0,
    ovhApi: { draftTtlMs: 3_600_000 },
  } as CoreContext['settings']);
  const { ctx, pool } = core;
  try {
    await ensureSynced(ctx, ZONE);
    const tenants: Tenant[] = [];
    for (let i = 0; i < TENANTS; i++) tenants.push((await createTenant(pool, { name: `t${i}`, zones: [ZONE] })).tenant);
    // Record set r<i> owned by tenant t<i mod TENANTS>, as a zone of many clusters is (one statement, then the generation moved).
    await pool.query(
      `INSERT INTO ownership (zone, dns_name, record_type, tenant_id)
       SELECT $1, r.sub_domain || '.' || $1, r.field_type, (SELECT id FROM tenants WHERE name = 't' || (substr(r.sub_domain, 2)::int % $2))
       FROM records r WHERE r.zone = $1 AND r.sub_domain ~ '^r[0-9]+$'`,
      [ZONE, TENANTS],
    );
    await pool.query('UPDATE zones SET generation = generation + 1 WHERE name = $1', [ZONE]);
    const t0 = tenants[0]!;
    const own = (await draftRecords(ctx, t0, ZONE, { subDomain: 'r0' }))[0]!;
    const f: Figures = {};
    f['plan of one create'] = await timed(() =>
      plan(ctx, t0, {
        kind: 'changes',
        policy: 'sync',
        changes: { create: [{ dnsName: `new.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 }], updateOld: [], updateNew: [], delete: [] },
      }),
    );
    f['ovh api: list by subDomain'] = await timed(() => draftRecords(ctx, t0, ZONE, { subDomain: 'r0' }));
    f['ovh api: one record by id'] = await timed(() => draftRecord(ctx, t0, ZONE, own.id));
    f['ovh api: a foreign id'] = await timed(() => draftRecord(ctx, t0, ZONE, String(BigInt(own.id) + 1n)));
    f['ovh api: zone facts'] = await timed(() => zoneFacts(ctx, t0, ZONE));
    let k = 0;
    f['ovh api: staged create'] = await timed(() =>
      stageCreate(ctx, t0, ZONE, { subDomain: `staged${k++}`, fieldType: 'A', target: '192.0.2.7', ttl: 300, ttlSet: true }),
    );
    // A refresh publishing one staged create (one POST, one refresh upstream), planned under the zone
    // lock; timed alone (the staging before it reads the new generation's base: the figure below).
    const refreshes: number[] = [];
    for (let i = 0; i <= REPEAT; i++) {
      await stageCreate(ctx, t0, ZONE, { subDomain: `pub${i}`, fieldType: 'A', target: '192.0.2.8', ttl: 300, ttlSet: true });
      const started = performance.now();
      const r = await refreshDraft(ctx, t0, ZONE);
      if (r.status !== 'applied') throw new Error(`refresh: ${r.status}`);
      if (i > 0) refreshes.push(performance.now() - started);
    }
    f['ovh api: refresh of one staged create'] = median(refreshes);
    // One change of the zone (a staged create published, heard by NOTIFY as every replica hears it),
    // then the first listing of each of FIRST tenants: what each one's first call costs.
    await stageCreate(ctx, t0, ZONE, { subDomain: 'changed', fieldType: 'A', target: '192.0.2.9', ttl: 300, ttlSet: true });
    if ((await refreshDraft(ctx, t0, ZONE)).status !== 'applied') throw new Error('the change was not applied');
    const changed = (await store.getZone(pool, ZONE))!.generation;
    while ((core.heard.get(ZONE) ?? -1n) < changed) await new Promise((r) => setTimeout(r, 5));
    const r0 = performance.now();
    await draftRecords(ctx, tenants[0]!, ZONE, { subDomain: 'r0' });
    f['first listing after a change (the base read and indexed)'] = performance.now() - r0;
    const r1 = performance.now();
    await Promise.all(tenants.slice(1, FIRST).map((t, i) => draftRecords(ctx, t, ZONE, { subDomain: `r${i + 1}` })));
    f[`then the first listing of ${FIRST - 1} other tenants (round)`] = performance.now() - r1;
    return f;
  } finally {
    await core.close();
    await sim.stop();
  }
}

const results: Array<{ n: number; f: Figures }> = [];
for (const n of SIZES) {
  process.stderr.write(`zone of ${n} records …\n`);
  results.push({ n, f: await run(n) });
}
const first = results[0]!;
const names = Object.keys(first.f);
const width = Math.max(...names.map((s) => s.length));
console.log(`${'figure (median ms)'.padEnd(width)}  ${results.map((r) => `${r.n} records`.padStart(16)).join('')}  ratio last/first`);
for (const name of names) {
  const cells = results.map((r) => r.f[name]!.toFixed(2).padStart(16)).join('');
  const last = results[results.length - 1]!.f[name]!;
  console.log(`${name.padEnd(width)}  ${cells}  ×${(last / first.f[name]!).toFixed(2)}`);
}
