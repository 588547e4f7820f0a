/**
 * The estate at test size (issue 42), on a real Postgres and the simulator over HTTPS: first syncs of
 * more zones than the pool has connections all succeed on the first try, queued, never holding a
 * connection while OVH is read; the read cache counts a build in flight against its bound and builds
 * each zone once per generation however many callers wait; a lock holder's view of a zone comes from
 * the read cache's base at its generation instead of a read of the zone; applies to more zones than
 * may hold locks at once wait their turn instead of failing for want of a connection; an admin's
 * assignment of one set reads that set, not the zone.
 */
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assignOwnership } from '../../src/core/admin/assign.js';
import { importTxtRegistry } from '../../src/core/admin/import-txt.js';
import { apply } from '../../src/core/apply/index.js';
import type { CoreContext } from '../../src/core/context.js';
import { ReadCache, estateFit } from '../../src/core/reads/read-cache.js';
import { BUILD_BYTES_PER_RECORD } from '../../src/core/reads/sizing.js';
import { baseBytes, readZoneBase } from '../../src/core/reads/zone-base.js';
import { Slicer } from '../../src/core/slices.js';
import { baseIndexOf, INDEX_BYTES_PER_RECORD } from '../../src/core/reads/base-index.js';
import { keptZoneMemory, PINNED_BYTES_PER_RECORD, zoneMemoryReads } from '../../src/core/reads/zone-memory.js';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import { firstSyncsOf } from '../../src/core/zones/first-syncs.js';
import { ensureSynced } from '../../src/core/zones/zones.js';
import { OvhSimulator, type SimRecordInit } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { ovhApiFor } from '../helpers/ovh-api.js';
import { until } from '../helpers/until.js';

const ZONES = Array.from({ length: 6 }, (_, i) => `z${i}.estate.test`);
const RECORDS = 400;
/** A zone of the simulator's no other test syncs (ReadCache.adopt's). */
const FRESH = 'fresh.estate.test';
/** A zone of A records and external-dns's TXT registry beside them (the import's). */
const REGISTRY = 'registry.estate.test';
const registrySeed = (): SimRecordInit[] =>
  Array.from({ length: 200 }, (_, i) => [
    { subDomain: `h${i}`, fieldType: 'A', target: `10.9.0.${i}`, ttl: 300 },
    { subDomain: `a-h${i}`, fieldType: 'TXT', target: '"heritage=external-dns,external-dns/owner=cluster,external-dns/resource=service/default/h"', ttl: 300 },
  ]).flat();

function seed(z: number): SimRecordInit[] {
  return Array.from({ length: RECORDS }, (_, i) => ({ subDomain: `h${i}`, fieldType: 'A', target: `10.${z}.${i >> 8}.${i & 255}`, ttl: 300 }));
}

let sim: OvhSimulator;
let db: TestDatabase;
/** A pool of two connections, as a replica's pool is small beside what twenty zones ask of it. */
let pool: pg.Pool;
let journalPool: pg.Pool;
let ctx: CoreContext;
let tenant: Tenant;

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { ...Object.fromEntries(ZONES.map((z, i) => [z, seed(i)])), [FRESH]: seed(9), [REGISTRY]: registrySeed() } });
  db = await testDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2, connectionTimeoutMillis: 60_000 });
  journalPool = store.createSidePool(pool);
  ctx = {
    pool,
    journalPool,
    ovh: ovhApiFor(sim),
    log: pino({ level: 'silent' }),
    settings: {
      zones: ZONES,
      lockTimeoutMs: 60_000,
      planTtlMs: 3_600_000,
      syncConcurrency: 4,
      firstSyncs: 2,
      maxChangePercent: 100,
      applyBatch: 100,
      applyCoalesceMs: 0,
    },
  };
  await store.ensureZones(pool, ZONES);
  tenant = (await createTenant(pool, { name: 'cluster', zones: ZONES })).tenant;
});

afterAll(async () => {
  await journalPool?.end();
  await pool?.end();
  await sim?.stop();
  await db?.drop();
});

describe('first syncs', () => {
  it('of more zones than the pool has connections all succeed on the first try, two read at a time, each once, no connection held while OVH is read', async () => {
    // Its own pool: two connections, and a caller waits at most a second for one. Each zone's SOA is
    // held 1.5 s: a first sync that held a connection while it read OVH would starve the others.
    const tight = new pg.Pool({ connectionString: db.url, max: 2, connectionTimeoutMillis: 1_000 });
    const syncCtx = { ...ctx, pool: tight };
    const held = sim.faults.fail({ method: 'GET', path: '/domain/zone/*/soa', effect: { kind: 'delay', ms: 1_500 } });
    try {
      const syncs = firstSyncsOf(syncCtx);
      const callers = ZONES.flatMap((zone) => [ensureSynced(syncCtx, zone), ensureSynced(syncCtx, zone), ensureSynced(syncCtx, zone)]);
      let most = 0;
      let sawWaiting = false;
      let done = false;
      const watching = (async () => {
        while (!done) {
          most = Math.max(most, syncs.running);
          if (syncs.waiting > 0) sawWaiting = true;
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      const zones = await Promise.all(callers).finally(() => (done = true));
      await watching;
      expect(zones.every((z) => z.state === 'synced')).toBe(true);
      expect(most).toBe(2);
      expect(sawWaiting).toBe(true);
      // One SOA read per zone, however many callers asked.
      const soaReads = sim.calls().filter((c) => c.method === 'GET' && c.path.endsWith('/soa'));
      expect(soaReads.map((c) => c.path).sort()).toEqual(ZONES.map((z) => `/domain/zone/${z}/soa`).sort());
      for (const zone of ZONES) expect(await store.listRecords(pool, zone)).toHaveLength(sim.draftRecords(zone).length);
    } finally {
      held.remove();
      await tight.end();
    }
  });
});

describe("a first sync's records", () => {
  it("are the zone's base at the sync's generation: its readers share it, no record is read back from Postgres, and it is the base a read makes", async () => {
    const cache = new ReadCache(pool);
    const adoptCtx = { ...ctx, reads: cache };
    await store.ensureZones(pool, [FRESH]);
    const before = store.recordRowsRead.whole;
    const synced = await ensureSynced(adoptCtx, FRESH);
    const views = await Promise.all(Array.from({ length: 5 }, () => cache.view(FRESH, synced.generation, tenant.name, true)));
    expect(store.recordRowsRead.whole - before).toBe(0);
    expect(cache.stats()).toMatchObject({ baseBuilds: 1, answerBuilds: 1 });
    expect(views.every((v) => v.generation === synced.generation && v.endpoints.length === RECORDS + 1)).toBe(true);
    // Exactly what a read of the zone from Postgres makes.
    const adopted = (await cache.baseExactlyAt(FRESH, synced.generation))!;
    const read = await readZoneBase(pool, FRESH, new Slicer());
    expect(read.generation).toBe(synced.generation);
    expect(adopted.records).toEqual(read.records);
    expect(adopted.endpoints).toEqual(read.endpoints);
    expect([...adopted.recordsByKey]).toEqual([...read.recordsByKey]);
    expect(adopted.ownership).toEqual(read.ownership);
    // Accounted as a base, the reservation of its build gone.
    expect(
      cache
        .kepts()
        .map((k) => `${k.kind} ${k.zone}`)
        .sort(),
    ).toEqual([`answers ${FRESH}`, `base ${FRESH}`]);
  });
});

describe("a TXT registry import's records", () => {
  it("are the zone's base at the import's generation (only ownership moved): no record read back, the base a read makes", async () => {
    const cache = new ReadCache(pool);
    const importCtx = { ...ctx, reads: cache };
    await store.ensureZones(pool, [REGISTRY]);
    const synced = await ensureSynced(importCtx, REGISTRY);
    await cache.view(REGISTRY, synced.generation, tenant.name, true);
    const owner = (await createTenant(pool, { name: 'registry-owner', zones: [REGISTRY] })).tenant;
    const before = store.recordRowsRead.whole;
    const imported = await importTxtRegistry(
      importCtx,
      owner,
      { zone: REGISTRY, owners: { cluster: owner.name }, txtPrefix: '', txtSuffix: '', dryRun: false },
      async () => {},
    );
    expect(imported.adoptions.filter((a) => a.outcome === 'adopted')).toHaveLength(400); // each A and its registry TXT
    expect(imported.generation).toBeGreaterThan(synced.generation);
    const view = await cache.view(REGISTRY, imported.generation, owner.name, false);
    expect(store.recordRowsRead.whole - before).toBe(0);
    expect(view.endpoints).toHaveLength(400);
    const adopted = (await cache.baseExactlyAt(REGISTRY, imported.generation))!;
    const read = await readZoneBase(pool, REGISTRY, new Slicer());
    expect(adopted.records).toEqual(read.records);
    expect(adopted.endpoints).toEqual(read.endpoints);
    expect(adopted.ownership).toEqual(read.ownership);
    expect(adopted.ownership).toHaveLength(400);
  });
});

describe('the read cache at the estate', () => {
  it('builds each zone once per generation however many callers wait, within a bound that holds one zone', async () => {
    const cache = new ReadCache(pool, { maxBytes: RECORDS * 1200 });
    const gens = await store.getGenerations(pool, ZONES);
    const views = await Promise.all(ZONES.flatMap((zone) => Array.from({ length: 10 }, () => cache.view(zone, gens.get(zone)!, tenant.name, true))));
    // The apex NS set besides the zone's own sets.
    expect(views.every((v) => v.endpoints.length === RECORDS + 1)).toBe(true);
    expect(cache.stats()).toMatchObject({ baseBuilds: ZONES.length, answerBuilds: ZONES.length });
    expect(cache.stats().bytes).toBeLessThanOrEqual(cache.maxBytes);
  });

  it('counts a build in flight against the bound: what it will take is reserved, older items dropped to make room', async () => {
    const cache = new ReadCache(pool, { maxBytes: RECORDS * (BUILD_BYTES_PER_RECORD + 50) });
    const gens = await store.getGenerations(pool, ZONES);
    await cache.view(ZONES[0]!, gens.get(ZONES[0]!)!, tenant.name, true);
    expect(cache.kepts().map((k) => k.zone)).toContain(ZONES[0]);
    // The build of the second zone waits on its ownership read (another session holds the table).
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE ownership IN ACCESS EXCLUSIVE MODE');
    const building = cache.view(ZONES[1]!, gens.get(ZONES[1]!)!, tenant.name, true);
    try {
      await until('the build reserved', () => cache.kepts().some((k) => k.kind === 'build' && k.zone === ZONES[1]));
      const reserved = cache.kepts().find((k) => k.kind === 'build')!;
      expect(reserved.bytes).toBe(sim.draftRecords(ZONES[1]!).length * BUILD_BYTES_PER_RECORD);
      // Room was made for it: the first zone's items are gone, and the bound holds with the build counted.
      expect(cache.kepts().filter((k) => k.zone === ZONES[0])).toEqual([]);
      expect(cache.stats().bytes).toBeLessThanOrEqual(cache.maxBytes);
    } finally {
      await blocker.query('COMMIT');
      await blocker.end();
    }
    expect((await building).endpoints).toHaveLength(RECORDS + 1);
    expect(cache.kepts().some((k) => k.kind === 'build')).toBe(false);
    expect(
      cache
        .kepts()
        .filter((k) => k.zone === ZONES[1])
        .map((k) => k.kind),
    ).toEqual(['base', 'answers']);
  });

  it("counts a base's index with its base once it is made (Plans and the served OVH API make it)", async () => {
    const cache = new ReadCache(pool);
    const zone = ZONES[3]!;
    const generation = (await store.getGenerations(pool, [zone])).get(zone)!;
    await cache.view(zone, generation, tenant.name, true);
    const baseItem = () => cache.kepts().find((k) => k.kind === 'base' && k.zone === zone)!;
    const before = baseItem().bytes;
    const base = cache.baseIfBuilt(zone, generation)!;
    await baseIndexOf(base, zone);
    expect(baseItem().bytes).toBe(before + base.records.length * INDEX_BYTES_PER_RECORD);
    expect(cache.stats().bytes).toBe(cache.kepts().reduce((a, k) => a + k.bytes, 0));
  });

  it('says how many of the zones fit the bound, the smallest first', () => {
    expect(estateFit(10 * BUILD_BYTES_PER_RECORD * 1000, [1000, 2000, 3000, 4000, 5000])).toEqual({ bytes: 15_000 * BUILD_BYTES_PER_RECORD, zones: 5, fit: 4 });
    expect(estateFit(2 ** 30, [1000, 2000])).toMatchObject({ fit: 2 });
  });
});

describe('the apply path at the estate', () => {
  it("takes a lock holder's view of a zone from the read cache's base at its generation, not from a read of the zone", async () => {
    const zone = ZONES[2]!;
    const cache = new ReadCache(pool);
    const withCache = { ...ctx, reads: cache };
    const generation = (await store.getGenerations(pool, [zone])).get(zone)!;
    await cache.view(zone, generation, tenant.name, true); // the base at the current generation, built
    const reads = zoneMemoryReads.get(pool) ?? 0;
    const done = await apply(withCache, tenant, {
      input: {
        kind: 'desired',
        zones: [zone],
        endpoints: [{ dnsName: `new.${zone}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 }],
        policy: 'upsert-only',
      },
    });
    expect(done.zones[0]!.status).toBe('applied');
    expect(zoneMemoryReads.get(pool) ?? 0).toBe(reads);
    // The view holds the zone as Postgres does after the apply.
    const memory = keptZoneMemory(pool, zone)!;
    expect(memory.allRecords()).toEqual(await store.listRecords(pool, zone));
  });

  it("counts the apply path's view of a zone against the read cache's bound, and forgets it when room is needed", async () => {
    const zone = ZONES[4]!;
    const cache = new ReadCache(pool, { maxBytes: RECORDS * 600 });
    const withCache = { ...ctx, reads: cache };
    const create = (name: string, at = zone) =>
      apply(withCache, tenant, {
        input: {
          kind: 'desired',
          zones: [at],
          endpoints: [{ dnsName: `${name}.${at}`, recordType: 'A', targets: ['192.0.2.2'], ttl: 300 }],
          policy: 'upsert-only',
        },
      });
    expect((await create('viewed')).zones[0]!.status).toBe('applied');
    const view = cache.kepts().find((k) => k.kind === 'view' && k.zone === zone);
    // Accounted when the apply took it (before its own record was written in): read from Postgres (the
    // cache held no base of the zone), it owns its base, counted whole with its index.
    const memory = keptZoneMemory(pool, zone)!;
    expect(memory.ownsBase).toBe(true);
    expect(view?.bytes).toBe(baseBytes(memory.base) + memory.base.records.length * INDEX_BYTES_PER_RECORD);
    // Another zone's view needs the room: the first is forgotten, and made again at its next apply.
    expect((await create('other', ZONES[5]!)).zones[0]!.status).toBe('applied');
    expect(
      cache
        .kepts()
        .filter((k) => k.kind === 'view')
        .map((k) => k.zone),
    ).toEqual([ZONES[5]]);
    expect(keptZoneMemory(pool, zone)).toBeUndefined();
    expect((await create('again')).zones[0]!.status).toBe('applied');
    expect(keptZoneMemory(pool, zone)!.allRecords()).toEqual(await store.listRecords(pool, zone));
  });

  it("counts a view standing on the read cache's base as what keeps that base alive, and forgets it with the base dropped for room", async () => {
    const zone = ZONES[3]!;
    const other = ZONES[1]!;
    const cache = new ReadCache(pool, { maxBytes: RECORDS * 900 });
    const withCache = { ...ctx, reads: cache };
    const create = (name: string, at: string) =>
      apply(withCache, tenant, {
        input: {
          kind: 'desired',
          zones: [at],
          endpoints: [{ dnsName: `${name}.${at}`, recordType: 'A', targets: ['192.0.2.3'], ttl: 300 }],
          policy: 'upsert-only',
        },
      });
    const reads = zoneMemoryReads.get(pool) ?? 0;
    await cache.view(zone, (await store.getGenerations(pool, [zone])).get(zone)!, tenant.name, true);
    expect((await create('pinned', zone)).zones[0]!.status).toBe('applied');
    expect(zoneMemoryReads.get(pool) ?? 0).toBe(reads);
    const memory = keptZoneMemory(pool, zone)!;
    expect(memory.ownsBase).toBe(false);
    const kinds = () => cache.kepts().map((k) => `${k.kind} ${k.zone}`);
    expect(kinds()).toContain(`base ${zone}`);
    const view = cache.kepts().find((k) => k.kind === 'view' && k.zone === zone)!;
    expect(view.bytes).toBe(memory.base.records.length * PINNED_BYTES_PER_RECORD);
    // Another zone's reads need the room: the base goes for it, and the view that stood on it with it.
    await cache.view(other, (await store.getGenerations(pool, [other])).get(other)!, tenant.name, true);
    expect(kinds()).not.toContain(`base ${zone}`);
    expect(kinds()).not.toContain(`view ${zone}`);
    expect(keptZoneMemory(pool, zone)).toBeUndefined();
    // Its next apply reads the zone again (no base of it is kept), and holds what Postgres does.
    expect((await create('after', zone)).zones[0]!.status).toBe('applied');
    expect(zoneMemoryReads.get(pool) ?? 0).toBe(reads + 1);
    expect(keptZoneMemory(pool, zone)!.allRecords()).toEqual(await store.listRecords(pool, zone));
  });

  it('applies to more zones than may hold a lock at once each wait their turn and all succeed', async () => {
    const results = await Promise.all(
      ZONES.map((zone, i) =>
        apply(ctx, tenant, {
          input: {
            kind: 'desired',
            zones: [zone],
            endpoints: [{ dnsName: `turn${i}.${zone}`, recordType: 'A', targets: ['192.0.2.9'], ttl: 300 }],
            policy: 'upsert-only',
          },
        }),
      ),
    );
    expect(results.map((r) => r.zones[0]!.status)).toEqual(ZONES.map(() => 'applied'));
  });

  it("assigns one set reading that set's rows, not the zone's", async () => {
    const zone = ZONES[3]!;
    const before = store.recordRowsRead.whole;
    const r = await assignOwnership(ctx, { dnsName: `h7.${zone}`, recordType: 'A', tenant: tenant.name, shared: false, targets: [] }, async () => undefined);
    expect(r.rows.map((o) => o.tenantName)).toEqual([tenant.name]);
    expect(store.recordRowsRead.whole).toBe(before);
  });
});
