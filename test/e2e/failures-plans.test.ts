/**
 * Plans expire (DNSPLANE_PLAN_TTL): applying an expired plan is FailedPrecondition and sends nothing.
 * (Stale plans — the zone moved since — are in failures.test.ts.)
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EndpointSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'ttl.test';
let h: Harness;
let alice: string;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_PLAN_TTL: '1ms', DNSPLANE_DRIFT_INTERVAL: '0' } });
  alice = await h.tenant('alice', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

it('an expired plan: FailedPrecondition, zero OVH calls, and the plan is marked expired', async () => {
  const client = h.zoneClient(alice);
  const planned = await client.plan({
    policy: Policy.UPSERT_ONLY,
    input: {
      case: 'desired',
      value: { zones: [], endpoints: [create(EndpointSchema, { dnsName: `x.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 })] },
    },
  });
  await new Promise((r) => setTimeout(r, 20));
  h.sim.clearCalls();
  const e = await client.apply({ source: { case: 'planId', value: planned.plan!.id } }).then(
    () => undefined,
    (x: unknown) => ConnectError.from(x),
  );
  expect(e && Code[e.code]).toBe('FailedPrecondition');
  expect(e!.rawMessage).toMatch(/expired at .*; make a new plan/);
  expect(h.sim.calls()).toEqual([]);
  expect((await store.getPlan(h.server.ctx.pool, planned.plan!.id))?.status).toBe('expired');
  expect(await store.countJournalStates(h.server.ctx.pool, ZONE)).toEqual({ in_flight: 0, done: 0, failed: 0, recovered: 0 });
});
