/**
 * The journal intent's round trip (core/apply/undo.ts, recovery.ts): an apply's intent is written as a
 * live apply writes it (intentFor, writeIntent: in flight, fenced, before its first call), the apply
 * dies part way (the row left in flight, the transaction gone, nobody holding the lock), the intent
 * is read back (readIntent), and recovery undoes exactly what OVH shows done — no more — and
 * publishes the zone again when something was undone or the dead apply may have published.
 * Real Postgres, the simulator over HTTPS through the real client; each test its own zone; every
 * test asserts the exact OVH calls of the recovery.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apply, recoverAll } from '../../../src/core/apply/index.js';
import { journalPool, send, touchedNames } from '../../../src/core/apply/ops.js';
import { intentFor, readIntent, writeIntent, type Intent } from '../../../src/core/apply/undo.js';
import { computeZonePlan } from '../../../src/core/plan/plan.js';
import { routeInput, type PlanInput, type RawEndpoint } from '../../../src/core/plan/input.js';
import { withZoneLockQueued } from '../../../src/core/zones/lock-queue.js';
import { describeOperation } from '../../../src/ovh/ops.js';
import * as store from '../../../src/store/index.js';
import { applyRoom, type ApplyRoom } from '../../helpers/core-apply.js';
import { expectCacheEqualsSimulator } from '../../helpers/expect.js';

const ZONES = ['mid.intent.test', 'refresh.intent.test', 'none.intent.test', 'others.intent.test', 'live.intent.test'];
let room: ApplyRoom;

const ep = (zone: string, name: string, recordType: string, target: string): RawEndpoint => ({
  dnsName: `${name}.${zone}`,
  recordType,
  targets: [target],
  ttl: 300,
});

/** Delete a, update the TXT t ("v1" -> "v2"), create c: DELETE, PUT, POST. */
function threeOps(zone: string): PlanInput {
  return {
    kind: 'changes',
    policy: 'sync',
    changes: {
      delete: [ep(zone, 'a', 'A', '192.0.2.1')],
      updateOld: [ep(zone, 't', 'TXT', 'v1')],
      updateNew: [ep(zone, 't', 'TXT', 'v2')],
      create: [ep(zone, 'c', 'A', '192.0.2.3')],
    },
  };
}

const content = (r: { subDomain: string; fieldType: string; target: string; ttl: number }) => `${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`;
const contents = (zone: string, which: 'draft' | 'published') =>
  (which === 'draft' ? room.sim.draftRecords(zone) : room.sim.publishedRecords(zone)).map(content).sort();
const idOf = (zone: string, sub: string) => room.sim.draftRecords(zone).find((r) => r.subDomain === sub)!.id;

const DIED = 'the process died here';

/**
 * Writes the intent of `threeOps` as a live apply does (planned under the zone lock, intent in flight
 * through the journal pool, fenced), sends its first `sent` operations (and, with `refresh`, notes the
 * stage and publishes), then dies: the transaction is gone, nothing of it recorded, the row in flight.
 * The process died long ago: its lease is past, so the next holder need not wait for it.
 */
async function dieAfter(zone: string, sent: number, opts: { refresh?: boolean } = {}): Promise<{ journalId: string; intent: Intent }> {
  const { ctx } = room;
  const alice = room.tenants['alice']!;
  let written: { journalId: string; intent: Intent } | undefined;
  const died = await withZoneLockQueued(ctx, zone, async (tx, fence) => {
    const plan = await computeZonePlan(ctx, tx, alice, zone, await routeInput(ctx, alice, threeOps(zone)));
    const ops = plan.operations;
    const intent = await intentFor(tx, zone, { ops, names: touchedNames(ops), batch: undefined });
    const journalId = await writeIntent(ctx, fence, { zone, tenantId: alice.id, intent });
    written = { journalId, intent };
    fence.lease(journalId);
    const knownIds = new Set(intent.before.map((r) => r.id));
    for (const op of ops.slice(0, sent)) await send(fence.ovh, zone, op, knownIds);
    if (opts.refresh) {
      expect(await store.noteJournalProgressFenced(journalPool(ctx), journalId, fence.session, { stage: 'refresh' })).toBe(true);
      await fence.ovh.refresh(zone);
    }
    throw new Error(DIED);
  }).catch((e: unknown) => e);
  expect(died).toEqual(new Error(DIED));
  await room.db.pool.query(`UPDATE journal SET live_until = clock_timestamp() - interval '1 minute' WHERE id = $1`, [written!.journalId]);
  return written!;
}

beforeAll(async () => {
  room = await applyRoom({ zones: Object.fromEntries(ZONES.map((z) => [z, []])), tenants: ['alice'] });
  // Every zone starts with alice's a (A 192.0.2.1) and t (TXT "v1"), published.
  for (const zone of ZONES) {
    const result = await apply(room.ctx, room.tenants['alice']!, {
      input: { kind: 'desired', policy: 'sync', zones: [zone], endpoints: [ep(zone, 'a', 'A', '192.0.2.1'), ep(zone, 't', 'TXT', 'v1')] },
    });
    expect(result.zones[0]!.status).toBe('applied');
  }
  room.sim.clearCalls();
});

afterAll(async () => {
  await room?.close();
});

beforeEach(() => {
  room.sim.faults.clear();
  room.sim.clearCalls();
});

describe('an apply that died part way', () => {
  it('after 2 of its 3 operations: the intent reads back as written; recovery undoes those 2, sends nothing for the 3rd, and publishes the undone draft', async () => {
    const zone = 'mid.intent.test';
    const REC = `/domain/zone/${zone}/record`;
    const [a, t] = [idOf(zone, 'a'), idOf(zone, 't')];
    const before = contents(zone, 'draft');
    const { journalId, intent } = await dieAfter(zone, 2);

    // What the live apply wrote: its operations for people and for recovery, its names, the cache rows
    // of those names before it; read back exactly.
    const [row] = await store.listInFlight(room.db.pool, zone);
    expect(row!.id).toBe(journalId);
    expect((row!.intent as { operations: unknown }).operations).toEqual(intent.ops.map(describeOperation));
    expect(intent.ops.map((op) => `${op.method} ${op.path}`)).toEqual([`DELETE ${REC}/${a}`, `PUT ${REC}/${t}`, `POST ${REC}`]);
    expect(intent.names).toEqual([
      { subDomain: 'a', fieldType: 'A' },
      { subDomain: 't', fieldType: 'TXT' },
      { subDomain: 'c', fieldType: 'A' },
    ]);
    expect(intent.before.map((r) => `${r.id} ${content(r)}`).sort()).toEqual([`${a} a A 192.0.2.1 300`, `${t} t TXT "v1" 300`].sort());
    expect(readIntent(row!.intent)).toEqual({ names: intent.names, before: intent.before, ops: intent.ops });

    room.sim.clearCalls();
    expect(await recoverAll(room.ctx)).toBe(1);
    const aAgain = room.sim.draftRecords(zone).find((r) => r.subDomain === 'a')!.id;
    expect(room.calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=a 200`, // gone: it was deleted
      `GET ${REC}?fieldType=TXT&subDomain=t 200`,
      `GET ${REC}/${t} 200`, // "v2": it was updated
      `GET ${REC}?fieldType=A&subDomain=c 200`, // nothing: never created
      `PUT ${REC}/${t} 200`, // back to "v1"
      `POST ${REC} 200`, // a created again
      `POST /domain/zone/${zone}/refresh 204`,
    ]);
    expect(
      room.sim
        .writes()
        .filter((c) => c.method !== 'POST' || c.path === REC)
        .map((c) => c.body),
    ).toEqual([
      { target: 'v1', ttl: 300 }, // sent as plain text, as OVH takes it
      { fieldType: 'A', subDomain: 'a', target: '192.0.2.1', ttl: 300 },
    ]);
    expect(aAgain).not.toBe(a);
    expect((await store.getJournalEntry(room.db.pool, journalId))!.state).toBe('recovered');
    expect(contents(zone, 'draft')).toEqual(before);
    expect(contents(zone, 'published')).toEqual(before);
    await expectCacheEqualsSimulator(room.db.pool, room.sim, zone);
  });

  it('after its refresh (it may have published): recovery undoes all 3 and publishes again', async () => {
    const zone = 'refresh.intent.test';
    const REC = `/domain/zone/${zone}/record`;
    const t = idOf(zone, 't');
    const before = contents(zone, 'draft');
    await dieAfter(zone, 3, { refresh: true });
    expect(contents(zone, 'published')).not.toEqual(before); // the dead apply did publish
    const c = idOf(zone, 'c');

    room.sim.clearCalls();
    expect(await recoverAll(room.ctx)).toBe(1);
    expect(room.calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}?fieldType=TXT&subDomain=t 200`,
      `GET ${REC}/${t} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
      `GET ${REC}/${c} 200`,
      `DELETE ${REC}/${c} 200`, // deletes first, then puts, then posts
      `PUT ${REC}/${t} 200`,
      `POST ${REC} 200`,
      `POST /domain/zone/${zone}/refresh 204`,
    ]);
    expect(contents(zone, 'published')).toEqual(before);
    await expectCacheEqualsSimulator(room.db.pool, room.sim, zone);
  });

  it('before its first operation: recovery re-reads the names, sends nothing and does not publish', async () => {
    const zone = 'none.intent.test';
    const REC = `/domain/zone/${zone}/record`;
    const [a, t] = [idOf(zone, 'a'), idOf(zone, 't')];
    const { journalId } = await dieAfter(zone, 0);
    room.sim.clearCalls();
    expect(await recoverAll(room.ctx)).toBe(1);
    expect(room.calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}/${a} 200`,
      `GET ${REC}?fieldType=TXT&subDomain=t 200`,
      `GET ${REC}/${t} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
    ]);
    expect((await store.getJournalEntry(room.db.pool, journalId))!.state).toBe('recovered');
    await expectCacheEqualsSimulator(room.db.pool, room.sim, zone);
  });

  it("someone else's record under a touched name is left alone, and of two identical creations only the apply's one is deleted", async () => {
    const zone = 'others.intent.test';
    const REC = `/domain/zone/${zone}/record`;
    const t = idOf(zone, 't');
    await dieAfter(zone, 3);
    const ours = idOf(zone, 'c');
    // While the apply lay dead, someone made by hand a record of another target under c, then a
    // duplicate of the one the apply created (OVH allows duplicates).
    const theirs = room.sim.addRecord(zone, { subDomain: 'c', fieldType: 'A', target: '192.0.2.99', ttl: 300 }).id;
    const duplicate = room.sim.addRecord(zone, { subDomain: 'c', fieldType: 'A', target: '192.0.2.3', ttl: 300 }).id;

    room.sim.clearCalls();
    expect(await recoverAll(room.ctx)).toBe(1);
    expect(room.calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}?fieldType=TXT&subDomain=t 200`,
      `GET ${REC}/${t} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
      `GET ${REC}/${ours} 200`,
      `GET ${REC}/${theirs} 200`,
      `GET ${REC}/${duplicate} 200`,
      `DELETE ${REC}/${ours} 200`, // one creation, one record deleted
      `PUT ${REC}/${t} 200`,
      `POST ${REC} 200`,
      `POST /domain/zone/${zone}/refresh 204`,
    ]);
    expect(
      room.sim
        .draftRecords(zone)
        .filter((r) => r.subDomain === 'c')
        .map((r) => `${r.id} ${r.target}`)
        .sort(),
    ).toEqual([`${theirs} 192.0.2.99`, `${duplicate} 192.0.2.3`].sort());
    await expectCacheEqualsSimulator(room.db.pool, room.sim, zone);
  });
});

describe('a live apply stopped mid-way', () => {
  it('its undo refused: the row it leaves in flight is read back, and recovery sends only what is still to undo (OVH already shows the rest undone)', async () => {
    const zone = 'live.intent.test';
    const REC = `/domain/zone/${zone}/record`;
    const [a, t] = [idOf(zone, 'a'), idOf(zone, 't')];
    const before = contents(zone, 'draft');
    // The creation of c is refused, and so is the undo of t's update; the undo of a's deletion goes.
    room.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    room.sim.faults.fail({
      method: 'PUT',
      path: `${REC}/*`,
      nth: 2,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'undo refused by the test' } },
    });
    const result = await apply(room.ctx, room.tenants['alice']!, { input: threeOps(zone) });
    const answer = result.zones[0]!;
    expect(answer.status).toBe('failed');
    expect(answer.error!.message).toMatch(/undoing the 2 operation\(s\) that had succeeded failed for 1 of them.*journal \d+ stays in flight/);
    const aAgain = idOf(zone, 'a');
    expect(room.calls()).toEqual([
      `DELETE ${REC}/${a} 200`,
      `PUT ${REC}/${t} 200`,
      `POST ${REC} 400`, // c refused
      `PUT ${REC}/${t} 400`, // the undo of t refused
      `POST ${REC} 200`, // a created again by the undo
    ]);
    const [row] = await store.listInFlight(room.db.pool, zone);
    expect((row!.result as { stage?: string }).stage).toBe('undo_failed');
    const intent = readIntent(row!.intent);
    expect(intent.ops!.map((op) => `${op.method} ${op.path}`)).toEqual([`DELETE ${REC}/${a}`, `PUT ${REC}/${t}`, `POST ${REC}`]);
    expect(intent.before.map((r) => r.id).sort()).toEqual([a, t].sort());

    room.sim.faults.clear();
    room.sim.clearCalls();
    expect(await recoverAll(room.ctx)).toBe(1);
    expect(room.calls()).toEqual([
      `GET ${REC}?fieldType=A&subDomain=a 200`,
      `GET ${REC}/${aAgain} 200`, // a is back already: not created a second time
      `GET ${REC}?fieldType=TXT&subDomain=t 200`,
      `GET ${REC}/${t} 200`,
      `GET ${REC}?fieldType=A&subDomain=c 200`,
      `PUT ${REC}/${t} 200`, // only what is still to undo
      `POST /domain/zone/${zone}/refresh 204`,
    ]);
    expect(room.sim.draftRecords(zone).filter((r) => r.subDomain === 'a')).toHaveLength(1);
    expect(contents(zone, 'draft')).toEqual(before);
    expect(contents(zone, 'published')).toEqual(before);
    await expectCacheEqualsSimulator(room.db.pool, room.sim, zone);
  });
});
