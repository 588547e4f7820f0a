import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlreadyExistsError, ConflictError, NotFoundError } from '../../src/store/errors.js';
import { finishJournal, getJournalEntry, insertIntent, listAppliesAfter, listInFlight, listJournal } from '../../src/store/journal.js';
import { expirePendingPlans, getPlan, insertPlan, listPlans, setPlanStatus, type NewPlan } from '../../src/store/plans.js';
import { createTenant, type Tenant } from '../../src/store/tenants.js';
import { ensureZones } from '../../src/store/zones.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const sha = (token: string): Buffer => createHash('sha256').update(token).digest();
const HOUR = 3600_000;

describe('plans', () => {
  let db: TestDatabase;
  let alice: Tenant;
  let admin: Tenant;
  const plan = (id: string, extra: Partial<NewPlan> = {}): NewPlan => ({
    id,
    tenantId: alice.id,
    requestedBy: alice.id,
    policy: 'sync',
    request: { desired: { endpoints: [{ dnsName: 'www.example.com', recordType: 'A', targets: ['192.0.2.1'] }] } },
    body: { zones: [{ zone: 'example.com', changes: [], operations: [{ method: 'POST', path: '/domain/zone/example.com/record' }] }] },
    digest: `sha256:${id}`,
    baseGenerations: { 'example.com': '9007199254740993' },
    expiresAt: new Date(Date.now() + HOUR),
    counts: { zones: ['example.com'], changeCount: 0, conflictCount: 0, operationCount: 2 },
    ...extra,
  });

  beforeAll(async () => {
    db = await testDatabase();
    alice = await createTenant(db.pool, { name: 'alice', tokenSha256: sha('a'), scopes: [], zones: [], suffixes: [] });
    admin = await createTenant(db.pool, { name: 'root', tokenSha256: sha('r'), scopes: ['admin'], zones: [], suffixes: [] });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('inserts and reads back a plan (jsonb, generations as exact strings)', async () => {
    await insertPlan(db.pool, plan('pl_1', { requestedBy: admin.id, policy: 'upsert-only' }));
    const p = (await getPlan(db.pool, 'pl_1'))!;
    expect(p).toMatchObject({
      id: 'pl_1',
      tenantId: alice.id,
      requestedBy: admin.id,
      policy: 'upsert-only',
      status: 'pending',
      appliedAt: null,
      baseGenerations: { 'example.com': '9007199254740993' },
    });
    expect(p.body).toEqual(plan('x').body);
    expect(p.request).toEqual(plan('x').request);
    expect(p.createdAt).toBeInstanceOf(Date);
    expect(await getPlan(db.pool, 'nope')).toBeUndefined();
  });

  it('lists plans with what they hold counted, without reading their bodies', async () => {
    await insertPlan(db.pool, plan('pl_counted', { counts: { zones: ['a.test', 'b.test'], changeCount: 5000, conflictCount: 2, operationCount: 5002 } }));
    const listed = (await listPlans(db.pool, { limit: 100 })).find((p) => p.id === 'pl_counted')!;
    expect(listed).toMatchObject({ zones: ['a.test', 'b.test'], changeCount: 5000, conflictCount: 2, operationCount: 5002 });
    expect(listed).not.toHaveProperty('body');
    expect(listed).not.toHaveProperty('request');
    expect(await setPlanStatus(db.pool, 'pl_counted', 'superseded')).not.toHaveProperty('body');
    expect((await getPlan(db.pool, 'pl_counted'))!.body).toEqual(plan('x').body);
  });

  it('stores arrays as JSON arrays, not Postgres arrays', async () => {
    await insertPlan(db.pool, plan('pl_array', { body: [1, 'two', { three: 3 }], request: [] }));
    const p = (await getPlan(db.pool, 'pl_array'))!;
    expect(p.body).toEqual([1, 'two', { three: 3 }]);
    expect(p.request).toEqual([]);
  });

  it('rejects duplicates, unknown tenants, bad policies and bad generations', async () => {
    await expect(insertPlan(db.pool, plan('pl_1'))).rejects.toBeInstanceOf(AlreadyExistsError);
    const nf: unknown = await insertPlan(db.pool, plan('pl_nf', { requestedBy: '999999' })).catch((e: unknown) => e);
    expect(nf).toBeInstanceOf(NotFoundError);
    expect((nf as NotFoundError).key).toBe('999999');
    await expect(insertPlan(db.pool, plan('pl_pol', { policy: 'yolo' as 'sync' }))).rejects.toThrow(/plans_policy_check/);
    await expect(insertPlan(db.pool, plan('pl_gen', { baseGenerations: { 'example.com': '-1' } }))).rejects.toThrow(TypeError);
    await expect(
      db.pool.query(
        `INSERT INTO plans (id, tenant_id, requested_by, policy, request, body, digest, base_generations, expires_at)
       VALUES ('pl_raw', $1, $1, 'sync', '{}', '{}', 'd', '{"example.com": 5}', now())`,
        [alice.id],
      ),
    ).rejects.toThrow(/plans_base_generations_form/);
    await expect(insertPlan(db.pool, plan('bad id with spaces'))).rejects.toThrow(/plans_id_form/);
  });

  it('setPlanStatus: applied sets appliedAt; `from` guards the transition', async () => {
    await insertPlan(db.pool, plan('pl_2'));
    const applied = await setPlanStatus(db.pool, 'pl_2', 'applied', { from: ['pending'] });
    expect(applied.status).toBe('applied');
    expect(applied.appliedAt).toBeInstanceOf(Date);
    const again: unknown = await setPlanStatus(db.pool, 'pl_2', 'applied', { from: ['pending'] }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConflictError);
    expect((again as Error).message).toMatch(/is applied, not pending/);
    await insertPlan(db.pool, plan('pl_3'));
    const at = new Date('2030-01-02T03:04:05.000Z');
    expect((await setPlanStatus(db.pool, 'pl_3', 'applied', { appliedAt: at })).appliedAt).toEqual(at);
    await insertPlan(db.pool, plan('pl_4'));
    const stale = await setPlanStatus(db.pool, 'pl_4', 'stale');
    expect(stale).toMatchObject({ status: 'stale', appliedAt: null });
    await expect(setPlanStatus(db.pool, 'nope', 'stale')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('lists plans newest first, by tenant and status', async () => {
    const other = await createTenant(db.pool, { name: 'other', tokenSha256: sha('o'), scopes: [], zones: [], suffixes: [] });
    await insertPlan(db.pool, plan('pl_other', { tenantId: other.id, requestedBy: admin.id }));
    const all = await listPlans(db.pool, { limit: 100 });
    const times = all.map((p) => p.createdAt.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect((await listPlans(db.pool, { tenantId: other.id, limit: 10 })).map((p) => p.id)).toEqual(['pl_other']);
    expect((await listPlans(db.pool, { status: 'applied', limit: 10 })).map((p) => p.id).sort()).toEqual(['pl_2', 'pl_3']);
    expect(await listPlans(db.pool, { limit: 2 })).toHaveLength(2);
    await expect(listPlans(db.pool, { limit: 0 })).rejects.toThrow(RangeError);
  });

  it('expires pending plans past their expiry', async () => {
    await insertPlan(db.pool, plan('pl_old', { expiresAt: new Date(Date.now() - 1000) }));
    expect(await expirePendingPlans(db.pool)).toBe(1);
    expect((await getPlan(db.pool, 'pl_old'))?.status).toBe('expired');
    expect((await getPlan(db.pool, 'pl_1'))?.status).toBe('pending');
  });
});

describe('journal', () => {
  let db: TestDatabase;
  let alice: Tenant;
  beforeAll(async () => {
    db = await testDatabase();
    await ensureZones(db.pool, ['example.com', 'example.org']);
    alice = await createTenant(db.pool, { name: 'alice', tokenSha256: sha('a'), scopes: [], zones: [], suffixes: [] });
  });
  afterAll(async () => {
    await db?.drop();
  });

  const intent = [{ method: 'POST', path: '/domain/zone/example.com/record', body: { fieldType: 'A', subDomain: 'www', target: '192.0.2.1', ttl: 0 } }];

  it('writes in_flight intents and finishes them once', async () => {
    const id = await insertIntent(db.pool, { zone: 'example.com', tenantId: alice.id, intent });
    expect(id).toMatch(/^[0-9]+$/);
    const inFlight = await listInFlight(db.pool, 'example.com');
    expect(inFlight).toHaveLength(1);
    expect(inFlight[0]).toMatchObject({
      id,
      zone: 'example.com',
      tenantId: alice.id,
      planId: null,
      intent,
      state: 'in_flight',
      result: null,
      finishedAt: null,
    });
    const done = await finishJournal(db.pool, id, 'done', { calls: 2, ids: ['5000000001'] });
    expect(done).toMatchObject({ state: 'done', result: { calls: 2, ids: ['5000000001'] } });
    expect(done.finishedAt).toBeInstanceOf(Date);
    expect(await listInFlight(db.pool, 'example.com')).toEqual([]);
    const twice: unknown = await finishJournal(db.pool, id, 'failed', {}).catch((e: unknown) => e);
    expect(twice).toBeInstanceOf(ConflictError);
    await expect(finishJournal(db.pool, '999999', 'done', {})).rejects.toBeInstanceOf(NotFoundError);
    expect((await getJournalEntry(db.pool, id))?.state).toBe('done');
  });

  it('links a plan, and survives its deletion (audit)', async () => {
    await insertPlan(db.pool, {
      id: 'pl_j',
      tenantId: alice.id,
      requestedBy: alice.id,
      policy: 'sync',
      request: {},
      body: {},
      digest: 'd',
      baseGenerations: {},
      expiresAt: new Date(Date.now() + HOUR),
      counts: { zones: [], changeCount: 0, conflictCount: 0, operationCount: 0 },
    });
    const id = await insertIntent(db.pool, { zone: 'example.com', tenantId: alice.id, planId: 'pl_j', intent: [] });
    expect((await getJournalEntry(db.pool, id))?.planId).toBe('pl_j');
    await db.pool.query("DELETE FROM plans WHERE id = 'pl_j'");
    expect((await getJournalEntry(db.pool, id))?.planId).toBeNull();
    await finishJournal(db.pool, id, 'recovered', { names: [] });
  });

  it('NotFoundError for unknown zone, tenant or plan', async () => {
    const z: unknown = await insertIntent(db.pool, { zone: 'nope.example', tenantId: alice.id, intent: [] }).catch((e: unknown) => e);
    expect((z as NotFoundError).what).toBe('zone');
    const t: unknown = await insertIntent(db.pool, { zone: 'example.com', tenantId: '999999', intent: [] }).catch((e: unknown) => e);
    expect((t as NotFoundError).what).toBe('tenant');
    const p: unknown = await insertIntent(db.pool, { zone: 'example.com', tenantId: alice.id, planId: 'nope', intent: [] }).catch((e: unknown) => e);
    expect((p as NotFoundError).what).toBe('plan');
  });

  it('lists in-flight rows per zone newest first (the order to roll them back in), and the journal newest first', async () => {
    const a = await insertIntent(db.pool, { zone: 'example.org', tenantId: alice.id, intent: [1] });
    const b = await insertIntent(db.pool, { zone: 'example.org', tenantId: alice.id, intent: [2] });
    await insertIntent(db.pool, { zone: 'example.com', tenantId: alice.id, intent: [3] });
    expect((await listInFlight(db.pool, 'example.org')).map((e) => e.id)).toEqual([b, a]);
    const org = await listJournal(db.pool, { zone: 'example.org', limit: 10 });
    expect(org.map((e) => e.id)).toEqual([b, a]);
    const mine = await listJournal(db.pool, { tenantId: alice.id, limit: 100 });
    expect(mine.map((e) => BigInt(e.id))).toEqual([...mine.map((e) => BigInt(e.id))].sort((x, y) => (x > y ? -1 : 1)));
    expect(await listJournal(db.pool, { limit: 1 })).toHaveLength(1);
    // the partial index serves the in-flight lookup
    const { rows } = await db.pool.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE indexname = 'journal_in_flight_idx'");
    expect(rows[0]?.indexdef).toMatch(/WHERE \(state = 'in_flight'::text\)/);
  });

  it('an intent written on the pool survives the rollback of a concurrent transaction', async () => {
    const client = await db.pool.connect();
    let id = '';
    try {
      await client.query('BEGIN');
      id = await insertIntent(db.pool, { zone: 'example.com', tenantId: alice.id, intent: ['survives'] });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect((await getJournalEntry(db.pool, id))?.state).toBe('in_flight');
  });

  it('finished_at is never before started_at, even when the finishing transaction began before the row was written', async () => {
    // As an apply does: its zone-lock transaction begins, the intent is written on another connection,
    // the transaction finishes the row. now() would be the transaction's start, before started_at.
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1');
      await new Promise((r) => setTimeout(r, 20));
      const id = await insertIntent(db.pool, { zone: 'example.com', tenantId: alice.id, intent: { ops: [] } });
      const done = await finishJournal(client, id, 'done', {});
      await client.query('COMMIT');
      expect(done.finishedAt!.getTime()).toBeGreaterThanOrEqual(done.startedAt.getTime());
      const { rows } = await db.pool.query<{ ordered: boolean }>('SELECT finished_at >= started_at AS ordered FROM journal WHERE id = $1::bigint', [id]);
      expect(rows[0]!.ordered).toBe(true);
    } finally {
      client.release();
    }
  });

  it('orders by id as a number, not as text (journal 10 is newer than journal 9)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await insertIntent(db.pool, { zone: 'example.org', tenantId: alice.id, intent }));
    const numeric = (xs: string[]) => [...xs].sort((a, b) => Number(a) - Number(b));
    const mine = (js: Array<{ id: string }>) => js.map((j) => j.id).filter((id) => ids.includes(id));
    expect(mine(await listJournal(db.pool, { zone: 'example.org', limit: 1000 }))).toEqual(numeric(ids).reverse());
    expect(mine(await listInFlight(db.pool, 'example.org'))).toEqual(numeric(ids).reverse());
  });

  it("zone at's history (listAppliesAfter) is newest first by id as a number, across a change in the ids' length", async () => {
    // The next ids cross a power of ten (…98, 99, 100, 101…), where text order and number order differ.
    const { rows } = await db.pool.query<{ last: string }>(`SELECT COALESCE(max(id), 0)::text AS last FROM journal`);
    const across = 10 ** rows[0]!.last.length;
    await db.pool.query(`SELECT setval(pg_get_serial_sequence('journal', 'id'), $1)`, [across - 3]);
    const ids: string[] = [];
    for (let i = 1; i <= 6; i++) {
      const id = await insertIntent(db.pool, { zone: 'example.org', tenantId: alice.id, intent: { names: [], operations: [], before: [] } });
      await finishJournal(db.pool, id, 'done', { generation: String(1000 + i) });
      ids.push(id);
    }
    expect(ids.map((id) => id.length)).toContain(String(across).length);
    const newestFirst = [...ids].reverse();
    expect((await listAppliesAfter(db.pool, 'example.org', { generation: 1000n })).applies.map((a) => a.id)).toEqual(newestFirst);
    expect((await listAppliesAfter(db.pool, 'example.org', { generation: 1003n })).applies.map((a) => a.id)).toEqual(newestFirst.slice(0, 3));
    expect((await listAppliesAfter(db.pool, 'example.org', { time: new Date(Date.now() - HOUR) })).applies.map((a) => a.id)).toEqual(newestFirst);
  });
});
