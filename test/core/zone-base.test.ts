/**
 * The zone base the read cache keeps (core/reads/read-cache.ts), which a Plan reuses instead of reading and
 * mapping the zone again (and keeps when it had to read it): exact at the generation asked for, never
 * handed out for another.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadCache } from '../../src/core/reads/read-cache.js';
import { compareRecords } from '../../src/core/reads/sets-index.js';
import { readZoneBase, zoneBaseOf } from '../../src/core/reads/zone-base.js';
import type { OvhRecord } from '../../src/ovh/types.js';
import { Slicer } from '../../src/core/slices.js';
import { sortSteps } from '../../src/dns/steps.js';
import { upsertRecords } from '../../src/store/records.js';
import { withTransaction } from '../../src/store/transaction.js';
import { bumpGeneration, ensureZones, getZone } from '../../src/store/zones.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const ZONE = 'base.test';
let db: TestDatabase;

beforeAll(async () => {
  db = await testDatabase();
  await ensureZones(db.pool, [ZONE]);
});

afterAll(async () => {
  await db?.drop();
});

/** Adds a record and bumps the generation in one transaction, as every change of a zone does. */
async function change(id: string, subDomain: string): Promise<bigint> {
  return withTransaction(db.pool, async (tx) => {
    await upsertRecords(tx, ZONE, [{ id, subDomain, fieldType: 'A', target: '192.0.2.1', ttl: 300 }]);
    return bumpGeneration(tx, ZONE);
  });
}

describe('ReadCache.baseAt, kept and keep', () => {
  it('is the zone at exactly that generation, the same as reading it; undefined once the zone moved past it', async () => {
    const g1 = await change('5000000001', 'a');
    const cache = new ReadCache(db.pool);
    const b1 = await cache.baseExactlyAt(ZONE, g1);
    expect(b1?.generation).toBe(g1);
    expect(b1).toEqual(await readZoneBase(db.pool, ZONE, new Slicer()));
    expect(b1!.endpoints.map((e) => e.dnsName)).toEqual([`a.${ZONE}`]);
    expect([...b1!.recordsByKey.keys()]).toEqual([`a.${ZONE} A`]);
    expect(await cache.baseExactlyAt(ZONE, g1)).toBe(b1); // kept

    const g2 = await change('5000000002', 'b');
    const b2 = await cache.baseExactlyAt(ZONE, g2);
    expect(b2?.generation).toBe(g2);
    expect(b2!.endpoints.map((e) => e.dnsName)).toEqual([`a.${ZONE}`, `b.${ZONE}`]);
    // Asked for the older generation now: the cache holds a newer one, which is not what was asked.
    expect(await cache.baseExactlyAt(ZONE, g1)).toBeUndefined();
    expect((await getZone(db.pool, ZONE))!.generation).toBe(g2);
    // kept(): only a built base of exactly that generation, never a wait; keep() never goes back.
    expect(cache.baseIfBuilt(ZONE, g2)).toBe(b2);
    expect(cache.baseIfBuilt(ZONE, g1)).toBeUndefined();
    cache.keep(ZONE, b1!);
    expect(cache.baseIfBuilt(ZONE, g2)).toBe(b2);
    const g3 = await change('5000000003', 'c');
    const b3 = await readZoneBase(db.pool, ZONE, new Slicer()); // as a Plan reads it in its snapshot
    expect(cache.baseIfBuilt(ZONE, g3)).toBeUndefined();
    cache.keep(ZONE, b3);
    expect(cache.baseIfBuilt(ZONE, g3)).toBe(b3);
    expect(await cache.baseExactlyAt(ZONE, g3)).toBe(b3); // Records views of g3 are cut from it too
  });
});

describe('zoneBaseOf', () => {
  it("sorts records in OVH's order (a first sync's) in slices, into the base the same records in order make", async () => {
    const N = 30_000;
    const inOrder = (records: OvhRecord[]) => [...records].sort(compareRecords);
    // OVH lists by id: h0, h1, … h29999 — not the base's order (h0, h1, h10, h100, …).
    const listed: OvhRecord[] = Array.from({ length: N }, (_, i) => ({
      id: String(1e9 + i),
      zone: ZONE,
      subDomain: `h${i}`,
      fieldType: 'A',
      target: '192.0.2.1',
      ttl: 300,
    }));
    const sorted = new Slicer(0);
    const fromSorted = await zoneBaseOf(ZONE, 1n, inOrder(listed), [], sorted);
    const unsorted = new Slicer(0);
    const fromListed = await zoneBaseOf(ZONE, 1n, listed.slice(), [], unsorted);
    expect(fromListed.records).toEqual(fromSorted.records);
    expect(fromListed.endpoints).toEqual(fromSorted.endpoints);
  });

  it('sorts in slices: no turn of the event loop runs more than a run of comparisons (30,000 items sorted at once: ~400,000)', async () => {
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const perTurn = new Map<number, number>();
    /** A comparison of numbers counted in the turn `at` says. */
    const counted = (at: () => number) => (a: number, b: number) => {
      perTurn.set(at(), (perTurn.get(at()) ?? 0) + 1);
      return a - b;
    };
    const items = Array.from({ length: 30_000 }, (_, i) => (i * 7919) % 30_000);
    await new Slicer(0).run(
      sortSteps(
        items,
        counted(() => turn),
      ),
    );
    ticking = false;
    expect(items).toEqual(Array.from({ length: 30_000 }, (_, i) => i));
    expect(Math.max(...perTurn.values())).toBeLessThan(100_000);
    // In order already: one pass of comparisons, no sort.
    const before = [...perTurn.values()].reduce((a, b) => a + b, 0);
    await new Slicer(0).run(
      sortSteps(
        items,
        counted(() => -1),
      ),
    );
    expect(perTurn.get(-1)).toBe(items.length - 1);
    expect(before).toBeGreaterThan(items.length);
  });
});
