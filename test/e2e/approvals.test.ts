/**
 * The two-person rule (core/plan/approvals.ts): a stored plan the change threshold refuses is approved by an
 * admin other than the one who asked (AdminService.ApprovePlan, `dnsplane plan approve`); its tenant
 * then applies it and the threshold does not stop it; the approval, the approver and the digest are in
 * the journal (the approve-plan entry and the apply's entry); an approval is void once the plan goes
 * stale, and a new plan carries none. Self-approval, non-admins and plans with nothing to approve are
 * refused, naming the rule.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { planCommand } from '../../src/cli/plan.js';
import { ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

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
      /^zone example\.com changed since the plan was made \(generation \d+ -> \d+\); nothing was sent, make a new plan$/,
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
      new RegExp(`^plan "${planned.id}" is stale: zone ${ZONE.replace('.', '\\.')} changed since it was made \\(generation \\d+ -> \\d+\\)`),
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
