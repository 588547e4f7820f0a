/**
 * Waiting for a change to be visible through the API (docs/propagation.md): ZoneService.Apply with
 * wait WAIT_VISIBLE, GetApply, and what a bad wait is answered. Real server, real Postgres, the OVH
 * simulator.
 */
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VisibilityState, Wait } from '../../src/gen/dnsplane/v1/visibility_pb.js';
import { ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'wait.test';
let h: Harness;
let alice: string;
let bob: string;
let admin: string;

const upsert = (endpoints: Endpoint[]) => ({ source: { case: 'plan' as const, value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints } } } } });

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  alice = await h.tenant('alice', [ZONE], { suffixes: [`a.${ZONE}`] });
  bob = await h.tenant('bob', [ZONE], { suffixes: [`b.${ZONE}`] });
  admin = await h.tenant('admin', [], { admin: true });
});

afterAll(async () => {
  await h?.close();
});

describe('Apply and GetApply', () => {
  it('without a wait: the journal id of the publish, no visibility; GetApply answers it published', async () => {
    const res = await h.zoneClient(alice).apply(upsert([ep(`www.a.${ZONE}`, 'A', ['192.0.2.1'])]));
    const z = res.zones[0]!;
    expect(z.status).toBe(ApplyStatus.APPLIED);
    expect(z.journalId).toMatch(/^[1-9][0-9]*$/);
    expect(z.visibility).toBeUndefined();
    const got = await h.zoneClient(alice).getApply({ journalId: z.journalId });
    expect(got).toMatchObject({ journalId: z.journalId, zone: ZONE, tenant: 'alice', planId: '', state: 'done', error: '' });
    expect(got.visibility).toMatchObject({ journalId: z.journalId, zone: ZONE });
    expect(got.visibility!.publishedAt).toBeDefined();
    expect(got.visibility!.state).not.toBe(VisibilityState.UNSPECIFIED);
  });

  it('nothing to change: no journal id, nothing waited for', async () => {
    await h.zoneClient(alice).apply(upsert([ep(`same.a.${ZONE}`, 'A', ['192.0.2.2'])]));
    const started = Date.now();
    const res = await h.zoneClient(alice).apply({ ...upsert([ep(`same.a.${ZONE}`, 'A', ['192.0.2.2'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(60_000) });
    expect(res.zones[0]).toMatchObject({ status: ApplyStatus.NO_CHANGES, journalId: '' });
    expect(res.zones[0]!.visibility).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("GetApply: a tenant's own applies; another tenant's id is not found; an admin sees anyone's", async () => {
    const bobs = (await h.zoneClient(bob).apply(upsert([ep(`x.b.${ZONE}`, 'TXT', ['bob'])]))).zones[0]!.journalId;
    await expectRejected(h.zoneClient(alice).getApply({ journalId: bobs }), Code.NotFound, new RegExp(`^no apply with journal id ${bobs} among tenant "alice"'s$`));
    await expectRejected(h.zoneClient(alice).getApply({ journalId: '999999' }), Code.NotFound, /^no apply with journal id 999999/);
    await expectRejected(h.zoneClient(alice).getApply({ journalId: 'x1' }), Code.InvalidArgument, /^journalId: must be a journal id \(digits\), got "x1"$/);
    expect((await h.zoneClient(admin).getApply({ journalId: bobs })).tenant).toBe('bob');
  });

  it('a bad wait is InvalidArgument naming the field, and nothing is sent', async () => {
    h.sim.clearCalls();
    await expectRejected(h.zoneClient(alice).apply({ ...upsert([ep(`bad.a.${ZONE}`, 'A', ['192.0.2.3'])]), waitTimeout: durationFromMs(1000) }), Code.InvalidArgument, /^waitTimeout: goes with wait WAIT_VISIBLE$/);
    await expectRejected(
      h.zoneClient(alice).apply({ ...upsert([ep(`bad.a.${ZONE}`, 'A', ['192.0.2.3'])]), wait: Wait.VISIBLE, waitTimeout: durationFromMs(2 * 3_600_000) }),
      Code.InvalidArgument,
      /^waitTimeout: must be more than 0 and at most 1 hour \(3600s\), got 7200s$/,
    );
    await expectRejected(h.zoneClient(alice).apply({ ...upsert([ep(`bad.a.${ZONE}`, 'A', ['192.0.2.3'])]), wait: 7 as Wait }), Code.InvalidArgument, /^wait: unknown value 7/);
    expect(callLines(h.sim)).toEqual([]);
  });

  it("ListZones: each zone's latest publishes (at most 5, newest first), as ListJournal has them", async () => {
    for (let i = 0; i < 6; i++) await h.zoneClient(alice).apply(upsert([ep(`n${i}.a.${ZONE}`, 'A', ['192.0.2.9'])]));
    const journal = (await h.adminClient(admin).listJournal({ zone: ZONE, limit: 100 })).entries;
    const published = journal.filter((e) => e.visibility?.publishedAt);
    expect(published.length).toBeGreaterThan(5);
    const zone = (await h.zoneClient(alice).listZones({})).zones.find((z) => z.name === ZONE)!;
    expect(zone.recentPublishes.map((v) => v.journalId)).toEqual(published.slice(0, 5).map((e) => e.id));
    expect(zone.recentPublishes.map((v) => v.publishedAt)).toEqual(published.slice(0, 5).map((e) => e.visibility!.publishedAt));
    // Entries that published nothing (a refusal, an admin action) carry no visibility.
    expect(journal.filter((e) => e.kind !== 'apply').every((e) => e.visibility === undefined)).toBe(true);
  });
});
