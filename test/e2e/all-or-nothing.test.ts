/**
 * PlanInput.allOrNothing (used by NSM publishing): a conflict found under the zone lock refuses the
 * whole zone and sends nothing; without it, the other record sets apply (ZoneService's rule).
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { apply } from '../../src/core/apply/index.js';
import type { PlanInput } from '../../src/core/plan/input.js';
import { authenticate } from '../../src/core/tenants/tenants.js';
import * as store from '../../src/store/index.js';
import { callLines } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.com';
let h: Harness;
let aliceToken: string;

const desired = (allOrNothing: boolean): PlanInput => ({
  kind: 'desired',
  zones: [],
  policy: 'upsert-only',
  allOrNothing,
  endpoints: [
    { dnsName: `taken.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 },
    { dnsName: `free.${ZONE}`, recordType: 'A', targets: ['192.0.2.2'], ttl: 300 },
  ],
});

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  aliceToken = await h.tenant('alice', [ZONE]);
  const bobToken = await h.tenant('bob', [ZONE]);
  const bob = await authenticate(h.server.ctx.pool, bobToken);
  await apply(h.server.ctx, bob, {
    input: {
      kind: 'desired',
      zones: [],
      policy: 'upsert-only',
      endpoints: [{ dnsName: `taken.${ZONE}`, recordType: 'A', targets: ['198.51.100.1'], ttl: 300 }],
    },
  });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

it('all or nothing: a conflict refuses the zone under the lock, nothing is sent, the error names the set', async () => {
  const alice = await authenticate(h.server.ctx.pool, aliceToken);
  const generation = (await store.getZone(h.server.ctx.pool, ZONE))!.generation;
  const { zones } = await apply(h.server.ctx, alice, { input: desired(true) });
  expect(zones[0]).toMatchObject({ zone: ZONE, status: 'refused', calls: [] });
  expect(zones[0]!.conflicts.map((c) => [c.endpoint.dnsName, c.owner])).toEqual([[`taken.${ZONE}`, 'bob']]);
  expect(zones[0]!.error?.message).toMatch(/taken\.example\.com A.*all or nothing, so nothing was sent/);
  expect(callLines(h.sim)).toEqual([]);
  expect(h.sim.draftRecords(ZONE).some((r) => r.subDomain === 'free')).toBe(false);
  expect((await store.getZone(h.server.ctx.pool, ZONE))!.generation).toBe(generation);
});

it('without it, the conflict is reported and the other set applies (1 POST + 1 refresh)', async () => {
  const alice = await authenticate(h.server.ctx.pool, aliceToken);
  const { zones } = await apply(h.server.ctx, alice, { input: desired(false) });
  expect(zones[0]).toMatchObject({ zone: ZONE, status: 'applied' });
  expect(zones[0]!.conflicts.map((c) => c.endpoint.dnsName)).toEqual([`taken.${ZONE}`]);
  expect(callLines(h.sim)).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
});
