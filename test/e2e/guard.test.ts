/**
 * The change threshold (guard rail against mass changes): over DNSPLANE_MAX_CHANGE_PERCENT of the
 * record sets a tenant owns in a zone (when it owns >= 10 there), an apply is refused with
 * FailedPrecondition naming the counts and nothing is sent to OVH, unless the request says force; an
 * admin can give a tenant its own limit; plans show the counts; the webhook answers 503.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';
import { ExternalDns } from '../helpers/external-dns.js';

const ZONE = 'example.com';
let h: Harness;
let admin: string;

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}.${ZONE}`);
const sets = (prefix: string, n: number, target = '192.0.2.1'): Endpoint[] => names(prefix, n).map((name) => ep(name, 'A', [target]));

async function seed(token: string, endpoints: Endpoint[]): Promise<void> {
  await h
    .zoneClient(token)
    .apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints } } } } });
}

const sync = (endpoints: Endpoint[], force = false) => ({
  policy: Policy.SYNC,
  force,
  input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } },
});

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  admin = await h.tenant('root', [], { admin: true });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('through the API', () => {
  let alice: string;
  beforeAll(async () => {
    alice = await h.tenant('alice', [ZONE], { suffixes: [`alice.${ZONE}`] });
    await seed(
      alice,
      sets('a', 10).map((e) => ({ ...e, dnsName: e.dnsName.replace(`.${ZONE}`, `.alice.${ZONE}`) }) as Endpoint),
    );
  });
  const mine = (n: number, target = '192.0.2.1') => names('a', n).map((x) => ep(x.replace(`.${ZONE}`, `.alice.${ZONE}`), 'A', [target]));

  it('a SYNC that would delete 4 of 10 (40% > 30%): the plan says so; Apply is FailedPrecondition naming the counts; nothing sent', async () => {
    const planned = await h.zoneClient(alice).plan(sync(mine(6)));
    expect(planned.plan!.zones[0]!.threshold).toMatchObject({
      owned: 10,
      updates: 0,
      deletes: 4,
      maxPercent: 30,
      exceeded: true,
      forced: false,
      wouldRefuse: true,
    });
    h.sim.clearCalls();
    const inline = await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'plan', value: sync(mine(6)) } }),
      Code.FailedPrecondition,
      /^change threshold: this apply would delete 4 of the 10 record sets tenant "alice" owns in zone example\.com \(40%, over the limit of 30%\); nothing was sent\. .*force/,
    );
    const stored = await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id } }),
      Code.FailedPrecondition,
      /delete 4 of the 10/,
    );
    // Both answers say what kind of refusal it is in the response metadata (docs/errors.md).
    expect(inline.metadata.get('dnsplane-refusal')).toBe('change-threshold');
    expect(stored.metadata.get('dnsplane-refusal')).toBe('change-threshold');
    expect(inline.metadata.get('dnsplane-refusal-zone')).toBe(ZONE);
    expect(callLines(h.sim)).toEqual([]);
    expect((await h.zoneClient(alice).records({})).zones[0]!.endpoints).toHaveLength(10);
  });

  it('3 of 10 (30%, not over) goes through; forced, 4 of 10 goes through', async () => {
    const ok = await h.zoneClient(alice).plan(sync(mine(10, '192.0.2.2').map((e, i) => (i < 3 ? e : ep(e.dnsName, 'A', ['192.0.2.1'])))));
    expect(ok.plan!.zones[0]!.threshold).toMatchObject({ owned: 10, updates: 3, deletes: 0, exceeded: false, wouldRefuse: false });
    const planned = await h.zoneClient(alice).plan(sync(mine(6)));
    const applied = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id }, force: true });
    expect(applied.zones[0]!.status).toBe(ApplyStatus.APPLIED);
    expect(callLines(h.sim).filter((c) => c.startsWith('DELETE'))).toHaveLength(4);
    await seed(alice, mine(10));
  });

  it('a stored plan made with force applies without it; the plan shows forced', async () => {
    const planned = await h.zoneClient(alice).plan(sync(mine(6), true));
    expect(planned.plan!.zones[0]!.threshold).toMatchObject({ exceeded: true, forced: true, wouldRefuse: false });
    const applied = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.plan!.id } });
    expect(applied.zones[0]!.status).toBe(ApplyStatus.APPLIED);
    await seed(alice, mine(10));
  });

  it("an admin's per-tenant limit wins over the server's, and can be put back", async () => {
    const adminClient = h.client(AdminService, admin);
    const set = await adminClient.setTenantMaxChangePercent({ name: 'alice', maxChangePercent: 50 });
    expect(set.tenant!.maxChangePercent).toBe(50);
    const planned = await h.zoneClient(alice).plan(sync(mine(6)));
    expect(planned.plan!.zones[0]!.threshold).toMatchObject({ deletes: 4, maxPercent: 50, exceeded: false });
    const strict = await adminClient.setTenantMaxChangePercent({ name: 'alice', maxChangePercent: 0 });
    expect(strict.tenant!.maxChangePercent).toBe(0);
    await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'plan', value: sync(mine(10, '192.0.2.3').slice(0, 1).concat(mine(10).slice(1))) } }),
      Code.FailedPrecondition,
      /update 1 of the 10 .*limit of 0%/,
    );
    const back = await adminClient.setTenantMaxChangePercent({ name: 'alice' });
    expect(back.tenant!.maxChangePercent).toBeUndefined();
    await expectRejected(
      adminClient.setTenantMaxChangePercent({ name: 'alice', maxChangePercent: 101 }),
      Code.InvalidArgument,
      /^maxChangePercent: must be 0-100/,
    );
    await expectRejected(h.client(AdminService, alice).setTenantMaxChangePercent({ name: 'alice', maxChangePercent: 100 }), Code.PermissionDenied, /admin/);
    expect(callLines(h.sim)).toEqual([]);
  });

  it('under 10 owned sets, any change goes', async () => {
    const bob = await h.tenant('bob', [ZONE], { suffixes: [`bob.${ZONE}`] });
    const bobs = names('b', 9).map((x) => ep(x.replace(`.${ZONE}`, `.bob.${ZONE}`), 'A', ['192.0.2.1']));
    await seed(bob, bobs);
    const res = await h.zoneClient(bob).apply({ source: { case: 'plan', value: sync(bobs.slice(0, 1)) } });
    expect(res.zones[0]!.status).toBe(ApplyStatus.APPLIED);
    expect(callLines(h.sim).filter((c) => c.startsWith('DELETE'))).toHaveLength(8);
  });
});

describe('through the webhook', () => {
  let wh: TestWebhook;
  let carol: string;
  beforeAll(async () => {
    carol = await h.tenant('carol', [ZONE], { suffixes: [`carol.${ZONE}`] });
    await seed(
      carol,
      names('c', 10).map((x) => ep(x.replace(`.${ZONE}`, `.carol.${ZONE}`), 'A', ['192.0.2.1'])),
    );
    wh = await centralWebhook(h);
  });
  afterAll(async () => {
    await wh?.close();
  });

  it('a change set over the threshold is 503 (external-dns retries), counted, and logged with how to proceed; nothing sent', async () => {
    const edns = new ExternalDns(wh.url('carol', carol));
    const del = names('c', 5).map((x) => ({ dnsName: x.replace(`.${ZONE}`, `.carol.${ZONE}`), targets: ['192.0.2.1'], recordType: 'A', recordTTL: 300 }));
    const err = await edns.applyChanges({ delete: del }).then(
      () => undefined,
      (e: unknown) => e as { status?: number; retryable?: boolean },
    );
    expect(err?.status).toBe(503);
    expect(callLines(h.sim)).toEqual([]);
    expect(await wh.metric('dnsplane_webhook_threshold_refusals_total', { tenant: 'carol', zone: ZONE })).toBe(1);
    const line = wh.lines.find((l) => l.msg.startsWith('change threshold'));
    expect(line).toMatchObject({ tenant: 'carol', zone: ZONE, level: 40 });
    expect(line!.msg).toMatch(/delete 5 of the 10 record sets tenant "carol" owns in zone example\.com \(50%, over the limit of 30%\).*force.*set-max-change/);
    expect(String(line!['proceed'])).toMatch(/--force.*set-max-change/);
    const m = await h.server.metrics.registry.getSingleMetric('dnsplane_threshold_refusals_total')?.get();
    expect(m?.values.find((v) => v.labels['tenant'] === 'carol')?.value).toBeGreaterThanOrEqual(1);
  });
});
