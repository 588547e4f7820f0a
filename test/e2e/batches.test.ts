/**
 * No zone held hostage: an apply larger than DNSPLANE_APPLY_BATCH operations goes in batches, each
 * applied, journalled and published on its own, the zone lock released between them so that another
 * tenant's apply of the same zone interleaves; a failed batch is rolled back alone.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyResponseSchema, ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { ep, expectConsistent, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { memoryLogger } from '../helpers/sim-server.js';
import { until } from '../helpers/until.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'batch.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
let h: Harness;
let alice: string;
let bob: string;
const logs = memoryLogger('debug');
/** The batches (by index) planned from the rest of their previous batch instead of from the zone, since `from`. */
const carriedBatches = (from: number) =>
  logs.lines
    .slice(from)
    .filter((l) => l.msg === 'batch planned from the rest of the previous one (zone unchanged since)')
    .map((l) => l.batch);

function many(prefix: string, n: number): Endpoint[] {
  return Array.from({ length: n }, (_, i) => ep(`${prefix}${i}.${ZONE}`, 'A', [`192.0.2.${i + 1}`]));
}

/** The simulator's writes to the zone, "METHOD path" with ids masked. */
function writes(): string[] {
  return h.sim
    .writes()
    .filter((c) => c.path.startsWith(`/domain/zone/${ZONE}`))
    .map((c) => `${c.method} ${c.path.replace(/\d{6,}$/, 'ID')}`);
}

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [] },
    env: { DNSPLANE_APPLY_BATCH: '10', DNSPLANE_DRIFT_INTERVAL: '0', DNSPLANE_MAX_CHANGE_PERCENT: '100' },
    logger: logs.log,
  });
  alice = await h.tenant('alice', [ZONE]);
  bob = await h.tenant('bob', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(async () => {
  h.sim.faults.clear();
  // Start each test from an empty zone of alice's (SYNC of nothing deletes her records).
  await applyDesired(h.zoneClient(alice), [], Policy.SYNC, [ZONE]);
  await applyDesired(h.zoneClient(bob), [], Policy.SYNC, [ZONE]);
  h.sim.clearCalls();
});

describe('an apply larger than DNSPLANE_APPLY_BATCH', () => {
  it('25 creations with batches of 10: three batches, each published by its own refresh and journalled; the answer lists them', async () => {
    const since = logs.lines.length;
    const res = await applyDesired(h.zoneClient(alice), many('x', 25), Policy.UPSERT_ONLY, [ZONE]);
    // Nobody else changed the zone: batches 2 and 3 were planned from the rest of the one before,
    // not by reading and diffing the zone again (the calls below are what planning anew sends).
    expect(carriedBatches(since)).toEqual([2, 3]);
    const z = res.zones[0]!;
    expect(ApplyStatus[z.status]).toBe('APPLIED');
    expect(z.batches.map((b) => [b.index, b.operations])).toEqual([
      [1, 10],
      [2, 10],
      [3, 5],
    ]);
    expect(z.batches.map((b) => b.generation)).toEqual([...z.batches.map((b) => b.generation)].sort((a, b) => (a < b ? -1 : 1)));
    expect(z.generation).toBe(z.batches[2]!.generation);
    expect(z.changes).toHaveLength(25);
    expect(writes()).toEqual([
      ...Array(10).fill(`POST ${REC}`),
      `POST ${REFRESH}`,
      ...Array(10).fill(`POST ${REC}`),
      `POST ${REFRESH}`,
      ...Array(5).fill(`POST ${REC}`),
      `POST ${REFRESH}`,
    ]);
    const journal = (await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: 3 })).reverse();
    expect(journal.map((j) => [j.state, (j.intent as { batch?: number }).batch])).toEqual([
      ['done', 1],
      ['done', 2],
      ['done', 3],
    ]);
    expect(journal.map((j) => j.id)).toEqual(z.batches.map((b) => b.journalId));
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);

    // Small applies are not batched: no batches in the answer, no batch in the journal.
    const small = await applyDesired(h.zoneClient(alice), [ep(`y.${ZONE}`, 'A', ['192.0.2.200'])], Policy.UPSERT_ONLY, [ZONE]);
    expect(small.zones[0]!.batches).toEqual([]);
    expect(((await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: 1 }))[0]!.intent as { batch?: number }).batch).toBeUndefined();
  });

  it("another tenant's 1-record apply to the same zone goes in between two batches, not after the whole request", async () => {
    h.sim.faults.setLatency(30);
    const since = logs.lines.length;
    const big = applyDesired(h.zoneClient(alice), many('x', 40), Policy.UPSERT_ONLY, [ZONE]);
    await until("alice's first creation to reach OVH", () => h.sim.calls().some((c) => c.method === 'POST' && c.path === REC));
    const small = applyDesired(h.zoneClient(bob), [ep(`b.${ZONE}`, 'A', ['203.0.113.1'])], Policy.UPSERT_ONLY, [ZONE]);
    const [rb, rs] = await Promise.all([big, small]);
    h.sim.faults.setLatency(0);
    expect(ApplyStatus[rb.zones[0]!.status]).toBe('APPLIED');
    expect(rb.zones[0]!.batches).toHaveLength(4);
    expect(ApplyStatus[rs.zones[0]!.status]).toBe('APPLIED');

    const log = h.sim.writes().filter((c) => c.path.startsWith(`/domain/zone/${ZONE}`));
    const bobsPost = log.findIndex((c) => c.method === 'POST' && (c.body as { subDomain?: string } | undefined)?.subDomain === 'b');
    const refreshes = log.map((c, i) => (c.path === REFRESH ? i : -1)).filter((i) => i >= 0);
    expect(refreshes).toHaveLength(5); // 4 batches + bob's
    // Bob's creation came right after the first batch's refresh, its own refresh right after it.
    expect(bobsPost).toBe(refreshes[0]! + 1);
    expect(refreshes[1]).toBe(bobsPost + 1);
    // Bob's apply moved the zone after batch 1: batch 2 planned the zone again; 3 and 4 from the rest.
    expect(carriedBatches(since)).toEqual([3, 4]);
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });

  it('a SYNC of updates, deletes and creations over several batches ends exactly at the desired state', async () => {
    await applyDesired(h.zoneClient(alice), many('s', 30), Policy.SYNC, [ZONE]);
    h.sim.clearCalls();
    const since = logs.lines.length;
    // 0-9 stay, 10-19 change target, 20-29 go, 30-44 are new: 10 updates, 10 deletes, 15 creations.
    const desired = [
      ...many('s', 10),
      ...many('s', 20)
        .slice(10)
        .map((e) => ({ ...e, targets: ['198.51.100.7'] }) as Endpoint),
      ...many('s', 45).slice(30),
    ];
    const res = await applyDesired(h.zoneClient(alice), desired, Policy.SYNC, [ZONE]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(res.zones[0]!.batches.map((b) => b.operations)).toEqual([10, 10, 10, 5]);
    expect(carriedBatches(since)).toEqual([2, 3, 4]);
    // Deletions first (their own batch), then the rest; nothing left to do afterwards.
    expect(writes().slice(0, 11)).toEqual([...Array(10).fill(`DELETE ${REC}/ID`), `POST ${REFRESH}`]);
    const names = h.sim
      .draftRecords(ZONE)
      .filter((r) => r.subDomain.startsWith('s'))
      .map((r) => `${r.subDomain} ${r.target}`)
      .sort();
    expect(names).toEqual(desired.map((e) => `${e.dnsName.slice(0, -ZONE.length - 1)} ${e.targets[0]}`).sort());
    const again = await applyDesired(h.zoneClient(alice), desired, Policy.SYNC, [ZONE]);
    expect(ApplyStatus[again.zones[0]!.status]).toBe('NO_CHANGES');
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });

  it('a batch that fails is rolled back alone: the earlier batch stays published, the next is not started, and the error says so', async () => {
    h.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 15,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'Invalid target' } },
    });
    const e = await expectRejected(
      applyDesired(h.zoneClient(alice), many('x', 25), Policy.UPSERT_ONLY, [ZONE]),
      Code.FailedPrecondition,
      /apply to zone batch\.test: batch 1 \(10 operation\(s\)\) applied and published, generation \d+; batch 2 was not applied \(rolled back alone, nothing of it published\): apply to zone batch\.test failed at operation 5 of 10, POST .*HTTP 400/,
    );
    const [detail] = e.findDetails(ApplyResponseSchema);
    const z = detail!.zones[0]!;
    expect(ApplyStatus[z.status]).toBe('FAILED');
    expect(z.batches.map((b) => [b.index, b.operations])).toEqual([[1, 10]]);
    expect(writes()).toEqual([
      ...Array(10).fill(`POST ${REC}`),
      `POST ${REFRESH}`, // batch 1 published
      ...Array(5).fill(`POST ${REC}`), // batch 2: 4 done, the 5th refused
      ...Array(4).fill(`DELETE ${REC}/ID`), // batch 2 undone alone
    ]);
    const published = h.sim.publishedRecords(ZONE).filter((r) => r.subDomain.startsWith('x'));
    expect(published).toHaveLength(10);
    const journal = (await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: 2 })).reverse();
    expect(journal.map((j) => [j.state, (j.intent as { batch?: number }).batch])).toEqual([
      ['done', 1],
      ['failed', 2],
    ]);
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);

    // The next try plans the rest: 15 creations, two batches.
    h.sim.clearCalls();
    const again = await applyDesired(h.zoneClient(alice), many('x', 25), Policy.UPSERT_ONLY, [ZONE]);
    expect(again.zones[0]!.batches.map((b) => b.operations)).toEqual([10, 5]);
    await expectConsistent(h.server.ctx.pool, h.sim, ZONE);
  });
});
