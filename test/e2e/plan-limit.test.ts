/**
 * DNSPLANE_PLAN_CONCURRENCY end to end: one tenant's Plans beyond the bound are refused with
 * RESOURCE_EXHAUSTED while its others compute; other tenants plan as usual; the slot comes back.
 * The first Plan is held deterministically: its zone was never synced, so it waits for the zone lock,
 * which the test holds.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { ep, expectRejected } from '../helpers/expect.js';
import { until } from '../helpers/until.js';
import { holdZoneLock } from '../helpers/zone-locks.js';

const HELD = 'held.test';
const OTHER = 'other.test';
let h: Harness;
let alice: string;
let bob: string;

function plan(token: string, zone: string, endpoints: Endpoint[]) {
  return h.zoneClient(token).plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [zone], endpoints } } });
}

beforeAll(async () => {
  h = await startHarness({ zones: { [HELD]: [], [OTHER]: [] }, env: { DNSPLANE_PLAN_CONCURRENCY: '1', DNSPLANE_LOCK_TIMEOUT: '120s' } });
  alice = await h.tenant('alice', [HELD, OTHER]);
  bob = await h.tenant('bob', [OTHER]);
  await h.zoneClient(bob).records({ zones: [OTHER] }); // synced: bob's plans never wait for a lock
});

afterAll(async () => {
  await h?.close();
});

describe('DNSPLANE_PLAN_CONCURRENCY', () => {
  it("refuses a tenant's plan beyond the bound, lets other tenants plan, and frees the slot", async () => {
    const aliceRow = (await store.getTenantByName(h.server.ctx.pool, 'alice'))!;
    // The zone lock of HELD, taken outside the server: alice's first plan waits for it in its first sync.
    const lock = await holdZoneLock(h.server.ctx.pool, HELD);

    const first = plan(alice, HELD, [ep(`a.${HELD}`, 'A', ['192.0.2.1'])]);
    await until("alice's first plan to be in progress", () => h.server.ctx.planLimiter?.inProgress(aliceRow.id) === 1);

    await expectRejected(
      plan(alice, OTHER, [ep(`b.${OTHER}`, 'A', ['192.0.2.2'])]),
      Code.ResourceExhausted,
      /^tenant "alice" already has 1 plan\(s\) in progress, the most one tenant may have at once \(DNSPLANE_PLAN_CONCURRENCY=1\); retry when one has finished$/,
    );
    // Another tenant is not held back.
    const bobs = await plan(bob, OTHER, [ep(`c.${OTHER}`, 'A', ['192.0.2.3'])]);
    expect(bobs.plan!.zones[0]!.changes).toHaveLength(1);

    await lock.release();
    const done = await first;
    expect(done.plan!.zones[0]!.changes.map((c) => c.after!.dnsName)).toEqual([`a.${HELD}`]);
    expect(h.server.ctx.planLimiter?.inProgress(aliceRow.id)).toBe(0);
    const again = await plan(alice, OTHER, [ep(`b.${OTHER}`, 'A', ['192.0.2.2'])]);
    expect(again.plan!.zones[0]!.changes).toHaveLength(1);

    const metrics = (await h.server.metrics.render()).body;
    expect(metrics).toContain('dnsplane_plans_refused_total{tenant="alice"} 1');
    expect(metrics).toContain('dnsplane_plans_in_progress{tenant="alice"} 0');
    expect(metrics).toMatch(/dnsplane_plan_duration_seconds_count 3/);
  });
});
