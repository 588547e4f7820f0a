/**
 * The zone's view in memory the apply path plans on (core/reads/zone-memory.ts, core/plan/plan.ts
 * computeLockedZonePlan): what an apply reads from Postgres does not depend on the zone's size; a
 * coalesced group plans each member once against the running view (what the members before it did
 * included); a replica whose view missed another's commit (no NOTIFY heard) reads the zone again
 * before it plans, and one that heard it re-reads only what the NOTIFY names; a failed member, or a failed refresh, leaves the view as the database is. Core's
 * apply on a real Postgres, the simulator over HTTPS through the real client; exact OVH calls.
 */
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apply, type ApplyResult, type ZoneApplyResult } from '../../../src/core/apply/index.js';
import type { CoreContext } from '../../../src/core/context.js';
import type { RawChangeSet, RawEndpoint } from '../../../src/core/plan/input.js';
import { heardZoneChange, keptZoneMemory, zoneMemoryCatchUps, zoneMemoryReads } from '../../../src/core/reads/zone-memory.js';
import type { SimRecordInit } from '../../../src/ovhsim/index.js';
import * as store from '../../../src/store/index.js';
import { applyRoom, queueBehindLock, type ApplyRoom, type Settled } from '../../helpers/core-apply.js';
import { until } from '../../helpers/until.js';

const SMALL = 'small.test';
const BIG = 'big.test';
const ZONE = 'view.test';
const TENANTS = ['ta', 'tb'];
let room: ApplyRoom;

function many(n: number): SimRecordInit[] {
  return Array.from({ length: n }, (_, i) => ({
    subDomain: `r${i}`,
    fieldType: i % 2 ? 'TXT' : 'A',
    target: i % 2 ? `"v${i}"` : `10.0.${i >> 8}.${i & 255}`,
    ttl: 300,
  }));
}

const a = (name: string, zone: string, target: string): RawEndpoint => ({ dnsName: `${name}.${zone}`, recordType: 'A', targets: [target], ttl: 300 });
const cname = (name: string, zone: string, target: string): RawEndpoint => ({ dnsName: `${name}.${zone}`, recordType: 'CNAME', targets: [target], ttl: 300 });

function changes(tenant: string, set: Partial<RawChangeSet>, ctx: CoreContext = room.ctx): () => Promise<ApplyResult> {
  return () =>
    apply(ctx, room.tenants[tenant]!, {
      input: { kind: 'changes', policy: 'sync', changes: { create: [], updateOld: [], updateNew: [], delete: [], ...set } },
    });
}

async function one(run: () => Promise<ApplyResult>): Promise<ZoneApplyResult> {
  return (await run()).zones[0]!;
}

function answers(settled: Array<Settled<ApplyResult>>): ZoneApplyResult[] {
  return settled.map((s) => {
    if (!s.ok) throw s.error;
    return s.value.zones[0]!;
  });
}

const rec = (zone: string) => `/domain/zone/${zone}/record`;
const refresh = (zone: string) => `/domain/zone/${zone}/refresh`;
const idOf = (zone: string, sub: string) => room.sim.draftRecords(zone).find((r) => r.subDomain === sub)!.id;
const reads = (pool: pg.Pool) => zoneMemoryReads.get(pool) ?? 0;

/** The view kept for the zone is the database's records and ownership, exactly. */
async function expectViewIsTheDatabase(pool: pg.Pool, zone: string): Promise<void> {
  const view = keptZoneMemory(pool, zone);
  expect(view, 'a view is kept').toBeDefined();
  const byId = (rows: store.RecordRow[]) => rows.map((r) => `${r.id} ${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`).sort();
  const owners = (rows: store.OwnershipRow[]) => rows.map((o) => `${o.dnsName} ${o.recordType} ${o.target} ${o.tenantName} ${o.shared}`).sort();
  expect(byId(view!.allRecords())).toEqual(byId(await store.listRecords(pool, zone)));
  expect(owners(view!.allOwnership())).toEqual(owners(await store.listOwnership(pool, zone)));
  expect(view!.generation).toBe((await store.getZone(pool, zone))!.generation);
}

beforeAll(async () => {
  room = await applyRoom({
    zones: { [SMALL]: many(200), [BIG]: many(5_000), [ZONE]: [] },
    tenants: TENANTS,
    behavior: { expandedRecordLists: 'honoured', expandedListMaxPageSize: null },
  });
});

afterAll(async () => {
  await room?.close();
});

beforeEach(() => {
  room.sim.faults.clear();
  room.sim.clearCalls();
});

describe('what an apply reads from Postgres', () => {
  it('is the same in a zone of 200 records and in one of 5,000: no whole-zone read once the view is current', async () => {
    const perApply = async (zone: string, name: string) => {
      const before = { ...store.recordRowsRead, views: reads(room.db.pool) };
      const z = await one(changes('ta', { create: [a(name, zone, '192.0.2.10')] }));
      expect(z.status).toBe('applied');
      return { whole: store.recordRowsRead.whole - before.whole, named: store.recordRowsRead.named - before.named, views: reads(room.db.pool) - before.views };
    };
    // Not even the first apply of each zone reads it whole: its first sync's records, read from OVH and
    // written, are the zone's base at that generation (ReadCache.adopt), and the view stands on it.
    expect(await perApply(SMALL, 'warm')).toMatchObject({ whole: 0, views: 0 });
    expect(await perApply(BIG, 'warm')).toMatchObject({ whole: 0, views: 0 });
    room.sim.clearCalls();
    const small = await perApply(SMALL, 'one');
    const big = await perApply(BIG, 'one');
    expect(small).toEqual({ whole: 0, named: small.named, views: 0 });
    expect(big).toEqual(small);
    expect(room.calls()).toEqual([`POST ${rec(SMALL)} 200`, `POST ${refresh(SMALL)} 204`, `POST ${rec(BIG)} 200`, `POST ${refresh(BIG)} 204`]);
    await expectViewIsTheDatabase(room.db.pool, BIG);
  });
});

describe('a coalesced group', () => {
  it('plans each member once against the running view: each sees what the members before it did', async () => {
    await one(changes('ta', { create: [a('warm', ZONE, '192.0.2.1')] })); // the view is current
    room.sim.clearCalls();
    const before = { whole: store.recordRowsRead.whole, views: reads(room.db.pool) };
    const settled = await queueBehindLock(room.ctx, ZONE, [
      changes('ta', { create: [a('x', ZONE, '192.0.2.1')] }),
      // Owned by ta since the member before: a conflict, nothing sent.
      changes('tb', { create: [a('x', ZONE, '192.0.2.2')] }),
      // A CNAME beside the A record the first member created: a conflict.
      changes('ta', { create: [cname('x', ZONE, 'elsewhere.example.')] }),
      changes('tb', { create: [a('y', ZONE, '192.0.2.3')] }),
      // The set the first member sent: begins the next group, planned on what the first one left.
      changes('ta', { updateOld: [a('x', ZONE, '192.0.2.1')], updateNew: [a('x', ZONE, '192.0.2.9')] }),
    ]);
    const [first, second, third, fourth, fifth] = answers(settled);
    expect([first!.status, second!.status, third!.status, fourth!.status, fifth!.status]).toEqual([
      'applied',
      'no_changes',
      'no_changes',
      'applied',
      'applied',
    ]);
    expect(second!.conflicts.map((c) => c.reason)).toEqual([`x.${ZONE} A is owned by tenant "ta"`]);
    expect(third!.conflicts.map((c) => c.reason)).toEqual([`a CNAME cannot coexist with other record types; x.${ZONE} keeps A`]);
    expect(fifth!.changes.map((c) => [c.action, c.before?.targets, c.after?.targets])).toEqual([['update', ['192.0.2.1'], ['192.0.2.9']]]);
    expect(room.calls()).toEqual([
      `POST ${rec(ZONE)} 200`,
      `POST ${rec(ZONE)} 200`,
      `POST ${refresh(ZONE)} 204`,
      `PUT ${rec(ZONE)}/${idOf(ZONE, 'x')} 200`,
      `POST ${refresh(ZONE)} 204`,
    ]);
    // Planned on the view: never the whole zone read again.
    expect({ whole: store.recordRowsRead.whole - before.whole, views: reads(room.db.pool) - before.views }).toEqual({ whole: 0, views: 0 });
    await expectViewIsTheDatabase(room.db.pool, ZONE);
  });
});

describe('a replica whose view is behind', () => {
  it('that missed another replica commit (no NOTIFY heard) reads the zone again before it plans: its plan and calls are right', async () => {
    const pool = new pg.Pool(room.db.pool.options);
    const journalPool = store.createSidePool(pool);
    const other: CoreContext = { ...room.ctx, pool, journalPool };
    try {
      // The other replica plans on the zone, then this one changes it (the other hears nothing).
      expect((await one(changes('ta', { create: [a('moved', ZONE, '192.0.2.1')] }, other))).status).toBe('applied');
      expect((await one(changes('ta', { updateOld: [a('moved', ZONE, '192.0.2.1')], updateNew: [a('moved', ZONE, '192.0.2.2')] }))).status).toBe('applied');
      const behind = keptZoneMemory(pool, ZONE)!.generation;
      expect(behind).toBeLessThan((await store.getZone(pool, ZONE))!.generation);
      room.sim.clearCalls();
      const before = reads(pool);
      // Back to the first value: a view that had not caught up would see no change to make.
      const z = await one(changes('ta', { updateOld: [a('moved', ZONE, '192.0.2.2')], updateNew: [a('moved', ZONE, '192.0.2.1')] }, other));
      expect(z.status).toBe('applied');
      expect(z.changes.map((c) => [c.action, c.before?.targets, c.after?.targets])).toEqual([['update', ['192.0.2.2'], ['192.0.2.1']]]);
      expect(room.calls()).toEqual([`PUT ${rec(ZONE)}/${idOf(ZONE, 'moved')} 200`, `POST ${refresh(ZONE)} 204`]);
      expect(reads(pool) - before).toBe(1);
      await expectViewIsTheDatabase(pool, ZONE);
    } finally {
      await journalPool.end();
      await pool.end();
    }
  });
});

describe('a replica that hears the other replica', () => {
  it('catches up on the record ids and ownership sets the NOTIFY names, without reading the zone whole', async () => {
    const pool = new pg.Pool(room.db.pool.options);
    const journalPool = store.createSidePool(pool);
    const other: CoreContext = { ...room.ctx, pool, journalPool };
    let heard = 0n;
    const listener = await store.listen(pool, {
      zone: (zone, generation, changed) => {
        heardZoneChange(pool, zone, generation, changed);
        if (zone === ZONE) heard = generation;
      },
    });
    try {
      expect((await one(changes('ta', { create: [a('heard', ZONE, '192.0.2.1')] }, other))).status).toBe('applied');
      // This replica: an update of that set and a create by another tenant, in one group.
      const settled = await queueBehindLock(room.ctx, ZONE, [
        changes('ta', { updateOld: [a('heard', ZONE, '192.0.2.1')], updateNew: [a('heard', ZONE, '192.0.2.2')] }),
        changes('tb', { create: [a('heard-b', ZONE, '192.0.2.3')] }),
      ]);
      expect(answers(settled).map((z) => z.status)).toEqual(['applied', 'applied']);
      const now = (await store.getZone(room.db.pool, ZONE))!.generation;
      await until('the other replica to hear the last generation', () => heard >= now);
      room.sim.clearCalls();
      const before = { views: reads(pool), catchUps: zoneMemoryCatchUps.get(pool) ?? 0, whole: store.recordRowsRead.whole };
      // tb's set is tb's: the other replica must know it (ownership caught up), and heard's new value.
      const z = await one(
        changes(
          'ta',
          { create: [a('heard-b', ZONE, '192.0.2.4')], updateOld: [a('heard', ZONE, '192.0.2.2')], updateNew: [a('heard', ZONE, '192.0.2.5')] },
          other,
        ),
      );
      expect(z.status).toBe('applied');
      expect(z.conflicts.map((c) => c.reason)).toEqual([`heard-b.${ZONE} A is owned by tenant "tb"`]);
      expect(z.changes.map((c) => [c.action, c.before?.targets, c.after?.targets])).toEqual([['update', ['192.0.2.2'], ['192.0.2.5']]]);
      expect(room.calls()).toEqual([`PUT ${rec(ZONE)}/${idOf(ZONE, 'heard')} 200`, `POST ${refresh(ZONE)} 204`]);
      expect({
        views: reads(pool) - before.views,
        catchUps: (zoneMemoryCatchUps.get(pool) ?? 0) - before.catchUps,
        whole: store.recordRowsRead.whole - before.whole,
      }).toEqual({ views: 0, catchUps: 1, whole: 0 });
      await expectViewIsTheDatabase(pool, ZONE);
    } finally {
      await listener.stop();
      await journalPool.end();
      await pool.end();
    }
  });
});

describe('a failed apply', () => {
  it('a member rolled back inside its group leaves the view as the database is, and the next apply plans on it', async () => {
    await one(changes('ta', { create: [a('warm', ZONE, '192.0.2.1')] }));
    room.sim.clearCalls();
    room.sim.faults.fail({
      method: 'POST',
      path: rec(ZONE),
      nth: 2,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    const settled = await queueBehindLock(room.ctx, ZONE, [
      changes('ta', { create: [a('f1', ZONE, '192.0.2.1')] }),
      changes('tb', { create: [a('f2', ZONE, '192.0.2.2'), a('f3', ZONE, '192.0.2.3')] }),
      changes('ta', { create: [a('f4', ZONE, '192.0.2.4')] }),
    ]);
    const [first, second, third] = answers(settled);
    expect([first!.status, second!.status, third!.status]).toEqual(['applied', 'failed', 'applied']);
    await expectViewIsTheDatabase(room.db.pool, ZONE);
    // Its names are free again: the next apply of them creates them.
    room.sim.clearCalls();
    const before = reads(room.db.pool);
    expect((await one(changes('tb', { create: [a('f2', ZONE, '192.0.2.2')] }))).status).toBe('applied');
    expect(room.calls()).toEqual([`POST ${rec(ZONE)} 200`, `POST ${refresh(ZONE)} 204`]);
    expect(reads(room.db.pool) - before).toBe(0);
    await expectViewIsTheDatabase(room.db.pool, ZONE);
  });

  it('a group that stops unpublished (an undo failed) leaves no trace in the view: the next holder recovers, then plans on the database', async () => {
    await one(changes('ta', { create: [a('warm3', ZONE, '192.0.2.1')] }));
    room.sim.clearCalls();
    const refused = { kind: 'status' as const, status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } };
    // tb's second creation fails, and so does the undo of its first: the group stops, its transaction
    // rolls back, ta's creation (done, in the view) is left in flight for the next holder.
    room.sim.faults.fail({ method: 'POST', path: rec(ZONE), nth: 3, effect: refused });
    room.sim.faults.fail({ method: 'DELETE', times: 1, effect: refused });
    const settled = await queueBehindLock(room.ctx, ZONE, [
      changes('ta', { create: [a('s1', ZONE, '192.0.2.1')] }),
      changes('tb', { create: [a('s2', ZONE, '192.0.2.2'), a('s3', ZONE, '192.0.2.3')] }),
    ]);
    const stopped = answers(settled);
    expect(stopped.map((z) => z.status)).toEqual(['failed', 'failed']);
    expect(stopped[1]!.error!.message).toMatch(/undoing the 1 operation\(s\) that had succeeded failed/);
    expect(keptZoneMemory(room.db.pool, ZONE), 'dropped').toBeUndefined();
    room.sim.clearCalls();
    // Recovery takes the zone one generation on, the generation the dropped view had reached: a view
    // kept would hold s1, and this creation would look like nothing to do.
    const z = await one(changes('ta', { create: [a('s1', ZONE, '192.0.2.1')] }));
    expect(z.status).toBe('applied');
    expect(z.changes.map((c) => c.action)).toEqual(['create']);
    expect(room.calls().slice(-2)).toEqual([`POST ${rec(ZONE)} 200`, `POST ${refresh(ZONE)} 204`]);
    await expectViewIsTheDatabase(room.db.pool, ZONE);
  });

  it('a refused refresh rolls the group back: the view is the database again, and the next apply creates what was undone', async () => {
    await one(changes('ta', { create: [a('warm2', ZONE, '192.0.2.1')] }));
    room.sim.clearCalls();
    room.sim.faults.fail({
      method: 'POST',
      path: refresh(ZONE),
      times: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    const settled = await queueBehindLock(room.ctx, ZONE, [
      changes('ta', { create: [a('g1', ZONE, '192.0.2.1')] }),
      changes('tb', { create: [a('g2', ZONE, '192.0.2.2')] }),
    ]);
    expect(answers(settled).map((z) => z.status)).toEqual(['failed', 'failed']);
    await expectViewIsTheDatabase(room.db.pool, ZONE);
    room.sim.clearCalls();
    expect((await one(changes('tb', { create: [a('g1', ZONE, '192.0.2.5')] }))).status).toBe('applied');
    expect(room.calls()).toEqual([`POST ${rec(ZONE)} 200`, `POST ${refresh(ZONE)} 204`]);
    await expectViewIsTheDatabase(room.db.pool, ZONE);
  });
});
