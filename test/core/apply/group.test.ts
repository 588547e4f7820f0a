/**
 * The group (core/apply/group.ts, holder.ts): which waiting applies of a zone the lock's holder takes
 * into its group, published by one refresh — disjoint record sets join; an apply touching a record set
 * the group already sent something for begins the next group; the operations bound
 * (DNSPLANE_APPLY_BATCH); the time bound (DNSPLANE_APPLY_COALESCE) — and what a failing member undoes:
 * only its own operations, its neighbours published by the one refresh. Core's apply on a real
 * Postgres, the simulator over HTTPS through the real client; the applies reach the lock in a known
 * order (queueBehindLock); every test asserts the exact OVH calls.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apply, type ApplyResult, type ZoneApplyResult } from '../../../src/core/apply/index.js';
import type { CoreContext } from '../../../src/core/context.js';
import type { RawChangeSet, RawEndpoint } from '../../../src/core/plan/input.js';
import * as store from '../../../src/store/index.js';
import { applyRoom, queueBehindLock, type ApplyRoom, type Settled } from '../../helpers/core-apply.js';

const ZONE = 'group.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
const TENANTS = ['t0', 't1', 't2', 't3'];
let room: ApplyRoom;

const a = (name: string, target: string): RawEndpoint => ({ dnsName: `${name}.${ZONE}`, recordType: 'A', targets: [target], ttl: 300 });

function changes(tenant: string, set: Partial<RawChangeSet>, ctx: CoreContext = room.ctx): () => Promise<ApplyResult> {
  return () =>
    apply(ctx, room.tenants[tenant]!, {
      input: { kind: 'changes', policy: 'sync', changes: { create: [], updateOld: [], updateNew: [], delete: [], ...set } },
    });
}

const create = (tenant: string, ...endpoints: RawEndpoint[]) => changes(tenant, { create: endpoints });

/** The zone's answer of each apply (each must have answered, not thrown). */
function answers(settled: Array<Settled<ApplyResult>>): ZoneApplyResult[] {
  return settled.map((s) => {
    if (!s.ok) throw s.error;
    return s.value.zones[0]!;
  });
}

const idOf = (sub: string) => room.sim.draftRecords(ZONE).find((r) => r.subDomain === sub)!.id;
const published = () =>
  room.sim
    .publishedRecords(ZONE)
    .filter((r) => r.fieldType !== 'NS')
    .map((r) => `${r.subDomain} ${r.target}`)
    .sort();

async function journal(n: number): Promise<store.JournalEntry[]> {
  return (await store.listJournal(room.db.pool, { zone: ZONE, limit: n })).reverse();
}

const coalescedOf = (row: store.JournalEntry) => (row.result as { coalesced?: { applies: number; first: string } }).coalesced;

beforeAll(async () => {
  // Groups of at most 4 operations (DNSPLANE_APPLY_BATCH); no time bound a loaded machine could reach.
  room = await applyRoom({ zones: { [ZONE]: [] }, tenants: TENANTS, settings: { applyBatch: 4 } });
});

afterAll(async () => {
  await room?.close();
});

beforeEach(async () => {
  room.sim.faults.clear();
  // Each test starts from an empty zone: every tenant's SYNC of nothing.
  for (const t of TENANTS) await apply(room.ctx, room.tenants[t]!, { input: { kind: 'desired', policy: 'sync', zones: [ZONE], endpoints: [] } });
  room.sim.clearCalls();
});

describe('which waiting applies join the group', () => {
  it('applies of disjoint record sets join: one refresh publishes them all, each with its own journal row, generation and answer', async () => {
    const settled = await queueBehindLock(room.ctx, ZONE, [
      create('t0', a('d0', '192.0.2.1')),
      create('t1', a('d1', '192.0.2.2')),
      create('t2', a('d2', '192.0.2.3')),
    ]);
    expect(room.calls()).toEqual([`POST ${REC} 200`, `POST ${REC} 200`, `POST ${REC} 200`, `POST ${REFRESH} 204`]);
    const zones = answers(settled);
    expect(zones.map((z) => z.status)).toEqual(['applied', 'applied', 'applied']);
    for (const z of zones) expect(z.calls.map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual([`POST ${REC} 200`, `POST ${REFRESH} 204`]);
    const generations = zones.map((z) => z.generation);
    expect(generations).toEqual([generations[0]!, generations[0]! + 1n, generations[0]! + 2n]);
    const rows = await journal(3);
    expect(rows.map((r) => [r.state, coalescedOf(r)?.applies, coalescedOf(r)?.first])).toEqual(rows.map(() => ['done', 3, rows[0]!.id]));
    expect(zones.map((z) => z.journalId)).toEqual(rows.map((r) => r.id));
    expect(published()).toEqual(['d0 192.0.2.1', 'd1 192.0.2.2', 'd2 192.0.2.3']);
  });

  it('an apply touching a record set the group already sent something for begins the next group, and the one behind it joins that group', async () => {
    await create('t0', a('k', '192.0.2.10'))();
    room.sim.clearCalls();
    const k = idOf('k');
    const settled = await queueBehindLock(room.ctx, ZONE, [
      changes('t0', { updateOld: [a('k', '192.0.2.10')], updateNew: [a('k', '192.0.2.11')] }),
      changes('t0', { updateOld: [a('k', '192.0.2.11')], updateNew: [a('k', '192.0.2.12')] }), // k again: the next group
      create('t1', a('m', '192.0.2.13')), // disjoint, but behind it in the queue: joins the next group
    ]);
    expect(room.calls()).toEqual([`PUT ${REC}/${k} 200`, `POST ${REFRESH} 204`, `PUT ${REC}/${k} 200`, `POST ${REC} 200`, `POST ${REFRESH} 204`]);
    expect(answers(settled).map((z) => z.status)).toEqual(['applied', 'applied', 'applied']);
    const rows = await journal(3);
    expect(rows.map((r) => coalescedOf(r)?.applies)).toEqual([undefined, 2, 2]); // a lone apply's row names no group
    expect(published()).toEqual(['k 192.0.2.12', 'm 192.0.2.13']);
  });

  it('the operations bound: a group holds at most DNSPLANE_APPLY_BATCH (4) operations; an apply that would pass it begins the next group', async () => {
    // 3 + 2 > 4: the second apply begins the next group, which the third (1) joins: 2 + 1.
    await queueBehindLock(room.ctx, ZONE, [
      create('t0', a('p0', '192.0.2.20'), a('p1', '192.0.2.21'), a('p2', '192.0.2.22')),
      create('t1', a('q0', '192.0.2.23'), a('q1', '192.0.2.24')),
      create('t2', a('r0', '192.0.2.25')),
    ]);
    expect(room.calls()).toEqual([...Array(3).fill(`POST ${REC} 200`), `POST ${REFRESH} 204`, ...Array(3).fill(`POST ${REC} 200`), `POST ${REFRESH} 204`]);
    room.sim.clearCalls();
    // 2 + 2 = 4 joins; the group is full then: the third begins the next group.
    await queueBehindLock(room.ctx, ZONE, [
      create('t0', a('s0', '192.0.2.30'), a('s1', '192.0.2.31')),
      create('t1', a('u0', '192.0.2.32'), a('u1', '192.0.2.33')),
      create('t2', a('v0', '192.0.2.34')),
    ]);
    expect(room.calls()).toEqual([...Array(4).fill(`POST ${REC} 200`), `POST ${REFRESH} 204`, `POST ${REC} 200`, `POST ${REFRESH} 204`]);
    expect((await journal(6)).map((r) => coalescedOf(r)?.applies)).toEqual([undefined, 2, 2, 2, 2, undefined]);
  });

  it('the time bound: a group that has run DNSPLANE_APPLY_COALESCE takes no more applies', async () => {
    // Every creation takes 200 ms (the simulator holds it): longer than the 50 ms bound.
    const slow = { ...room.ctx, settings: { ...room.ctx.settings, applyCoalesceMs: 50 } };
    room.sim.faults.fail({ method: 'POST', path: REC, effect: { kind: 'delay', ms: 200 } });
    const settled = await queueBehindLock(
      slow,
      ZONE,
      [0, 1, 2].map((i) => changes(TENANTS[i]!, { create: [a(`w${i}`, `192.0.2.4${i}`)] }, slow)),
    );
    expect(answers(settled).map((z) => z.status)).toEqual(['applied', 'applied', 'applied']);
    expect(room.calls()).toEqual([
      `POST ${REC} 200`,
      `POST ${REFRESH} 204`,
      `POST ${REC} 200`,
      `POST ${REFRESH} 204`,
      `POST ${REC} 200`,
      `POST ${REFRESH} 204`,
    ]);
  });
});

describe('a member whose operation fails', () => {
  it('undoes only its own operations, newest first, and re-reads only its names; the one refresh publishes its neighbours', async () => {
    await changes('t1', { create: [a('d', '192.0.2.50'), a('e', '192.0.2.51')] })();
    const [d, e] = [idOf('d'), idOf('e')];
    const before = published();
    room.sim.clearCalls();
    // t1 deletes d, updates e, creates f1 and f2: f2 (the 3rd POST of the run) is refused. Groups of
    // up to 10 operations here, so that all three join.
    room.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 3,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    const wide = { ...room.ctx, settings: { ...room.ctx.settings, applyBatch: 10 } };
    const settled = await queueBehindLock(wide, ZONE, [
      changes('t0', { create: [a('x0', '192.0.2.60')] }, wide),
      changes(
        't1',
        {
          delete: [a('d', '192.0.2.50')],
          updateOld: [a('e', '192.0.2.51')],
          updateNew: [a('e', '192.0.2.59')],
          create: [a('f1', '192.0.2.52'), a('f2', '192.0.2.53')],
        },
        wide,
      ),
      changes('t2', { create: [a('x2', '192.0.2.62')] }, wide),
    ]);
    const f1 = room.sim.writes().find((c) => c.method === 'DELETE' && c.path !== `${REC}/${d}`)!.path;
    const dAgain = idOf('d');
    expect(room.calls()).toEqual([
      `POST ${REC} 200`, // x0 (t0)
      `DELETE ${REC}/${d} 200`, // t1: d
      `PUT ${REC}/${e} 200`, // e .51 -> .59
      `POST ${REC} 200`, // f1
      `POST ${REC} 400`, // f2: refused
      `DELETE ${f1} 200`, // undo f1 (newest first)
      `PUT ${REC}/${e} 200`, // undo e: .51 again
      `POST ${REC} 200`, // undo d: created again
      `GET ${REC}?fieldType=A&subDomain=d 200`, // t1's names only, re-read
      `GET ${REC}/${dAgain} 200`,
      `GET ${REC}?fieldType=A&subDomain=e 200`,
      `GET ${REC}/${e} 200`,
      `GET ${REC}?fieldType=A&subDomain=f1 200`,
      `GET ${REC}?fieldType=A&subDomain=f2 200`,
      `POST ${REC} 200`, // x2 (t2)
      `POST ${REFRESH} 204`, // one refresh publishes t0 and t2
    ]);
    const bodies = room.sim
      .writes()
      .filter((c) => c.method === 'PUT')
      .map((c) => c.body);
    expect(bodies).toEqual([
      { target: '192.0.2.59', ttl: 300 },
      { target: '192.0.2.51', ttl: 300 },
    ]);
    const [z0, z1, z2] = answers(settled);
    expect([z0!.status, z1!.status, z2!.status]).toEqual(['applied', 'failed', 'applied']);
    expect(z1!.error!.message).toMatch(
      /failed at operation 4 of 4, POST .*\(f2 A 192\.0\.2\.53\).*refused by the test.*the 3 operation\(s\) that had succeeded were undone and nothing was published/,
    );
    expect(published()).toEqual([...before, 'x0 192.0.2.60', 'x2 192.0.2.62'].sort());
    expect((await journal(3)).map((r) => [r.state, coalescedOf(r)?.applies])).toEqual([
      ['done', 2],
      ['failed', undefined],
      ['done', 2],
    ]);
    // The cache holds what OVH's draft holds, record for record.
    const cache = (await store.listRecords(room.db.pool, ZONE)).map((r) => `${r.id} ${r.subDomain} ${r.target}`).sort();
    expect(cache).toEqual(
      room.sim
        .draftRecords(ZONE)
        .map((r) => `${r.id} ${r.subDomain} ${r.target}`)
        .sort(),
    );
  });
});
