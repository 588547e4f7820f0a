import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/store/errors.js';
import {
  deleteRecords,
  listRecords,
  listRecordsForNames,
  listRecordsInPages,
  replaceRecordsForNames,
  replaceZoneRecords,
  ROWS_PER_INSERT,
  upsertRecords,
  type RecordRow,
} from '../../src/store/records.js';
import { ROWS_PER_PAGE } from '../../src/store/internal.js';
import { withSnapshot, withTransaction } from '../../src/store/transaction.js';
import { bumpGeneration, ensureZones, getGenerations, getZone, listZones, markSynced, markUnsynced } from '../../src/store/zones.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const BIG = '5000000001'; // > 2^32
const HUGE = '9007199254740993'; // 2^53 + 1: not representable as a JS number

function rec(id: string, subDomain: string, fieldType: string, target: string, ttl = 0): RecordRow {
  return { id, subDomain, fieldType, target, ttl };
}

describe('zones', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('ensureZones inserts missing zones as unsynced, idempotently and under concurrency', async () => {
    await ensureZones(db.pool, ['b.example', 'a.example', 'a.example']);
    await Promise.all(Array.from({ length: 8 }, (_, i) => ensureZones(db.pool, i % 2 ? ['c.example', 'a.example', 'b.example'] : ['b.example', 'c.example'])));
    await ensureZones(db.pool, []);
    const zones = await listZones(db.pool, ['a.example', 'b.example', 'c.example']);
    expect(zones.map((z) => z.name)).toEqual(['a.example', 'b.example', 'c.example']);
    for (const z of zones) {
      expect(z).toEqual({
        name: z.name,
        generation: 0n,
        state: 'unsynced',
        lastSync: null,
        soaSerial: null,
        recordCount: 0,
        inFlight: 0,
        drift: { checkedAt: null, foundAt: null, added: 0, removed: 0, updated: 0 },
      });
    }
  });

  it('getZone, listZones with counts, getGenerations', async () => {
    await ensureZones(db.pool, ['count.example']);
    await replaceZoneRecords(db.pool, 'count.example', [rec('1', '', 'A', '192.0.2.1'), rec('2', 'www', 'A', '192.0.2.2')]);
    expect((await listZones(db.pool, ['count.example']))[0]?.recordCount).toBe(2);
    expect((await getZone(db.pool, 'count.example'))?.generation).toBe(0n);
    expect(await getZone(db.pool, 'missing.example')).toBeUndefined();
    const all = await listZones(db.pool);
    expect(all.map((z) => z.name)).toEqual([...all.map((z) => z.name)].sort());
    expect(all.find((z) => z.name === 'count.example')?.recordCount).toBe(2);
    expect(await listZones(db.pool, [])).toEqual([]);
    const gens = await getGenerations(db.pool, ['count.example', 'a.example', 'missing.example']);
    expect(gens).toEqual(
      new Map([
        ['count.example', 0n],
        ['a.example', 0n],
      ]),
    );
    expect(await getGenerations(db.pool, [])).toEqual(new Map());
  });

  it('markSynced / markUnsynced', async () => {
    await ensureZones(db.pool, ['sync.example']);
    await markSynced(db.pool, 'sync.example', { soaSerial: 2026113001n });
    let z = await getZone(db.pool, 'sync.example');
    expect(z?.state).toBe('synced');
    expect(z?.lastSync).toBeInstanceOf(Date);
    expect(z?.soaSerial).toBe(2026113001n);
    await markSynced(db.pool, 'sync.example'); // keeps the serial
    expect((await getZone(db.pool, 'sync.example'))?.soaSerial).toBe(2026113001n);
    await markSynced(db.pool, 'sync.example', { soaSerial: 4294967295 });
    expect((await getZone(db.pool, 'sync.example'))?.soaSerial).toBe(4294967295n);
    await markUnsynced(db.pool, 'sync.example');
    z = await getZone(db.pool, 'sync.example');
    expect(z?.state).toBe('unsynced');
    expect(z?.lastSync).toBeInstanceOf(Date);
    await expect(markSynced(db.pool, 'missing.example')).rejects.toBeInstanceOf(NotFoundError);
    await expect(markUnsynced(db.pool, 'missing.example')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('bumpGeneration returns bigint, exact beyond 2^53', async () => {
    await ensureZones(db.pool, ['gen.example']);
    expect(await bumpGeneration(db.pool, 'gen.example')).toBe(1n);
    expect(await bumpGeneration(db.pool, 'gen.example')).toBe(2n);
    await db.pool.query("UPDATE zones SET generation = 9007199254740992 WHERE name = 'gen.example'");
    expect(await bumpGeneration(db.pool, 'gen.example')).toBe(9007199254740993n);
    expect((await getZone(db.pool, 'gen.example'))?.generation).toBe(9007199254740993n);
    expect((await getGenerations(db.pool, ['gen.example'])).get('gen.example')).toBe(9007199254740993n);
    await expect(bumpGeneration(db.pool, 'missing.example')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('concurrent bumps never lose an increment', async () => {
    await ensureZones(db.pool, ['race.example']);
    const results = await Promise.all(Array.from({ length: 20 }, () => bumpGeneration(db.pool, 'race.example')));
    expect([...results].sort((a, b) => (a < b ? -1 : 1))).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
  });

  it('rejects malformed zone names', async () => {
    for (const name of ['Upper.example', 'trailing.example.', '.lead.example', 'dou..ble', 'sp ace.example']) {
      await expect(ensureZones(db.pool, [name])).rejects.toThrow(/zones_name_form/);
    }
  });
});

describe('records', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
    await ensureZones(db.pool, ['rec.example', 'other.example']);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('round-trips ids above 2^32 and 2^53 as exact strings', async () => {
    await replaceZoneRecords(db.pool, 'rec.example', [
      rec(HUGE, 'www', 'A', '192.0.2.10', 60),
      rec(BIG, 'www', 'A', '192.0.2.11', 60),
      rec('7', '', 'TXT', 'hello world', 0),
    ]);
    const rows = await listRecords(db.pool, 'rec.example');
    expect(rows).toEqual([rec('7', '', 'TXT', 'hello world', 0), rec(BIG, 'www', 'A', '192.0.2.11', 60), rec(HUGE, 'www', 'A', '192.0.2.10', 60)]);
    expect(rows.every((r) => typeof r.id === 'string')).toBe(true);
    const { rows: raw } = await db.pool.query<{ ok: boolean }>(
      "SELECT bool_and(id IN (5000000001, 9007199254740993, 7)) AS ok FROM records WHERE zone = 'rec.example'",
    );
    expect(raw[0]?.ok).toBe(true);
  });

  it('replaceZoneRecords replaces everything of that zone only', async () => {
    await replaceZoneRecords(db.pool, 'other.example', [rec('100', 'x', 'CNAME', 'y.other.example.')]);
    const res = await replaceZoneRecords(db.pool, 'rec.example', [rec('8', 'mail', 'MX', '10 mx.rec.example.', 300)]);
    expect(res).toEqual({ deleted: 3, inserted: 1 });
    expect(await listRecords(db.pool, 'rec.example')).toEqual([rec('8', 'mail', 'MX', '10 mx.rec.example.', 300)]);
    expect(await listRecords(db.pool, 'other.example')).toHaveLength(1);
    expect(await replaceZoneRecords(db.pool, 'other.example', [])).toEqual({ deleted: 1, inserted: 0 });
    expect(await listRecords(db.pool, 'other.example')).toEqual([]);
  });

  it('replaceZoneRecords is atomic on a pool: a bad row keeps the old cache', async () => {
    const before = await listRecords(db.pool, 'rec.example');
    await expect(replaceZoneRecords(db.pool, 'rec.example', [rec('9', 'a', 'A', '192.0.2.1'), rec('9', 'b', 'A', '192.0.2.2')])).rejects.toThrow(
      /duplicate key/,
    );
    expect(await listRecords(db.pool, 'rec.example')).toEqual(before);
  });

  it('replaceZoneRecords writes a zone of several INSERT batches, all or nothing: a bad row in the last batch keeps the old cache', async () => {
    const many = Array.from({ length: 2 * ROWS_PER_INSERT + 1 }, (_, i) => rec(String(100_000 + i), `h${i}`, 'A', '192.0.2.1'));
    const before = await listRecords(db.pool, 'rec.example');
    const bad = [...many.slice(0, -1), rec('100000', 'dup', 'A', '192.0.2.2')];
    await expect(replaceZoneRecords(db.pool, 'rec.example', bad)).rejects.toThrow(/duplicate key/);
    await expect(replaceZoneRecords(db.pool, 'rec.example', [...many.slice(0, -1), rec('x1', 'bad', 'A', '192.0.2.2')])).rejects.toThrow(TypeError);
    expect(await listRecords(db.pool, 'rec.example')).toEqual(before);
    expect(await replaceZoneRecords(db.pool, 'rec.example', many)).toMatchObject({ inserted: many.length });
    expect(await listRecords(db.pool, 'rec.example')).toHaveLength(many.length);
    await replaceZoneRecords(db.pool, 'rec.example', before);
  });

  it('listRecordsInPages reads what listRecords reads, a page of ROWS_PER_PAGE at a time in a snapshot, one page from a pool', async () => {
    const before = await listRecords(db.pool, 'rec.example');
    const many = Array.from({ length: 2 * ROWS_PER_PAGE + 3 }, (_, i) => rec(String(200_000 + i), `p${i % 700}`, i % 2 ? 'A' : 'TXT', `"t${i}"`));
    await replaceZoneRecords(db.pool, 'rec.example', many);
    const whole = await listRecords(db.pool, 'rec.example');
    const pages: number[] = [];
    const paged: RecordRow[] = [];
    await withSnapshot(db.pool, (tx) =>
      listRecordsInPages(tx, 'rec.example', (rows) => {
        pages.push(rows.length);
        paged.push(...rows);
      }),
    );
    expect(pages).toEqual([ROWS_PER_PAGE, ROWS_PER_PAGE, 3]);
    expect(paged).toEqual(whole);
    const once: number[] = [];
    await listRecordsInPages(db.pool, 'rec.example', (rows) => void once.push(rows.length));
    expect(once).toEqual([many.length]);
    await replaceZoneRecords(db.pool, 'rec.example', before);
  });

  it('replaceZoneRecords on a missing zone is NotFoundError; bad ids and ttls are TypeErrors', async () => {
    await expect(replaceZoneRecords(db.pool, 'missing.example', [rec('1', '', 'A', '192.0.2.1')])).rejects.toBeInstanceOf(NotFoundError);
    await expect(replaceZoneRecords(db.pool, 'rec.example', [rec('12a', '', 'A', '192.0.2.1')])).rejects.toThrow(TypeError);
    await expect(replaceZoneRecords(db.pool, 'rec.example', [rec('12', '', 'A', '192.0.2.1', -1)])).rejects.toThrow(TypeError);
  });

  it('listRecordsForNames selects whole record sets', async () => {
    await replaceZoneRecords(db.pool, 'rec.example', [
      rec('1', 'www', 'A', '192.0.2.1'),
      rec('2', 'www', 'A', '192.0.2.2'),
      rec('3', 'www', 'AAAA', '2001:db8::1'),
      rec('4', 'api', 'A', '192.0.2.4'),
      rec('5', '', 'TXT', 'v=spf1 -all'),
    ]);
    const rows = await listRecordsForNames(db.pool, 'rec.example', [
      { subDomain: 'www', fieldType: 'A' },
      { subDomain: '', fieldType: 'TXT' },
      { subDomain: 'www', fieldType: 'A' },
      { subDomain: 'nope', fieldType: 'A' },
    ]);
    expect(rows.map((r) => r.id)).toEqual(['5', '1', '2']);
    expect(await listRecordsForNames(db.pool, 'rec.example', [])).toEqual([]);
  });

  it('replaceRecordsForNames deletes those sets and upserts the re-read rows (ids may move)', async () => {
    // record 4 was renamed in OVH from api to www2 (PUT of subDomain); record 2 deleted
    const res = await replaceRecordsForNames(
      db.pool,
      'rec.example',
      [
        { subDomain: 'www', fieldType: 'A' },
        { subDomain: 'www2', fieldType: 'A' },
      ],
      [rec('1', 'www', 'A', '192.0.2.1', 120), rec('4', 'www2', 'A', '192.0.2.4'), rec(BIG, 'www', 'A', '192.0.2.9')],
    );
    expect(res).toEqual({ deleted: 2, upserted: 3 });
    expect((await listRecords(db.pool, 'rec.example')).map((r) => [r.id, r.subDomain, r.fieldType, r.ttl])).toEqual([
      ['5', '', 'TXT', 0],
      ['1', 'www', 'A', 120],
      [BIG, 'www', 'A', 0],
      ['3', 'www', 'AAAA', 0],
      ['4', 'www2', 'A', 0],
    ]);
    // nothing re-read: the sets are emptied
    expect(await replaceRecordsForNames(db.pool, 'rec.example', [{ subDomain: 'www2', fieldType: 'A' }], [])).toEqual({
      deleted: 1,
      upserted: 0,
    });
  });

  it('upsertRecords inserts and updates by id; deleteRecords by id', async () => {
    expect(await upsertRecords(db.pool, 'rec.example', [rec(HUGE, 'new', 'A', '192.0.2.50'), rec('3', 'www', 'AAAA', '2001:db8::3', 30)])).toBe(2);
    expect(await upsertRecords(db.pool, 'rec.example', [rec('3', 'www', 'AAAA', '2001:db8::4'), rec('3', 'www', 'AAAA', '2001:db8::5')])).toBe(1);
    let rows = await listRecords(db.pool, 'rec.example');
    expect(rows.find((r) => r.id === HUGE)).toEqual(rec(HUGE, 'new', 'A', '192.0.2.50'));
    expect(rows.find((r) => r.id === '3')).toEqual(rec('3', 'www', 'AAAA', '2001:db8::5'));
    expect(await upsertRecords(db.pool, 'rec.example', [])).toBe(0);
    expect(await deleteRecords(db.pool, 'rec.example', [HUGE, '3', '424242'])).toBe(2);
    expect(await deleteRecords(db.pool, 'rec.example', [])).toBe(0);
    rows = await listRecords(db.pool, 'rec.example');
    expect(rows.map((r) => r.id)).not.toContain(HUGE);
    await expect(deleteRecords(db.pool, 'rec.example', ['1.5'])).rejects.toThrow(TypeError);
    await expect(upsertRecords(db.pool, 'missing.example', [rec('1', '', 'A', '192.0.2.1')])).rejects.toBeInstanceOf(NotFoundError);
  });

  it('runs inside the caller transaction when given a client', async () => {
    const before = await listRecords(db.pool, 'rec.example');
    await expect(
      withTransaction(db.pool, async (tx) => {
        await replaceZoneRecords(tx, 'rec.example', [rec('77', 'tx', 'A', '192.0.2.77')]);
        expect((await listRecords(tx, 'rec.example')).map((r) => r.id)).toEqual(['77']);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await listRecords(db.pool, 'rec.example')).toEqual(before);
  });

  it('deleting a zone cascades to its records', async () => {
    await ensureZones(db.pool, ['gone.example']);
    await upsertRecords(db.pool, 'gone.example', [rec('1', '', 'A', '192.0.2.1')]);
    await db.pool.query("DELETE FROM zones WHERE name = 'gone.example'");
    const { rows } = await db.pool.query("SELECT 1 FROM records WHERE zone = 'gone.example'");
    expect(rows).toHaveLength(0);
  });

  it('bulk: 5000 rows in one replace', async () => {
    await ensureZones(db.pool, ['bulk.example']);
    const rows = Array.from({ length: 5000 }, (_, i) => rec(String(5000000000 + i), `h${i}`, 'A', `10.0.${i >> 8}.${i & 255}`, 60));
    expect(await replaceZoneRecords(db.pool, 'bulk.example', rows)).toEqual({ deleted: 0, inserted: 5000 });
    expect((await listZones(db.pool, ['bulk.example']))[0]?.recordCount).toBe(5000);
  });
});
