/**
 * Pruning the journal (core/journal/prune.ts, store/journal-prune.ts) on a real Postgres: rows finished
 * before the horizon go, in batches, and nothing else — never an apply in flight, never a newer row;
 * plans of that age go once no row left refers to them; the horizon `zone at` reads is raised per zone
 * before any row goes and never lowered; the prune is a journal row of its own.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneJournal } from '../../src/core/journal/prune.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const DAY = 86_400_000;
const NOW = new Date('2026-12-07T12:00:00Z');
const daysAgo = (d: number) => new Date(NOW.getTime() - d * DAY);

let db: TestDatabase;
let tenantId: string;

/** A journal row of zone `zone`, started `age` days before NOW, finished an hour later (or still in flight). */
async function row(zone: string | null, age: number, opts: { state?: string; generation?: number; planId?: string } = {}): Promise<string> {
  const state = opts.state ?? 'done';
  const started = daysAgo(age);
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO journal (zone, tenant_id, plan_id, intent, state, result, started_at, finished_at)
     VALUES ($1, $2::bigint, $3, '{"kind":"changes","operations":[],"names":[]}', $4, $5::jsonb, $6, $7) RETURNING id::text AS id`,
    [
      zone,
      zone === null ? null : tenantId,
      opts.planId ?? null,
      state,
      opts.generation === undefined ? null : JSON.stringify({ generation: String(opts.generation) }),
      started,
      state === 'in_flight' ? null : new Date(started.getTime() + 3_600_000),
    ],
  );
  return rows[0]!.id;
}

async function plan(age: number, status: string, expiresInDays = 1): Promise<string> {
  const id = `pl_${randomBytes(8).toString('hex')}`;
  await store.insertPlan(db.pool, {
    id,
    tenantId,
    requestedBy: tenantId,
    policy: 'sync',
    request: {},
    body: {},
    digest: 'd',
    baseGenerations: {},
    expiresAt: new Date(daysAgo(age).getTime() + expiresInDays * DAY),
    counts: { zones: [], changeCount: 0, conflictCount: 0, operationCount: 0 },
  });
  await db.pool.query(
    `UPDATE plans SET created_at = $2::timestamptz, status = $3, applied_at = CASE WHEN $3 = 'applied' THEN $2::timestamptz END WHERE id = $1`,
    [id, daysAgo(age), status],
  );
  return id;
}

const ids = async (table: 'journal' | 'plans') =>
  (await db.pool.query<{ id: string }>(`SELECT id::text AS id FROM ${table} ORDER BY id`)).rows.map((r) => r.id);

beforeAll(async () => {
  db = await testDatabase();
  await store.ensureZones(db.pool, ['a.example', 'b.example']);
  tenantId = (await store.createTenant(db.pool, { name: 'alice', tokenSha256: randomBytes(32), scopes: [], zones: ['a.example'], suffixes: [] })).id;
});

afterAll(async () => {
  await db?.drop();
});

describe('journal prune', () => {
  it('deletes, in batches, the rows finished before the horizon and the plans of that age no row refers to; nothing else', async () => {
    const appliedOld = await plan(100, 'applied');
    const expiredOld = await plan(100, 'pending', 1);
    const pendingLong = await plan(100, 'pending', 200); // a plan made to live long: still pending, kept
    const appliedLater = await plan(100, 'applied'); // made long ago, applied recently: its row stays, so does it
    const recentPlan = await plan(2, 'applied');
    const gone = [
      await row('a.example', 100, { generation: 5, planId: appliedOld }),
      await row('a.example', 95, { state: 'failed' }),
      await row('b.example', 94, { generation: 9 }),
      await row(null, 93), // an admin action of no zone
      await row('a.example', 92, { generation: 7 }),
    ];
    const inFlight = await row('a.example', 91, { state: 'in_flight' });
    const kept = [await row('a.example', 5, { generation: 8, planId: appliedLater }), await row('b.example', 1, { generation: 10 })];

    const dry = await pruneJournal(db.pool, { olderThanMs: 30 * DAY, dryRun: true, now: NOW });
    expect(dry).toEqual({ before: daysAgo(30), entries: 5, plans: 2, zones: [], dryRun: true });
    expect(await ids('journal')).toEqual([...gone, inFlight, ...kept]);
    expect(await store.getJournalHorizon(db.pool, 'a.example')).toBeUndefined();

    const r = await pruneJournal(db.pool, { olderThanMs: 30 * DAY, now: NOW, batch: 2 });
    expect(r).toEqual({ before: daysAgo(30), entries: 5, plans: 2, zones: ['a.example', 'b.example'], dryRun: false });
    const left = await ids('journal');
    expect(left.slice(0, 3)).toEqual([inFlight, ...kept]);
    // ... and the prune's own row, saying what it deleted and who asked.
    expect(left).toHaveLength(4);
    const audit = await store.getJournalEntry(db.pool, left[3]!);
    expect(audit?.intent).toMatchObject({
      kind: 'prune-journal',
      summary: `journal pruned before ${daysAgo(30).toISOString()} from the command line: 5 entries and 2 plans`,
      detail: { before: daysAgo(30).toISOString(), entries: 5, plans: 2, zones: ['a.example', 'b.example'] },
    });
    // Gone: the plan applied by a pruned row, and the one that expired unapplied long ago.
    expect((await ids('plans')).sort()).toEqual([pendingLong, appliedLater, recentPlan].sort());
    expect(await ids('plans')).not.toContain(expiredOld);
    expect(await store.getJournalHorizon(db.pool, 'a.example')).toEqual({ zone: 'a.example', prunedBefore: daysAgo(30), generation: 7n });
    expect(await store.getJournalHorizon(db.pool, 'b.example')).toEqual({ zone: 'b.example', prunedBefore: daysAgo(30), generation: 9n });

    // A prune of an older horizon deletes nothing more and lowers no horizon; a newer one raises it.
    expect(await pruneJournal(db.pool, { olderThanMs: 60 * DAY, now: NOW })).toMatchObject({ entries: 0, plans: 0, zones: [] });
    expect(await store.getJournalHorizon(db.pool, 'a.example')).toMatchObject({ prunedBefore: daysAgo(30), generation: 7n });
    const r2 = await pruneJournal(db.pool, { olderThanMs: 3 * DAY, now: NOW });
    expect(r2).toMatchObject({ entries: 1, plans: 1, zones: ['a.example'] }); // the plan that row applied goes with it
    expect((await ids('plans')).sort()).toEqual([pendingLong, recentPlan].sort());
    expect(await store.getJournalHorizon(db.pool, 'a.example')).toMatchObject({ prunedBefore: daysAgo(3), generation: 8n });
    expect(await store.getJournalHorizon(db.pool, 'b.example')).toMatchObject({ prunedBefore: daysAgo(30), generation: 9n });
    // The apply in flight is still there, whatever its age.
    expect(await ids('journal')).toContain(inFlight);
  });

  it('refuses a horizon younger than a day, or not a number, naming the field; nothing is written', async () => {
    const before = await ids('journal');
    await expect(pruneJournal(db.pool, { olderThanMs: 23 * 3_600_000, field: '--older-than' })).rejects.toThrow(
      /^--older-than: must be at least 24h: .*, got 23h$/,
    );
    await expect(pruneJournal(db.pool, { olderThanMs: Number.NaN })).rejects.toThrow(/^olderThan: must be at least 24h: .*, got NaN$/);
    expect(await ids('journal')).toEqual(before);
  });
});
