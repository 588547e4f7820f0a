/**
 * The read cache's base and answers of a new generation, patched from the previous generation's with
 * what its NOTIFY said changed (core/reads/base-patch.ts, core/reads/answers.ts), are exactly what a
 * whole read of the zone makes: the same records, record sets, endpoints and ownership rows in the
 * same order, and answers whose JSON is the same bytes — for every kind of change an apply makes, over
 * a zone with what makes mapping odd (shared sets, withdrawn targets, health states, unmanaged types,
 * duplicates, mixed TTLs, names in two cases, a name kept raw). And they are made without reading the
 * zone: only the rows of the ids the change named.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutAnswers } from '../../src/core/reads/answers.js';
import { BaseIndex, baseIndexCounts, baseIndexOf } from '../../src/core/reads/base-index.js';
import { ReadCache, type ReadCacheStats } from '../../src/core/reads/read-cache.js';
import { readZoneBase, type ZoneBase } from '../../src/core/reads/zone-base.js';
import { Slicer } from '../../src/core/slices.js';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { until } from '../helpers/until.js';

const ZONE = 'patch.test';
let db: TestDatabase;
let tenants: Tenant[];
let cache: ReadCache;
let listener: store.Listener;
let heard = 0n;

const id = (n: number) => String(8_000_000_000 + n);
const rec = (n: number, subDomain: string, fieldType: string, target: string, ttl = 300): store.RecordRow => ({ id: id(n), subDomain, fieldType, target, ttl });
const own = (tx: pg.PoolClient, name: string, type: string, t: number, target = '') =>
  store.setOwner(tx, { zone: ZONE, dnsName: name === '' ? ZONE : `${name}.${ZONE}`, recordType: type, tenantId: tenants[t]!.id, target });

/** One generation, as an apply writes it: its changes, the bump, and the NOTIFY saying what changed (or not, `said` false). */
async function generation(write: (tx: pg.PoolClient) => Promise<store.ZoneChange>, said = true): Promise<bigint> {
  const g = await store.withTransaction(db.pool, async (tx) => {
    const changed = await write(tx);
    const g = await store.bumpGeneration(tx, ZONE);
    await store.notifyZoneChanged(tx, ZONE, g, said ? changed : undefined);
    return g;
  });
  await until(`the NOTIFY of generation ${g}`, () => heard >= g);
  return g;
}

const set = (name: string, recordType: string) => ({ dnsName: `${name}.${ZONE}`, recordType });

/** Tenant t's target of the shared set pool A withdrawn, its cluster silent. */
const silent = (target: string, t: number): store.NewWithdrawal => ({
  ...set('pool', 'A'),
  target,
  reason: 'silent',
  tenantId: tenants[t]!.id,
  detail: { detail: 'its cluster went silent' },
  subDomain: 'pool',
  fieldType: 'A',
  ovhTarget: target,
  ttl: 300,
  journalId: null,
});

beforeAll(async () => {
  db = await testDatabase();
  await store.ensureZones(db.pool, [ZONE]);
  tenants = [];
  for (let i = 0; i < 5; i++) tenants.push((await createTenant(db.pool, { name: `t${i}`, zones: [ZONE] })).tenant);
  cache = new ReadCache(db.pool);
  listener = await store.listen(db.pool, {
    zone: (zone, g, changed) => {
      cache.heard(zone, g, changed);
      if (zone === ZONE && g > heard) heard = g;
    },
  });
  await generation(async (tx) => {
    const rows: store.RecordRow[] = [];
    for (let i = 0; i < 200; i++) rows.push(rec(i, `h${i}`, 'A', `10.0.${i >> 8}.${i & 255}`));
    rows.push(
      rec(300, 'pool', 'A', '10.9.0.1'),
      rec(301, 'pool', 'A', '10.9.0.2'),
      rec(302, 'pool', 'A', '10.9.0.3', 60),
      rec(310, 'txt', 'TXT', '"v=spf1 -all"'),
      rec(311, 'alias', 'CNAME', 'h1'),
      rec(312, '', 'MX', '10 mail.example.net.'),
      rec(313, 'v6', 'AAAA', '2001:db8::1'),
      rec(314, '', 'SPF', '"v=spf1 -all"'),
      rec(315, 'dup', 'A', '192.0.2.7'),
      rec(316, 'dup', 'A', '192.0.2.7'),
      rec(317, 'mix', 'A', '192.0.2.8', 300),
      rec(318, 'mix', 'A', '192.0.2.9', 600),
      rec(319, 'WWW', 'A', '192.0.2.10'),
      rec(320, 'www', 'A', '192.0.2.11'),
      rec(321, 'bad..name', 'A', '192.0.2.12'),
      rec(322, 'bad-target', 'AAAA', 'not-an-address'),
      rec(323, '', 'NS', 'dns1.example.net.'),
      rec(324, '', 'NS', 'ns1.example.net.'),
      rec(325, 'www', 'TXT', '"a"'),
      rec(326, 'WWW', 'TXT', '"b"'),
      rec(327, 'www', 'PTR', 'host.example.net.'),
    );
    await store.upsertRecords(tx, ZONE, rows);
    for (let i = 0; i < 150; i++) await own(tx, `h${i}`, 'A', i % 5);
    for (const [t, target] of [
      [0, '10.9.0.1'],
      [1, '10.9.0.2'],
      [2, '10.9.0.3'],
      [3, '10.9.0.4'],
    ] as const)
      await own(tx, 'pool', 'A', t, target);
    await own(tx, 'txt', 'TXT', 1);
    await own(tx, 'mix', 'A', 2);
    await store.setHealthChecks(tx, ZONE, tenants[0]!.id, [{ ...set('pool', 'A'), check: 'http://:8080/healthz' }]);
    // t3's target is withdrawn: owned, not on OVH; t0's is checked, and healthy.
    await store.insertWithdrawals(tx, ZONE, [silent('10.9.0.4', 3)]);
    await tx.query(`INSERT INTO target_health (zone, dns_name, record_type, target, state, since) VALUES ($1, $2, 'A', '10.9.0.1', 'healthy', now())`, [
      ZONE,
      `pool.${ZONE}`,
    ]);
    return { ids: [], sets: [] };
  }, false);
}, 60_000);

afterAll(async () => {
  await listener?.stop();
  await db?.drop();
});

/** The cache's base and answers at `g` are a whole read's, byte for byte; the counts moved by `moved`. */
async function expectSameAsWholeRead(g: bigint, moved: Partial<ReadCacheStats>): Promise<ZoneBase> {
  const before = cache.stats();
  const whole = store.recordRowsRead.whole;
  const view = await cache.view(ZONE, g, '', true);
  const base = (await cache.baseExactlyAt(ZONE, g))!;
  const after = cache.stats();
  const readWhole = store.recordRowsRead.whole - whole;
  const full = await readZoneBase(db.pool, ZONE, new Slicer());
  expect(full.generation).toBe(g);
  expect(base.records).toStrictEqual(full.records);
  expect([...base.recordsByKey]).toStrictEqual([...full.recordsByKey]);
  expect(base.endpoints).toStrictEqual(full.endpoints);
  expect(base.ownership).toStrictEqual(full.ownership);
  expect(base.withdrawals).toStrictEqual(full.withdrawals);
  expect(base.health).toStrictEqual(full.health);
  // Its index (Plans, the served OVH API) is the index made whole of the whole read, patched when the
  // previous base's index was made (it is, below, at every step).
  const indexes = { ...baseIndexCounts };
  const index = await baseIndexOf(base, ZONE);
  const wholeIndex = await BaseIndex.make(full, ZONE, new Slicer());
  expect(index.contents()).toStrictEqual(wholeIndex.contents());
  for (const r of full.records) expect(await index.hasId(r.id)).toBe(true);
  expect(await index.hasId('404')).toBe(false);
  expect(index.nameServers).toStrictEqual(wholeIndex.nameServers);
  expect(baseIndexCounts.patched - indexes.patched).toBe(moved.basePatches);
  const answers = await cutAnswers(ZONE, full, new Slicer());
  expect(JSON.stringify(view.endpoints)).toBe(JSON.stringify(answers.all));
  for (const t of tenants) {
    const own = await cache.view(ZONE, g, t.name, false);
    expect(JSON.stringify(own.endpoints), t.name).toBe(JSON.stringify(answers.byOwner.get(t.name) ?? []));
  }
  const delta = {
    basePatches: after.basePatches - before.basePatches,
    answerPatches: after.answerPatches - before.answerPatches,
    baseBuilds: after.baseBuilds - before.baseBuilds,
  };
  expect(delta).toEqual({ baseBuilds: 1, ...moved });
  // A patched base never read the zone whole.
  expect(readWhole > 0).toBe(moved.basePatches === 0);
  return base;
}

describe('a base patched from the previous generation', () => {
  it('is the whole read of the zone after each kind of change, and its answers are the same bytes', async () => {
    const patched = { basePatches: 1, answerPatches: 1 };
    // The first base is read whole.
    let g = (await store.getZone(db.pool, ZONE))!.generation;
    await expectSameAsWholeRead(g, { basePatches: 0, answerPatches: 0 });
    // The zone holds what makes answers odd: a shared set with a withdrawn target and a checked one.
    const pool = (await cache.view(ZONE, g, '', true)).endpoints.filter((e) => e.dnsName === `pool.${ZONE}`);
    expect(pool.map((e) => [e.labels?.['owner'], e.targets, e.ttl, e.targetStates?.map((s) => `${s.target} ${s.status} ${s.reason}`)])).toEqual([
      ['t0', ['10.9.0.1'], 300, ['10.9.0.1 healthy health']],
      ['t1', ['10.9.0.2'], 300, undefined],
      ['t2', ['10.9.0.3'], 60, undefined],
      ['t3', ['10.9.0.4'], 300, ['10.9.0.4 withdrawn silent']],
    ]);

    // An update (PUT) of a record of an exclusive set.
    g = await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(3, 'h3', 'A', '10.1.1.1')]);
      return { ids: [id(3)], sets: [] };
    });
    const b1 = await expectSameAsWholeRead(g, patched);

    // A new record set and its owner; a set deleted with its ownership.
    g = await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(400, 'new1', 'A', '192.0.2.40')]);
      await own(tx, 'new1', 'A', 1);
      await store.deleteRecords(tx, ZONE, [id(5)]);
      await store.removeOwner(tx, { zone: ZONE, ...set('h5', 'A') });
      return { ids: [id(400), id(5)], sets: [set('new1', 'A'), set('h5', 'A')] };
    });
    const b2 = await expectSameAsWholeRead(g, patched);
    // Untouched items are the previous base's own objects.
    expect(b2.records.find((r) => r.id === id(100))).toBe(b1.records.find((r) => r.id === id(100)));
    expect(b2.endpoints.find((e) => e.dnsName === `h100.${ZONE}`)).toBe(b1.endpoints.find((e) => e.dnsName === `h100.${ZONE}`));

    // A target added to the shared set by another owner; a record moved to another name; an unmanaged
    // record changed; two generations heard before the next read.
    await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(401, 'pool', 'A', '10.9.0.5')]);
      await own(tx, 'pool', 'A', 4, '10.9.0.5');
      return { ids: [id(401)], sets: [set('pool', 'A')] };
    });
    g = await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(7, 'moved', 'A', '10.0.0.7'), rec(314, '', 'SPF', '"v=spf1 mx -all"'), rec(320, 'www', 'A', '192.0.2.9')]);
      return { ids: [id(7), id(314), id(320)], sets: [] };
    });
    await expectSameAsWholeRead(g, patched);

    // A name server changed; records at a name held in two cases and by an unmanaged type.
    g = await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [
        rec(323, '', 'NS', 'dns2.example.net.'),
        rec(328, 'WWW', 'A', '192.0.2.13'),
        rec(327, 'www', 'PTR', 'other.example.net.'),
      ]);
      await store.deleteRecords(tx, ZONE, [id(325)]);
      return { ids: [id(323), id(328), id(327), id(325)], sets: [] };
    });
    await expectSameAsWholeRead(g, patched);

    // A duplicate removed, the mixed TTLs made one; an ownership change alone (the owner of h9 changes).
    g = await generation(async (tx) => {
      await store.deleteRecords(tx, ZONE, [id(316)]);
      await store.upsertRecords(tx, ZONE, [rec(318, 'mix', 'A', '192.0.2.9', 300)]);
      await store.removeOwner(tx, { zone: ZONE, ...set('h9', 'A') });
      await own(tx, 'h9', 'A', 3);
      return { ids: [id(316), id(318)], sets: [set('h9', 'A')] };
    });
    await expectSameAsWholeRead(g, patched);

    // A target's health flips, its NOTIFY naming the set (as core/health/checker.ts's does): patched.
    g = await generation(async (tx) => {
      await tx.query(`UPDATE target_health SET state = 'failing' WHERE zone = $1`, [ZONE]);
      return { ids: [], sets: [set('pool', 'A')] };
    });
    await expectSameAsWholeRead(g, patched);
    // A target withdrawn (its record deleted, the withdrawal kept; core/apply/send.ts names the set): patched.
    g = await generation(async (tx) => {
      await store.deleteRecords(tx, ZONE, [id(301)]);
      await store.insertWithdrawals(tx, ZONE, [silent('10.9.0.2', 1)]);
      return { ids: [id(301)], sets: [set('pool', 'A')] };
    });
    await expectSameAsWholeRead(g, patched);
    const t1 = (await cache.view(ZONE, g, 't1', false)).endpoints.filter((e) => e.dnsName === `pool.${ZONE}`);
    expect(t1.map((e) => e.targetStates?.map((s) => `${s.target} ${s.status}`))).toEqual([['10.9.0.2 withdrawn']]);
    // A health row changed, its set not named: the base is patched, its answers cut whole.
    g = await generation(async (tx) => {
      await tx.query(`UPDATE target_health SET state = 'healthy' WHERE zone = $1`, [ZONE]);
      return { ids: [], sets: [] };
    });
    await expectSameAsWholeRead(g, { basePatches: 1, answerPatches: 0 });

    // A generation whose writer did not say what it changed: read whole.
    g = await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(11, 'h11', 'A', '10.1.1.11')]);
      return { ids: [id(11)], sets: [] };
    }, false);
    await expectSameAsWholeRead(g, { basePatches: 0, answerPatches: 0 });

    // A generation this replica did not hear (its NOTIFY lost): read whole.
    const missed = await store.withTransaction(db.pool, async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(12, 'h12', 'A', '10.1.1.12')]);
      return store.bumpGeneration(tx, ZONE);
    });
    g = await generation(async (tx) => {
      await store.upsertRecords(tx, ZONE, [rec(13, 'h13', 'A', '10.1.1.13')]);
      return { ids: [id(13)], sets: [] };
    });
    expect(g).toBe(missed + 1n);
    await expectSameAsWholeRead(g, { basePatches: 0, answerPatches: 0 });
  });
});
