/**
 * Tenant liveness (core/withdrawals/liveness.ts) on core directly — real Postgres, the simulator over HTTPS: the
 * withdraw-after rule (whole seconds, 1 s - 30 days, named field), a sign of life written at once and
 * never moved back, the silent-tenant check's choice (silent past withdraw_after plus the write
 * interval; shared targets only), and a tenant's call restoring what was withdrawn for its silence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/core/apply/index.js';
import { Liveness, withdrawSilentTenants } from '../../src/core/withdrawals/liveness.js';
import { setTenantWithdrawAfter } from '../../src/core/tenants/tenants.js';
import * as store from '../../src/store/index.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { until } from '../helpers/until.js';

const ZONE = 'liveness.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;
let room: ApplyRoom;

const shared = (target: string) => ({ dnsName: `www.${ZONE}`, recordType: 'A', targets: [target], ttl: 300, labels: { 'dnsplane/shared': 'true' } });
const lastSeen = async (name: string) => (await store.getTenantByName(room.db.pool, name))!.lastSeenAt;

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [] }, tenants: ['c1', 'c2'] });
  await apply(room.ctx, room.tenants.c1!, { input: { kind: 'desired', policy: 'sync', zones: [ZONE], endpoints: [shared('192.0.2.1')] } });
  await apply(room.ctx, room.tenants.c2!, {
    input: {
      kind: 'desired',
      policy: 'sync',
      zones: [ZONE],
      endpoints: [shared('192.0.2.2'), { dnsName: `solo.${ZONE}`, recordType: 'A', targets: ['192.0.2.9'], ttl: 300 }],
    },
  });
  room.sim.clearCalls();
});

afterAll(async () => {
  await room?.close();
});

describe('withdraw-after', () => {
  it('is whole seconds from 1 s to 30 days, or off; a tenant never seen counts as seen when it is set', async () => {
    for (const ms of [500, 0, 1500, 31 * 86_400_000]) {
      await expect(setTenantWithdrawAfter(room.db.pool, 'c1', ms)).rejects.toThrow(/withdrawAfter: must be whole seconds from 1s to 30 days/);
    }
    await expect(setTenantWithdrawAfter(room.db.pool, 'nobody', 5000)).rejects.toThrow(/tenant "nobody" does not exist/);
    expect(await lastSeen('c1')).toBeUndefined();
    const t = await setTenantWithdrawAfter(room.db.pool, 'c1', 300_000);
    expect(t.withdrawAfterMs).toBe(300_000);
    expect(t.lastSeenAt).toBeInstanceOf(Date);
    expect((await setTenantWithdrawAfter(room.db.pool, 'c1', null)).withdrawAfterMs).toBeUndefined();
  });
});

describe('signs of life and the silent-tenant check', () => {
  it('a sign of life is written at once and never moves back', async () => {
    const at = new Date('2030-01-01T00:00:00Z');
    await store.noteTenantsSeen(room.db.pool, [{ id: room.tenants.c2!.id, at }]);
    await store.noteTenantsSeen(room.db.pool, [{ id: room.tenants.c2!.id, at: new Date('2029-01-01T00:00:00Z') }]);
    expect((await lastSeen('c2'))!.toISOString()).toBe(at.toISOString());
    let now = Date.now();
    const liveness = new Liveness(room.ctx, { writeEveryMs: 60_000, clock: () => now });
    await room.db.pool.query(`UPDATE tenants SET last_seen_at = NULL WHERE name = 'c2'`);
    liveness.seen(room.tenants.c2!);
    const first = now;
    now += 1000;
    liveness.seen(room.tenants.c2!); // within the interval: remembered, written at its end
    expect((await until('the first call written', () => lastSeen('c2'))).getTime()).toBe(first);
  });

  it('silent past withdraw_after plus the write interval: its shared target withdrawn (not its exclusive set); its next call restores it', async () => {
    const c2 = room.tenants.c2!;
    await setTenantWithdrawAfter(room.db.pool, 'c2', 60_000);
    await room.db.pool.query(`UPDATE tenants SET last_seen_at = now() - interval '90 seconds' WHERE name = 'c2'`);
    const liveness = new Liveness(room.ctx, { writeEveryMs: 60_000 });
    room.ctx.liveness = liveness;
    try {
      // 90 s silent, but withdraw_after + the write interval is 120 s: not yet.
      expect(await store.listSilentTenants(room.db.pool, 60_000)).toEqual([]);
      await room.db.pool.query(`UPDATE tenants SET last_seen_at = now() - interval '150 seconds' WHERE name = 'c2'`);
      const turn = (await withdrawSilentTenants(room.ctx))!;
      expect(turn.flatMap((o) => o.items).map((i) => `${i.name} ${i.target} ${i.state}`)).toEqual([`www.${ZONE} 192.0.2.2 withdrawn`]);
      expect(room.calls()).toEqual([expect.stringMatching(new RegExp(`^DELETE ${REC}/\\d+ 200$`)), `POST ${REFRESH} 204`]);
      expect((await store.listWithdrawals(room.db.pool, ZONE)).map((w) => `${w.target} ${w.reason} ${(w.detail as { detail: string }).detail}`)).toEqual([
        expect.stringMatching(/^192\.0\.2\.2 silent tenant c2 silent since \d{4}-/),
      ]);
      // Nothing more to withdraw at the next turn.
      room.sim.clearCalls();
      expect(await withdrawSilentTenants(room.ctx)).toEqual([]);
      expect(room.calls()).toEqual([]);

      liveness.seen(c2);
      await until('restored by its call', async () => (await store.listWithdrawals(room.db.pool, ZONE)).length === 0);
      await liveness.settled();
      expect(room.calls()).toEqual([`POST ${REC} 200`, `POST ${REFRESH} 204`]);
      expect(
        room.sim
          .publishedRecords(ZONE)
          .filter((r) => r.subDomain === 'www')
          .map((r) => r.target)
          .sort(),
      ).toEqual(['192.0.2.1', '192.0.2.2']);
    } finally {
      delete room.ctx.liveness;
    }
  });
});
