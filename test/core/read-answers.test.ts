/**
 * One answer per generation, sliced per tenant (core/reads/read-cache.ts): a zone's base is read once per
 * generation, its answers are cut once — the includeForeign answer shared by every tenant, each
 * tenant's own answer a slice of it —, encodings are kept per view, and all of it within a byte
 * bound, rebuilt on demand past it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadCache, type KeptItem } from '../../src/core/reads/read-cache.js';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import { setOwner } from '../../src/store/ownership.js';
import { upsertRecords } from '../../src/store/records.js';
import { withTransaction } from '../../src/store/transaction.js';
import { bumpGeneration, ensureZones } from '../../src/store/zones.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const ZONE = 'answers.test';
/** Record sets in the zone, and tenants owning them round-robin (the last sets nobody's). */
const SETS = 600;
const TENANTS = 20;
let db: TestDatabase;
let tenants: Tenant[];
let generation: bigint;

beforeAll(async () => {
  db = await testDatabase();
  await ensureZones(db.pool, [ZONE]);
  tenants = [];
  for (let i = 0; i < TENANTS; i++) tenants.push((await createTenant(db.pool, { name: `t${i}`, zones: [ZONE] })).tenant);
  generation = await withTransaction(db.pool, async (tx) => {
    await upsertRecords(
      tx,
      ZONE,
      Array.from({ length: SETS }, (_, i) => ({
        id: String(7_000_000_000 + i),
        subDomain: `h${i}`,
        fieldType: 'A',
        target: `10.0.${i >> 8}.${i & 255}`,
        ttl: 300,
      })),
    );
    for (let i = 0; i < SETS - 100; i++) await setOwner(tx, { zone: ZONE, dnsName: `h${i}.${ZONE}`, recordType: 'A', tenantId: tenants[i % TENANTS]!.id });
    return bumpGeneration(tx, ZONE);
  });
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

/** Adds a record and bumps the generation in one transaction, as every change of a zone does. */
async function change(i: number): Promise<bigint> {
  return withTransaction(db.pool, async (tx) => {
    await upsertRecords(tx, ZONE, [{ id: String(7_100_000_000 + i), subDomain: `new${i}`, fieldType: 'A', target: '192.0.2.1', ttl: 300 }]);
    return bumpGeneration(tx, ZONE);
  });
}

const bytesOf = (text: string) => async () => Buffer.from(text);

describe('ReadCache answers', () => {
  it('hands every tenant the same includeForeign answer of a generation, and its own answer as a slice of it', async () => {
    const cache = new ReadCache(db.pool);
    const a = await cache.view(ZONE, generation, 't0', true);
    const b = await cache.view(ZONE, generation, 't1', true);
    expect(b.endpoints).toBe(a.endpoints);
    expect(a.endpoints).toHaveLength(SETS);
    expect(cache.stats()).toMatchObject({ baseBuilds: 1, answerBuilds: 1 });

    const own = await cache.view(ZONE, generation, 't3', false);
    expect(own.endpoints).toHaveLength((SETS - 100) / TENANTS);
    expect(own.endpoints.every((e) => e.labels?.['owner'] === 't3')).toBe(true);
    // The same endpoint objects as the shared answer, in its order: nothing copied per tenant.
    const all = new Set(a.endpoints);
    expect(own.endpoints.every((e) => all.has(e))).toBe(true);
    expect(own.endpoints).toEqual(a.endpoints.filter((e) => e.labels?.['owner'] === 't3'));
    expect(await cache.view(ZONE, generation, 't3', false)).toEqual(own);
    expect((await cache.view(ZONE, generation, 't3', false)).endpoints).toBe(own.endpoints);
    // A tenant that owns nothing there: nothing.
    expect((await cache.view(ZONE, generation, 'nobody', false)).endpoints).toEqual([]);
    expect(cache.stats()).toMatchObject({ baseBuilds: 1, answerBuilds: 1 });

    // Encoded once per view and form: every includeForeign caller gets the same bytes.
    let encodes = 0;
    const encode = async () => {
      encodes++;
      return Buffer.from(JSON.stringify(a.endpoints));
    };
    const first = await Promise.all([cache.encoded(a.endpoints, 'json', encode), cache.encoded(b.endpoints, 'json', encode)]);
    expect(first[1]).toBe(first[0]);
    expect(await cache.encoded((await cache.view(ZONE, generation, 't9', true)).endpoints, 'json', encode)).toBe(first[0]);
    expect(encodes).toBe(1);
    await cache.encoded(a.endpoints, 'binary', bytesOf('other form'));
    expect(cache.stats().encodes).toBe(2);
  });

  it("accounts a tenant's own encodings in proportion to its records, the shared answer once", async () => {
    const cache = new ReadCache(db.pool);
    for (const t of tenants) {
      const own = await cache.view(ZONE, generation, t.name, false);
      await cache.encoded(own.endpoints, 'json', async () => Buffer.from(JSON.stringify(own.endpoints)));
      const shared = await cache.view(ZONE, generation, t.name, true);
      await cache.encoded(shared.endpoints, 'json', async () => Buffer.from(JSON.stringify(shared.endpoints)));
    }
    const kept = cache.kepts();
    const of = (p: (k: KeptItem) => boolean) => kept.filter(p);
    expect(of((k) => k.kind === 'base')).toHaveLength(1);
    expect(of((k) => k.kind === 'answers')).toHaveLength(1);
    expect(of((k) => k.kind === 'encoding' && k.view === '*')).toHaveLength(1);
    const perTenant = of((k) => k.kind === 'encoding' && k.view !== '*');
    expect(perTenant.map((k) => k.view).sort()).toEqual(tenants.map((t) => t.name).sort());
    const whole = of((k) => k.kind === 'encoding' && k.view === '*')[0]!.bytes;
    for (const k of perTenant) {
      // 25 of the zone's 600 sets: about 25/600 of the whole answer's bytes, not the whole.
      expect(k.bytes).toBeLessThan((whole * 2 * (SETS - 100)) / TENANTS / SETS);
    }
    expect(cache.stats().bytes).toBe(kept.reduce((n, k) => n + k.bytes, 0));
  });

  it('keeps within its byte bound, dropping the least recently used and building it again when asked', async () => {
    const unbounded = new ReadCache(db.pool);
    // Room for the answers and a few encodings, not for the base beside them, nor for every tenant's encodings.
    await unbounded.view(ZONE, generation, 't0', true);
    const answers = unbounded.kepts().find((k) => k.kind === 'answers')!.bytes;
    const maxBytes = answers + 30_000;
    const cache = new ReadCache(db.pool, { maxBytes });
    // An answer handed out (being sent, say) stays whole when the cache drops it.
    const early = await cache.view(ZONE, generation, 't0', true);
    const earlyText = JSON.stringify(early.endpoints);
    const earlyBytes = await cache.encoded(early.endpoints, 'json', bytesOf(earlyText));
    for (let round = 0; round < 3; round++) {
      for (const t of [...tenants, { name: 'nobody' }]) {
        for (const includeForeign of [false, true]) {
          const view = await cache.view(ZONE, generation, t.name, includeForeign);
          expect(view.endpoints).toEqual((await unbounded.view(ZONE, generation, t.name, includeForeign)).endpoints);
          const text = JSON.stringify(view.endpoints);
          expect((await cache.encoded(view.endpoints, 'json', bytesOf(text))).toString()).toBe(text);
          expect(cache.stats().bytes).toBeLessThanOrEqual(maxBytes);
        }
      }
    }
    const s = cache.stats();
    expect(s.evictions).toBeGreaterThan(0);
    expect(earlyBytes.toString()).toBe(earlyText);
    expect(JSON.stringify(early.endpoints)).toBe(earlyText);
    // Built again on demand: the encodings that did not fit, and the answers with them.
    expect(s.encodes).toBeGreaterThan(2 * TENANTS);
    expect(s.answerBuilds).toBeGreaterThan(1);

    // A bound smaller than the base alone: nothing is kept, every answer is still right.
    const tiny = new ReadCache(db.pool, { maxBytes: 1_000 });
    for (let i = 0; i < 3; i++) {
      expect((await tiny.view(ZONE, generation, 't1', false)).endpoints).toEqual((await unbounded.view(ZONE, generation, 't1', false)).endpoints);
      expect(tiny.stats().bytes).toBeLessThanOrEqual(1_000);
    }
    expect(tiny.stats().baseBuilds).toBe(3);
  });

  it("builds a new generation's base and answers once for every tenant polling after a change, and drops the old one", async () => {
    const cache = new ReadCache(db.pool);
    for (const t of tenants) await cache.view(ZONE, generation, t.name, false);
    expect(cache.stats()).toMatchObject({ baseBuilds: 1, answerBuilds: 1 });
    const next = await change(1);
    // Every tenant's next poll at once, and then one by one.
    const views = await Promise.all(tenants.flatMap((t) => [cache.view(ZONE, next, t.name, false), cache.view(ZONE, next, t.name, true)]));
    for (const t of tenants) await cache.view(ZONE, next, t.name, false);
    expect(views.every((v) => v.generation === next)).toBe(true);
    expect(cache.stats()).toMatchObject({ baseBuilds: 2, answerBuilds: 2 });
    expect(views.filter((_, i) => i % 2 === 1).every((v) => v.endpoints === views[1]!.endpoints)).toBe(true);
    expect(views[1]!.endpoints.map((e) => e.dnsName)).toContain(`new1.${ZONE}`);
    // Nothing of the older generation is kept.
    expect(cache.kepts().every((k) => k.generation === next)).toBe(true);
    generation = next;
  });
});

describe('ReadCache answers, generation after generation', () => {
  it("keeps no older generation's answers alive once a newer one's are kept", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const cache = new ReadCache(db.pool, { maxBytes: 2 ** 30 });
    const first = await change(9001);
    const older = new WeakRef((await cache.view(ZONE, first, tenants[0]!.name, true)).endpoints);
    const second = await change(9002);
    const newer = await cache.view(ZONE, second, tenants[0]!.name, true);
    expect(newer.generation).toBe(second);
    expect(
      cache
        .kepts()
        .filter((k) => k.kind === 'answers')
        .map((k) => k.generation),
    ).toEqual([second]);
    // A WeakRef's target is kept until the job that read it ends: collect after a turn of the loop.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setImmediate(r));
    expect(older.deref(), "the older generation's answers, still reachable").toBeUndefined();
  });
});
