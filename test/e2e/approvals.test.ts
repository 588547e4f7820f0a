/**
 * The two-person rule (core/plan/approvals.ts): a stored plan the change threshold refuses is approved by an
 * admin other than the one who asked (AdminService.ApprovePlan, `dnsplane plan approve`); its tenant
 * then applies it and the threshold does not stop it; the approval, the approver and the digest are in
 * the journal (the approve-plan entry and the apply's entry); an approval is void once the plan goes
 * stale (what it touches changed), and a new plan carries none. Self-approval, non-admins and plans
 * with nothing to approve are refused, naming the rule. The zone moving beside the plan (another
 * tenant's applies; a target's health state, on a loopback address's HTTP server) leaves plan and
 * approval valid.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { planCommand } from '../../src/cli/plan.js';
import { ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { HealthTargets } from '../helpers/health-targets.js';
import { DEFAULT_HEALTH, HealthChecker } from '../../src/core/health/checker.js';
import { coreWithdrawals } from '../../src/core/health/mechanism.js';
import { getZone } from '../../src/store/index.js';

const ZONE = 'example.com';
const SUFFIX = `alice.${ZONE}`;
let h: Harness;
let root: string;
let ops: string;
let alice: string;

const mine = (n: number, target = '192.0.2.1'): Endpoint[] => Array.from({ length: n }, (_, i) => ep(`a${i}.${SUFFIX}`, 'A', [target]));
const sync = (endpoints: Endpoint[]) => ({ policy: Policy.SYNC, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } });
/** alice's 10 record sets, put back as they were (upsert-only: nothing else deleted). */
const seed = async () => {
  await h
    .zoneClient(alice)
    .apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: mine(10) } } } } });
};
/** The simulator's OVH ids of alice's sets a6..a9 (what a SYNC of a0..a5 deletes), in name order. */
const idsOf = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === `a${from + i}.alice` && r.fieldType === 'A')!.id);

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  root = await h.tenant('root', [], { admin: true });
  ops = await h.tenant('ops', [], { admin: true });
  alice = await h.tenant('alice', [ZONE], { suffixes: [SUFFIX] });
  await seed();
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('ApprovePlan', () => {
  it("alice's plan over the threshold is refused; approved by an admin, alice applies it with exactly its OVH calls; the journal names approver and digest", async () => {
    const planned = (await h.zoneClient(alice).plan(sync(mine(6)))).plan!;
    expect(planned.zones[0]!.threshold).toMatchObject({ owned: 10, deletes: 4, exceeded: true, forced: false, wouldRefuse: true });
    // Unapproved: the threshold stops it, nothing sent.
    await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } }),
      Code.FailedPrecondition,
      /^change threshold: .*delete 4 of the 10.*dnsplane plan approve PLAN_ID/,
    );
    expect(callLines(h.sim)).toEqual([]);

    const approved = await h.adminClient(ops).approvePlan({ id: planned.id });
    expect(approved.summary).toMatchObject({
      id: planned.id,
      tenant: 'alice',
      requestedBy: 'alice',
      status: 'pending',
      approvedBy: 'ops',
      approvedDigest: planned.digest,
    });
    expect(approved.summary!.approvedAt).toBeDefined();
    // Once: a second approval is refused.
    await expectRejected(
      h.adminClient(root).approvePlan({ id: planned.id }),
      Code.FailedPrecondition,
      new RegExp(`^plan "${planned.id}" is already approved \\(by "ops" at `),
    );
    expect(callLines(h.sim)).toEqual([]);

    const deleted = idsOf(6, 10);
    const res = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } });
    expect(res.zones[0]).toMatchObject({ zone: ZONE, status: ApplyStatus.APPLIED });
    expect(callLines(h.sim)).toEqual([...deleted.map((id) => `DELETE /domain/zone/${ZONE}/record/${id}`), `POST /domain/zone/${ZONE}/refresh`]);
    expect((await h.zoneClient(alice).records({})).zones[0]!.endpoints.map((e) => e.dnsName).sort()).toEqual(
      mine(6)
        .map((e) => e.dnsName)
        .sort(),
    );

    const journal = (await h.adminClient(root).listJournal({ zone: ZONE, limit: 5 })).entries;
    const apply = journal.find((e) => e.id === res.zones[0]!.journalId)!;
    expect(apply).toMatchObject({ kind: 'apply', tenant: 'alice', state: 'done', approval: { planId: planned.id, approvedBy: 'ops', digest: planned.digest } });
    const approval = journal.find((e) => e.kind === 'approve-plan')!;
    expect(approval).toMatchObject({ tenant: 'ops', zone: ZONE, approval: { planId: planned.id, approvedBy: 'ops', digest: planned.digest } });
    expect(approval.summary).toBe(
      `plan ${planned.id} of tenant "alice" (asked for by "alice") approved over the change threshold by ops, digest ${planned.digest}`,
    );
    // An applied plan has nothing left to approve.
    await expectRejected(h.adminClient(root).approvePlan({ id: planned.id }), Code.FailedPrecondition, /is applied; only a pending plan can be approved/);
    await seed();
  });

  it('self-approval is refused (PermissionDenied naming the rule), and the plan stays refused; a non-admin cannot approve', async () => {
    const planned = (await h.adminClient(root).planAs({ tenant: 'alice', request: sync(mine(6)) })).plan!;
    await expectRejected(
      h.adminClient(root).approvePlan({ id: planned.id }),
      Code.PermissionDenied,
      new RegExp(`^id: two-person rule: plan "${planned.id}" was asked for by "root" itself; an admin other than the one who asked must approve it$`),
    );
    await expectRejected(h.adminClient(alice).approvePlan({ id: planned.id }), Code.PermissionDenied, /admin scope/);
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } }), Code.FailedPrecondition, /^change threshold/);
    // Refused by the threshold, with nothing sent, the plan stays pending: another admin may still approve it.
    const summary = (await h.adminClient(root).getPlan({ id: planned.id })).summary!;
    expect(summary).toMatchObject({ status: 'pending', requestedBy: 'root', approvedBy: '', approvedDigest: '' });
    expect(summary.approvedAt).toBeUndefined();
    expect(callLines(h.sim)).toEqual([]);
  });

  it('a plan not over the threshold has nothing to approve; an unknown plan is NotFound', async () => {
    const small = (await h.zoneClient(alice).plan(sync(mine(9)))).plan!;
    await expectRejected(
      h.adminClient(ops).approvePlan({ id: small.id }),
      Code.FailedPrecondition,
      /is not refused by the change threshold in any of its zones and touches no protected name; its tenant applies it as it is/,
    );
    await expectRejected(h.adminClient(ops).approvePlan({ id: 'pl_nosuchplan' }), Code.NotFound, /pl_nosuchplan/);
    await expectRejected(h.adminClient(ops).approvePlan({ id: '' }), Code.InvalidArgument, /^id: a plan id is required/);
  });

  it('an approved plan whose zone moved is refused as stale, nothing sent; a new plan of the same request carries no approval', async () => {
    const planned = (await h.zoneClient(alice).plan(sync(mine(6)))).plan!;
    await h.adminClient(ops).approvePlan({ id: planned.id });
    // Another change in the zone: its generation moves.
    await h.zoneClient(alice).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`extra.${SUFFIX}`, 'A', ['192.0.2.9'])] } } },
      },
    });
    h.sim.clearCalls();
    await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } }),
      Code.FailedPrecondition,
      /^the record sets or ownership the plan touches in zone example\.com changed since it was made \(generation \d+ -> \d+\); nothing was sent, make a new plan$/,
    );
    expect(callLines(h.sim)).toEqual([]);
    expect((await h.adminClient(root).getPlan({ id: planned.id })).summary).toMatchObject({ status: 'stale', approvedBy: 'ops' });
    // Stale for good: the approval does not bring it back.
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } }), Code.FailedPrecondition, /is stale; make a new plan/);
    const again = (await h.zoneClient(alice).plan(sync([...mine(6), ep(`extra.${SUFFIX}`, 'A', ['192.0.2.9'])]))).plan!;
    expect((await h.adminClient(root).getPlan({ id: again.id })).summary!.approvedBy).toBe('');
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: again.id } }), Code.FailedPrecondition, /^change threshold/);
    expect(callLines(h.sim)).toEqual([]);
  });

  it('a plan whose zone moved before it was approved cannot be approved (stale)', async () => {
    const planned = (await h.zoneClient(alice).plan(sync(mine(6)))).plan!;
    await h.zoneClient(alice).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`extra2.${SUFFIX}`, 'A', ['192.0.2.9'])] } } },
      },
    });
    await expectRejected(
      h.adminClient(ops).approvePlan({ id: planned.id }),
      Code.FailedPrecondition,
      new RegExp(
        `^plan "${planned.id}" is stale: the record sets or ownership the plan touches in zone ${ZONE.replace('.', '\\.')} changed since it was made \\(generation \\d+ -> \\d+\\), so it could not be applied`,
      ),
    );
  });

  it('`dnsplane plan approve PLAN_ID` approves, and says how the tenant applies it', async () => {
    const planned = (await h.zoneClient(alice).plan(sync(mine(6)))).plan!;
    const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: ops });
    expect(await planCommand.run(['approve', planned.id], io)).toBe(0);
    expect(io.lines[0]).toMatch(new RegExp(`^Plan ${planned.id} of tenant alice \\(asked for by alice\\) approved by ops at \\d{4}-`));
    expect(io.lines[1]).toBe(`  digest ${planned.digest}; zones ${ZONE}; ${planned.zones[0]!.changes.length} changes`);
    expect(io.lines[2]).toBe(`  its tenant applies it: dnsplane apply ${planned.id}`);
    const self = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: root });
    const mineToo = (await h.adminClient(root).planAs({ tenant: 'alice', request: sync(mine(6)) })).plan!;
    await expect(planCommand.run(['approve', mineToo.id], self)).rejects.toThrow(/two-person rule/);
    await expect(planCommand.run(['approve'], self)).rejects.toThrow(/PLAN_ID: exactly one plan id is required/);
  });
});

describe('the zone moves beside the plan: other tenants, a target health check', () => {
  const CAROL = `carol.${ZONE}`;
  const HC = '127.0.0.4';
  const targets = new HealthTargets();
  let carol: string;
  let dave: string;
  const sets = (n: number): Endpoint[] => Array.from({ length: n }, (_, i) => ep(`c${i}.${CAROL}`, 'A', ['192.0.2.3']));
  const checked = () => ({ ...ep(`hc.${CAROL}`, 'A', [HC]), labels: { 'dnsplane/health-check': targets.check() } });
  const upsert = (endpoints: Endpoint[]) => ({
    source: { case: 'plan' as const, value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints } } } },
  });
  const round = () =>
    new HealthChecker(h.server.ctx, { settings: DEFAULT_HEALTH, withdrawals: coreWithdrawals(h.server.ctx), timer: false, holder: 'approvals' }).runRound();
  const generation = async () => (await getZone(h.server.ctx.pool, ZONE))!.generation;

  beforeAll(async () => {
    await targets.start(HC);
    carol = await h.tenant('carol', [ZONE], { suffixes: [CAROL] });
    dave = await h.tenant('dave', [ZONE], { suffixes: [`dave.${ZONE}`] });
    expect((await h.zoneClient(carol).apply(upsert([...sets(10), checked()]))).zones[0]!.status).toBe(ApplyStatus.APPLIED);
  });

  afterAll(async () => {
    await targets.stopAll();
  });

  it("another tenant's applies and a target's health state moving leave the plan and its approval valid: applied with exactly its calls", async () => {
    const planned = (
      await h.zoneClient(carol).plan({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints: [...sets(6), checked()] } } })
    ).plan!;
    expect(planned.zones[0]!.threshold).toMatchObject({ deletes: 4, wouldRefuse: true });
    const made = await generation();
    expect(made).toBe(planned.zones[0]!.baseGeneration);

    // Another tenant writes the zone: its generation moves, nothing the plan touches does.
    expect((await h.zoneClient(dave).apply(upsert([ep(`x.dave.${ZONE}`, 'A', ['192.0.2.44'])]))).zones[0]!.status).toBe(ApplyStatus.APPLIED);
    // The first round finds the target healthy: Records shows it, so the generation moves again.
    expect(await round()).toMatchObject({ checks: 1, withdrawn: [], restored: [] });
    expect(await generation()).toBe(made + 2n);
    h.sim.clearCalls();

    await h.adminClient(ops).approvePlan({ id: planned.id });
    // Down: failing, still published (withdrawn only after DNSPLANE_HEALTH_FAILURES rounds), and dave again.
    await targets.stop(HC);
    expect(await round()).toMatchObject({ checks: 1, withdrawn: [] });
    await h.zoneClient(dave).apply(upsert([ep(`y.dave.${ZONE}`, 'A', ['192.0.2.45'])]));
    expect(await generation()).toBe(made + 4n);
    h.sim.clearCalls();

    const deleted = Array.from({ length: 4 }, (_, i) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === `c${6 + i}.carol` && r.fieldType === 'A')!.id);
    const res = await h.zoneClient(carol).apply({ source: { case: 'planId', value: planned.id } });
    expect(res.zones[0]).toMatchObject({ zone: ZONE, status: ApplyStatus.APPLIED });
    expect(callLines(h.sim)).toEqual([...deleted.map((id) => `DELETE /domain/zone/${ZONE}/record/${id}`), `POST /domain/zone/${ZONE}/refresh`]);
    expect((await h.adminClient(root).getPlan({ id: planned.id })).summary).toMatchObject({ status: 'applied', approvedBy: 'ops' });
  });

  it('a change of a set the plan owns (a sync deletes what it no longer wants) makes it stale, at approval and at apply, nothing sent', async () => {
    const planned = (await h.zoneClient(carol).plan({ policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints: [checked()] } } }))
      .plan!;
    await targets.start(HC);
    await round(); // what Records shows moves: still valid
    await h.zoneClient(carol).apply(upsert([ep(`new.${CAROL}`, 'A', ['192.0.2.8'])])); // carol owns one more set: the sync would delete it too
    h.sim.clearCalls();
    await expectRejected(
      h.adminClient(ops).approvePlan({ id: planned.id }),
      Code.FailedPrecondition,
      new RegExp(`^plan "${planned.id}" is stale: the record sets or ownership the plan touches in zone example\\.com changed since it was made`),
    );
    await expectRejected(
      h.zoneClient(carol).apply({ source: { case: 'planId', value: planned.id } }),
      Code.FailedPrecondition,
      /^the record sets or ownership the plan touches in zone example\.com changed since it was made \(generation \d+ -> \d+\); nothing was sent, make a new plan$/,
    );
    expect(callLines(h.sim)).toEqual([]);
  });
});
