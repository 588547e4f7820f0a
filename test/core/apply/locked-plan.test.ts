/**
 * The plan under the zone lock (core/plan/plan.ts computeLockedZonePlan: the zone's view in memory, only the
 * record sets at the names the request touches), and a Plan's (computeZonePlan: the same names read from
 * the read cache's base through its index, core/reads/base-index.ts), are the plan of the whole zone
 * (computeWholeZonePlan): the
 * same changes, conflicts, operations and change threshold, for change sets, desired states (SYNC,
 * scoped, create-only) and DNS UPDATEs, over zones with exclusive, shared, unowned and other tenants'
 * sets, CNAMEs and names in mixed case. Random zones and requests (fast-check) on a real Postgres.
 */
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreContext } from '../../../src/core/context.js';
import type { DnsUpdate } from '../../../src/core/plan/dns-update-plan.js';
import { computeLockedZonePlan, computeWholeZonePlan, computeZonePlan, type ZonePlan } from '../../../src/core/plan/plan.js';
import { routeInput, type PlanInput, type RawEndpoint } from '../../../src/core/plan/input.js';
import { planDigestSliced } from '../../../src/core/plan/stored.js';
import { readCacheOf } from '../../../src/core/reads/read-cache.js';
import { Slicer } from '../../../src/core/slices.js';
import { createTenant, type Tenant } from '../../../src/core/tenants/tenants.js';
import * as store from '../../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../../helpers/db.js';

const ZONE = 'locked.test';
const NAMES = ['a', 'b', 'c', 'd', 'e', 'www', '_acme-challenge', ''];
const TYPES = ['A', 'TXT', 'CNAME'] as const;
type Type = (typeof TYPES)[number];
const target = (type: Type, i: number) => (type === 'A' ? `192.0.2.${i}` : type === 'TXT' ? `v${i}` : `t${i}.example.net.`);
const fqdn = (sub: string) => (sub ? `${sub}.${ZONE}` : ZONE);

let db: TestDatabase;
let ctx: CoreContext;
let tenants: Tenant[];
let nextId = 6_000_000_000;

beforeAll(async () => {
  db = await testDatabase();
  ctx = {
    pool: db.pool,
    ovh: undefined as never,
    log: pino({ level: 'silent' }),
    settings: { zones: [ZONE], lockTimeoutMs: 60_000, planTtlMs: 3_600_000, syncConcurrency: 1, maxChangePercent: 30 },
  };
  await store.ensureZones(db.pool, [ZONE]);
  await store.markSynced(db.pool, ZONE);
  tenants = [];
  for (const name of ['me', 'other']) tenants.push((await createTenant(db.pool, { name, zones: [ZONE] })).tenant);
});

afterAll(async () => {
  await db?.drop();
});

/** A zone: per (name, type), some targets, and who owns the set (me, other, nobody, or shared between us). */
const zoneArb = fc.array(
  fc.record({
    sub: fc.constantFrom(...NAMES),
    upper: fc.boolean(),
    type: fc.constantFrom(...TYPES),
    targets: fc.uniqueArray(fc.integer({ min: 1, max: 4 }), { minLength: 0, maxLength: 3 }),
    owner: fc.constantFrom('me', 'other', 'none', 'shared'),
  }),
  { maxLength: 12 },
);

const endpointArb = fc.record({
  sub: fc.constantFrom(...NAMES.filter(Boolean)),
  type: fc.constantFrom(...TYPES),
  targets: fc.uniqueArray(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 2 }),
  ttl: fc.constantFrom(300, 600),
});
type Ep = { sub: string; type: Type; targets: number[]; ttl: number };
const raw = (e: Ep): RawEndpoint => ({
  dnsName: fqdn(e.sub),
  recordType: e.type,
  targets: (e.type === 'CNAME' ? e.targets.slice(0, 1) : e.targets).map((i) => target(e.type, i)),
  ttl: e.ttl,
});
const distinct = (eps: Ep[]) => [...new Map(eps.map((e) => [`${e.sub} ${e.type}`, e])).values()];

const inputArb: fc.Arbitrary<PlanInput> = fc.oneof(
  fc
    .record({ create: fc.array(endpointArb, { maxLength: 3 }), update: fc.array(endpointArb, { maxLength: 2 }), del: fc.array(endpointArb, { maxLength: 2 }) })
    .map(({ create, update, del }) => {
      const all = distinct([...create, ...update, ...del]);
      const c = all.slice(0, create.length),
        u = all.slice(create.length, create.length + update.length),
        d = all.slice(create.length + update.length);
      return {
        kind: 'changes' as const,
        policy: 'sync' as const,
        changes: { create: c.map(raw), updateOld: u.map(raw), updateNew: u.map(raw), delete: d.map(raw) },
      };
    }),
  fc
    .record({
      eps: fc.array(endpointArb, { maxLength: 4 }),
      policy: fc.constantFrom('sync' as const, 'upsert-only' as const, 'create-only' as const),
      scoped: fc.boolean(),
    })
    .map(({ eps, policy, scoped }) => {
      const ok = distinct(eps);
      // One CNAME per name, and no other type beside it (else the request is invalid, not a plan).
      const names = new Map<string, Ep[]>();
      for (const e of ok) names.set(e.sub, [...(names.get(e.sub) ?? []), e]);
      const valid = [...names.values()].flatMap((at) => (at.some((e) => e.type === 'CNAME') && at.length > 1 ? at.filter((e) => e.type !== 'CNAME') : at));
      return { kind: 'desired' as const, zones: [ZONE], policy, endpoints: valid.map(raw), ...(scoped ? { scope: { under: ZONE, depth: 1 } } : {}) };
    }),
  fc
    .record({
      adds: fc.array(endpointArb, { maxLength: 2 }),
      delName: fc.option(fc.constantFrom(...NAMES.filter(Boolean))),
      pre: fc.option(fc.constantFrom(...NAMES.filter(Boolean))),
    })
    .map(({ adds, delName, pre }) => {
      const update: DnsUpdate = {
        zone: ZONE,
        prerequisites: pre ? [{ kind: 'name-in-use', name: fqdn(pre) }] : [],
        updates: [
          ...adds
            .filter((e) => e.type !== 'CNAME')
            .map((e) => ({ kind: 'add' as const, name: fqdn(e.sub), type: e.type, target: target(e.type, e.targets[0]!), ttl: e.ttl })),
          ...(delName ? [{ kind: 'delete-name' as const, name: fqdn(delName) }] : []),
        ],
        acmeOnly: false,
      };
      return { kind: 'update' as const, update, policy: 'sync' as const };
    }),
);

async function writeZone(sets: Array<{ sub: string; upper: boolean; type: Type; targets: number[]; owner: string }>): Promise<void> {
  await store.withTransaction(db.pool, async (tx) => {
    const rows: store.RecordRow[] = [];
    await tx.query('DELETE FROM ownership WHERE zone = $1', [ZONE]);
    const seen = new Set<string>();
    for (const s of sets) {
      const key = `${s.sub} ${s.type}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const targets = s.type === 'CNAME' ? s.targets.slice(0, 1) : s.targets;
      for (const i of targets)
        rows.push({
          id: String(nextId++),
          subDomain: s.upper ? s.sub.toUpperCase() : s.sub,
          fieldType: s.type,
          target: s.type === 'TXT' ? `"${target(s.type, i)}"` : target(s.type, i),
          ttl: 300,
        });
      const set = { zone: ZONE, dnsName: fqdn(s.sub), recordType: s.type };
      if (s.owner === 'me' || s.owner === 'other') await store.setOwner(tx, { ...set, tenantId: tenants[s.owner === 'me' ? 0 : 1]!.id });
      if (s.owner === 'shared' && s.type !== 'CNAME') {
        for (const [k, i] of targets.entries()) await store.setOwner(tx, { ...set, tenantId: tenants[k % 2]!.id, target: target(s.type, i) });
      }
    }
    await store.replaceZoneRecords(tx, ZONE, rows);
    await store.bumpGeneration(tx, ZONE);
  });
}

/** The plan's digest and threshold, or the error's text. */
async function outcome(run: () => Promise<ZonePlan>): Promise<string> {
  try {
    const plan = await run();
    return `${await planDigestSliced([plan], new Slicer())} ${JSON.stringify(plan.threshold)} ${JSON.stringify(plan.changes)} ${JSON.stringify(plan.operations)}`;
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

describe('the plan under the zone lock', () => {
  it('is the plan of the whole zone, for any zone and request', async () => {
    await fc.assert(
      fc.asyncProperty(zoneArb, inputArb, async (sets, input) => {
        // A new generation: the view is read again (its upkeep by applies is zone-memory.test.ts's).
        await writeZone(sets);
        const tenant = tenants[0]!;
        let routed: Awaited<ReturnType<typeof routeInput>>;
        try {
          routed = await routeInput(ctx, tenant, input);
        } catch {
          return; // invalid input: neither plans
        }
        const whole = await outcome(() => store.withSnapshot(db.pool, (q) => computeWholeZonePlan(ctx, q, tenant, ZONE, routed)));
        const locked = await outcome(() => store.withTransaction(db.pool, async (tx) => (await computeLockedZonePlan(ctx, tx, tenant, ZONE, routed)).plan));
        // A Plan's: the read cache's base at that generation, indexed (core/reads/base-index.ts).
        const indexed = await outcome(() => store.withSnapshot(db.pool, (q) => computeZonePlan(ctx, q, tenant, ZONE, routed, undefined, readCacheOf(ctx))));
        expect(locked).toBe(whole);
        expect(indexed).toBe(whole);
      }),
      { numRuns: 150 },
    );
  });
});
