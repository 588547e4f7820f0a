/**
 * The withdrawal mechanism (core/withdrawals/withdrawals.ts): a target of a shared set withdrawn from OVH and
 * restored through core's apply path — one DELETE or POST per target and one refresh, never the last
 * target of a set, only owned targets of shared sets, rolled back with its rows when the refresh
 * fails — and the planner treating a withdrawn target as present for its owner (no change while it
 * still desires it; dropping it costs no OVH call). Core's apply on a real Postgres, the simulator over
 * HTTPS through the real client; every test asserts the exact OVH calls.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apply } from '../../src/core/apply/index.js';
import type { RawEndpoint } from '../../src/core/plan/input.js';
import { plan } from '../../src/core/plan/stored.js';
import type { WithdrawItem } from '../../src/core/withdrawals/items.js';
import { restoreTargets, withdrawTargets } from '../../src/core/withdrawals/withdrawals.js';
import { readCacheOf } from '../../src/core/reads/read-cache.js';
import * as store from '../../src/store/index.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';

const ZONE = 'withdraw.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
const WWW = `www.${ZONE}`;
let room: ApplyRoom;

const www = (target: string, extra: Partial<RawEndpoint> = {}): RawEndpoint => ({
  dnsName: WWW,
  recordType: 'A',
  targets: [target],
  ttl: 300,
  labels: { 'dnsplane/shared': 'true' },
  ...extra,
});
const desired = (_tenant: string, ...endpoints: RawEndpoint[]) => ({ kind: 'desired' as const, policy: 'sync' as const, zones: [ZONE], endpoints });
const silent = (target: string): WithdrawItem => ({ name: WWW, type: 'A', target, reason: 'silent', detail: 'tenant c2 silent since the test said so' });
const published = () =>
  room.sim
    .publishedRecords(ZONE)
    .filter((r) => r.fieldType === 'A')
    .map((r) => `${r.subDomain} ${r.target}`)
    .sort();
const rows = async () => (await store.listWithdrawals(room.db.pool, ZONE)).map((w) => `${w.target} ${w.reason} ${w.tenantName}`);
const ownership = async () => (await store.listOwnership(room.db.pool, ZONE)).map((o) => `${o.dnsName} ${o.target} ${o.tenantName}`);
const cache = async () =>
  (await store.listRecords(room.db.pool, ZONE))
    .filter((r) => r.fieldType === 'A')
    .map((r) => `${r.subDomain} ${r.target}`)
    .sort();

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [] }, tenants: ['c1', 'c2'] });
});

afterAll(async () => {
  await room?.close();
});

beforeEach(async () => {
  room.sim.faults.clear();
  for (const t of ['c2', 'c1']) await apply(room.ctx, room.tenants[t]!, { input: desired(t) });
  await apply(room.ctx, room.tenants.c1!, { input: desired('c1', www('192.0.2.1')) });
  await apply(room.ctx, room.tenants.c2!, { input: desired('c2', www('192.0.2.2')) });
  room.sim.clearCalls();
});

describe('withdraw and restore', () => {
  it('a withdraw is 1 DELETE + 1 refresh; the ownership row stays, the cache row goes; a restore is 1 POST + 1 refresh', async () => {
    const out = await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    expect(out.items.map((i) => `${i.target} ${i.state} ${i.tenant}`)).toEqual(['192.0.2.2 withdrawn c2']);
    expect(room.calls()).toEqual([expect.stringMatching(new RegExp(`^DELETE ${REC}/\\d+ 200$`)), `POST ${REFRESH} 204`]);
    expect(published()).toEqual(['www 192.0.2.1']);
    expect(await cache()).toEqual(['www 192.0.2.1']);
    expect(await ownership()).toEqual([`${WWW} 192.0.2.1 c1`, `${WWW} 192.0.2.2 c2`]);
    expect(await rows()).toEqual(['192.0.2.2 silent c2']);
    const entry = await store.getJournalEntry(room.db.pool, out.journalId!);
    expect(entry?.state).toBe('done');
    expect((entry!.intent as { summary?: string }).summary).toContain('tenant c2 silent since');

    // The read cache: its base holds what OVH holds (what the DNS door and the served OVH API answer);
    // its owner's Records view holds the target, marked withdrawn.
    const reads = readCacheOf(room.ctx);
    const generation = (await store.getZone(room.db.pool, ZONE))!.generation;
    const base = (await reads.baseExactlyAt(ZONE, generation))!;
    expect(base.records.filter((r) => r.fieldType === 'A').map((r) => r.target)).toEqual(['192.0.2.1']);
    expect(base.withdrawals.map((w) => w.target)).toEqual(['192.0.2.2']);
    const view = await reads.view(ZONE, generation, 'c2', false);
    expect(view.endpoints.map((e) => [e.dnsName, e.targets, e.targetStates?.map((t) => `${t.status} ${t.reason}`)])).toEqual([
      [WWW, ['192.0.2.2'], ['withdrawn silent']],
    ]);

    // Its owner still desires it: nothing planned, nothing sent.
    const p = await plan(room.ctx, room.tenants.c2!, desired('c2', www('192.0.2.2')));
    expect(p.zones[0]!.changes).toEqual([]);
    room.sim.clearCalls();
    const again = await apply(room.ctx, room.tenants.c2!, { input: desired('c2', www('192.0.2.2')) });
    expect(again.zones[0]!.status).toBe('no_changes');
    expect(room.calls()).toEqual([]);

    const back = await restoreTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    expect(back.items.map((i) => `${i.target} ${i.state}`)).toEqual(['192.0.2.2 restored']);
    expect(room.calls()).toEqual([`POST ${REC} 200`, `POST ${REFRESH} 204`]);
    expect(published()).toEqual(['www 192.0.2.1', 'www 192.0.2.2']);
    expect(await rows()).toEqual([]);
  });

  it('never the last: the second target of the set stays, and says so; withdrawing again is "already"', async () => {
    const first = await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.1'), silent('192.0.2.2')]);
    expect(first.items.map((i) => `${i.target} ${i.state} ${i.why ?? ''}`).sort()).toEqual(['192.0.2.1 withdrawn ', '192.0.2.2 kept last-target']);
    expect(room.calls().filter((c) => c.startsWith('DELETE'))).toHaveLength(1);
    expect(published()).toEqual(['www 192.0.2.2']);
    room.sim.clearCalls();
    const second = await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.1'), silent('192.0.2.2')]);
    expect(second.items.map((i) => `${i.target} ${i.state} ${i.why ?? ''}`).sort()).toEqual(['192.0.2.1 kept already', '192.0.2.2 kept last-target']);
    expect(room.calls()).toEqual([]);
  });

  it('a second reason costs no call; the target comes back only when its last reason goes', async () => {
    await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    room.sim.clearCalls();
    const health = await withdrawTargets(room.ctx, ZONE, [{ ...silent('192.0.2.2'), reason: 'health', detail: 'check failed 3 times', evidence: ['timeout'] }]);
    expect(health.items.map((i) => i.state)).toEqual(['withdrawn']);
    expect(room.calls()).toEqual([]);
    expect(await rows()).toEqual(['192.0.2.2 health c2', '192.0.2.2 silent c2']);
    const one = await restoreTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    expect(one.items.map((i) => `${i.state} ${i.why}`)).toEqual(['kept still-withdrawn']);
    expect(room.calls()).toEqual([]);
    const last = await restoreTargets(room.ctx, ZONE, [{ ...silent('192.0.2.2'), reason: 'health' }]);
    expect(last.items.map((i) => i.state)).toEqual(['restored']);
    expect(room.calls()).toEqual([`POST ${REC} 200`, `POST ${REFRESH} 204`]);
  });

  it('only owned targets of shared sets: an unknown target, an exclusive set', async () => {
    await apply(room.ctx, room.tenants.c1!, {
      input: desired('c1', www('192.0.2.1'), { dnsName: `solo.${ZONE}`, recordType: 'A', targets: ['192.0.2.9'], ttl: 300 }),
    });
    room.sim.clearCalls();
    const out = await withdrawTargets(room.ctx, ZONE, [silent('203.0.113.7'), { ...silent('192.0.2.9'), name: `solo.${ZONE}` }]);
    expect(out.items.map((i) => `${i.target} ${i.why}`)).toEqual(['203.0.113.7 not-owned', '192.0.2.9 not-shared']);
    expect(room.calls()).toEqual([]);
  });

  it('the refresh fails: OVH, cache, ownership and withdrawal rows are as before', async () => {
    const before = {
      cache: await cache(),
      ownership: await ownership(),
      rows: await rows(),
      generation: (await store.getZone(room.db.pool, ZONE))!.generation,
    };
    room.sim.faults.fail({
      method: 'POST',
      path: REFRESH,
      times: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    const out = await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    expect(out.items.map((i) => `${i.state} ${i.why}`)).toEqual(['kept not-applied']);
    expect(out.error).toBeDefined();
    // The DELETE undone by a POST, no refresh; the rollback re-reads the name it touched (GETs only).
    const calls = room.calls();
    expect(calls.slice(0, 3)).toEqual([expect.stringMatching(/^DELETE /), `POST ${REFRESH} 400`, `POST ${REC} 200`]);
    expect(calls.slice(3).every((c) => c.startsWith('GET '))).toBe(true);
    expect(await cache()).toEqual(before.cache);
    expect(await ownership()).toEqual(before.ownership);
    expect(await rows()).toEqual(before.rows);
    expect(published()).toEqual(['www 192.0.2.1', 'www 192.0.2.2']);
    expect(
      room.sim
        .draftRecords(ZONE)
        .filter((r) => r.fieldType === 'A')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['192.0.2.1', '192.0.2.2']);
  });

  it('its owner drops a withdrawn target: ownership and withdrawal rows go, no OVH call', async () => {
    await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    room.sim.clearCalls();
    const out = await apply(room.ctx, room.tenants.c2!, { input: desired('c2') });
    expect(out.zones[0]!.status).toBe('applied');
    expect(room.calls()).toEqual([]);
    expect(await ownership()).toEqual([`${WWW} 192.0.2.1 c1`]);
    expect(await rows()).toEqual([]);
  });

  it('a TTL change of a withdrawn target is kept in its row and posted on restore', async () => {
    await withdrawTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    room.sim.clearCalls();
    const out = await apply(room.ctx, room.tenants.c2!, { input: desired('c2', www('192.0.2.2', { ttl: 600 })) });
    expect(out.zones[0]!.status).toBe('applied');
    expect(room.calls()).toEqual([]);
    expect((await store.listWithdrawals(room.db.pool, ZONE)).map((w) => w.ttl)).toEqual([600]);
    await restoreTargets(room.ctx, ZONE, [silent('192.0.2.2')]);
    expect(
      room.sim
        .publishedRecords(ZONE)
        .filter((r) => r.target === '192.0.2.2')
        .map((r) => r.ttl),
    ).toEqual([600]);
  });
});
