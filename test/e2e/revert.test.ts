/**
 * Undo of an apply (core/revert.ts, AdminService.PlanRevert, `dnsplane journal revert ID`): a stored
 * plan for the apply's tenant that puts back the record sets it changed — the exact records and
 * owners, with the minimal OVH calls — applied like any stored plan; a record set a later apply
 * touched is a conflict, named with the journal entry that changed it, and left alone.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { journalCommand } from '../../src/cli/journal.js';
import { ApplyStatus, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.com';
const SUFFIX = `alice.${ZONE}`;
let h: Harness;
let root: string;
let alice: string;

const a = (i: number, target: string) => ep(`a${i}.${SUFFIX}`, 'A', [target]);
const upsert = (endpoints: Endpoint[]) => ({ policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } });
const sync = (endpoints: Endpoint[]) => ({ policy: Policy.SYNC, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } });
const applyInline = async (req: ReturnType<typeof sync>) => (await h.zoneClient(alice).apply({ source: { case: 'plan', value: req } })).zones[0]!;
const idOf = (sub: string) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === sub && r.fieldType === 'A')!.id;
const records = async () =>
  (await h.zoneClient(alice).records({})).zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.recordType} ${e.targets.join(',')} ${e.ttl}`).sort();
const owners = async () =>
  (await h.adminClient(root).listOwnership({ zone: ZONE })).entries.filter((o) => o.dnsName.endsWith(SUFFIX)).map((o) => `${o.dnsName} ${o.recordType} ${o.tenant}`).sort();

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  root = await h.tenant('root', [], { admin: true });
  alice = await h.tenant('alice', [ZONE], { suffixes: [SUFFIX] });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('PlanRevert', () => {
  it('reverting an apply (an update, a delete, a create) restores the exact records and owners, with exactly the OVH calls that undo it', async () => {
    await applyInline(upsert([a(0, '192.0.2.1'), { ...a(1, '192.0.2.1'), ttl: 600 }, a(2, '192.0.2.1')]));
    const before = await records();
    const ownedBefore = await owners();
    const bad = await applyInline(sync([a(0, '192.0.2.2'), a(2, '192.0.2.1'), a(3, '192.0.2.3')]));
    expect(bad.status).toBe(ApplyStatus.APPLIED);
    expect(await records()).not.toEqual(before);
    h.sim.clearCalls();

    const res = await h.adminClient(root).planRevert({ journalId: bad.journalId });
    expect(res.reverts).toBe(bad.journalId);
    expect(res.conflicts).toEqual([]);
    expect(res.plan).toMatchObject({ tenant: 'alice' });
    expect(callLines(h.sim)).toEqual([]); // planned, never applied by the call
    const summary = (await h.adminClient(root).getPlan({ id: res.plan!.id })).summary!;
    expect(summary).toMatchObject({ tenant: 'alice', requestedBy: 'root', status: 'pending', changeCount: 3 });

    const a0 = idOf('a0.alice');
    const a3 = idOf('a3.alice');
    const applied = await h.zoneClient(alice).apply({ source: { case: 'planId', value: res.plan!.id } });
    expect(applied.zones[0]!.status).toBe(ApplyStatus.APPLIED);
    expect(callLines(h.sim)).toEqual([`DELETE /domain/zone/${ZONE}/record/${a3}`, `PUT /domain/zone/${ZONE}/record/${a0}`, `POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(await records()).toEqual(before);
    expect(await owners()).toEqual(ownedBefore);

    const journal = (await h.adminClient(root).listJournal({ zone: ZONE, limit: 5 })).entries;
    expect(journal.find((e) => e.id === applied.zones[0]!.journalId)).toMatchObject({ kind: 'apply', tenant: 'alice', reverts: bad.journalId });
    const planned = journal.find((e) => e.kind === 'plan-revert')!;
    expect(planned).toMatchObject({ tenant: 'root', zone: ZONE, reverts: bad.journalId });
    expect(planned.summary).toBe(`plan ${res.plan!.id} reverts apply ${bad.journalId} of tenant "alice" (asked for by root): 3 record set(s) put back, 0 conflict(s)`);
  });

  it('a record set a later apply touched is a conflict naming that apply, left as it is; the rest is put back', async () => {
    const first = await applyInline(upsert([a(0, '192.0.2.5'), a(2, '192.0.2.5')]));
    const later = await applyInline(upsert([a(2, '192.0.2.6')]));
    h.sim.clearCalls();
    const res = await h.adminClient(root).planRevert({ journalId: first.journalId });
    expect(res.conflicts).toHaveLength(1);
    expect(res.conflicts[0]).toMatchObject({ dnsName: `a2.${SUFFIX}`, recordType: 'A', journalId: later.journalId, tenant: 'alice' });
    expect(res.plan!.zones[0]!.changes).toHaveLength(1);
    const a0 = idOf('a0.alice');
    const applied = await h.zoneClient(alice).apply({ source: { case: 'planId', value: res.plan!.id } });
    expect(applied.zones[0]!.status).toBe(ApplyStatus.APPLIED);
    expect(callLines(h.sim)).toEqual([`PUT /domain/zone/${ZONE}/record/${a0}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(await records()).toContain(`a0.${SUFFIX} A 192.0.2.1 300`);
    expect(await records()).toContain(`a2.${SUFFIX} A 192.0.2.6 300`);

    // The command line says the same.
    const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: root });
    expect(await journalCommand.run(['revert', first.journalId], io)).toBe(0); // a0 is back already: nothing to put back
    expect(io.lines[0]).toMatch(new RegExp(`^Revert of journal entry ${first.journalId}: plan pl_\\w+ for tenant alice$`));
    expect(io.lines.at(-1)).toMatch(new RegExp(`^  ! a2\\.${SUFFIX.replace(/\./g, '\\.')} A: left as it is, changed since by journal entry ${later.journalId} \\(tenant alice, `));
  });

  it('a revert plan is stale once its zone moves; admin actions, unknown entries and non-admins are refused', async () => {
    const change = await applyInline(upsert([a(5, '192.0.2.7')]));
    const res = await h.adminClient(root).planRevert({ journalId: change.journalId });
    await applyInline(upsert([a(6, '192.0.2.7')]));
    h.sim.clearCalls();
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: res.plan!.id } }), Code.FailedPrecondition, /changed since the plan was made/);
    expect(callLines(h.sim)).toEqual([]);
    const audit = (await h.adminClient(root).listJournal({ zone: ZONE, limit: 10 })).entries.find((e) => e.kind === 'plan-revert')!;
    await expectRejected(h.adminClient(root).planRevert({ journalId: audit.id }), Code.InvalidArgument, /is an admin action \(plan-revert\), not an apply/);
    await expectRejected(h.adminClient(root).planRevert({ journalId: '999999' }), Code.NotFound, /999999/);
    await expectRejected(h.adminClient(root).planRevert({ journalId: 'x' }), Code.InvalidArgument, /^journalId: must be a journal entry id/);
    await expectRejected(h.adminClient(alice).planRevert({ journalId: change.journalId }), Code.PermissionDenied, /admin scope/);
  });
});
