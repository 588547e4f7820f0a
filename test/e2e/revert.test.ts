/**
 * Undo of an apply (core/apply/revert.ts, AdminService.PlanRevert, `dnsplane journal revert ID`): a stored
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
let bob: string;

const a = (i: number, target: string) => ep(`a${i}.${SUFFIX}`, 'A', [target]);
const upsert = (endpoints: Endpoint[]) => ({ policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } });
const sync = (endpoints: Endpoint[]) => ({ policy: Policy.SYNC, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } });
const applyInline = async (req: ReturnType<typeof sync>) => (await h.zoneClient(alice).apply({ source: { case: 'plan', value: req } })).zones[0]!;
const idOf = (sub: string) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === sub && r.fieldType === 'A')!.id;
const records = async () =>
  (await h.zoneClient(alice).records({})).zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.recordType} ${e.targets.join(',')} ${e.ttl}`).sort();
const owners = async () =>
  (await h.adminClient(root).listOwnership({ zone: ZONE })).entries
    .filter((o) => o.dnsName.endsWith(SUFFIX))
    .map((o) => `${o.dnsName} ${o.recordType} ${o.tenant}`)
    .sort();

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  root = await h.tenant('root', [], { admin: true });
  alice = await h.tenant('alice', [ZONE], { suffixes: [SUFFIX] });
  bob = await h.tenant('bob', [ZONE], { suffixes: [SUFFIX] });
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
    expect(callLines(h.sim)).toEqual([
      `DELETE /domain/zone/${ZONE}/record/${a3}`,
      `PUT /domain/zone/${ZONE}/record/${a0}`,
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    expect(await records()).toEqual(before);
    expect(await owners()).toEqual(ownedBefore);

    const journal = (await h.adminClient(root).listJournal({ zone: ZONE, limit: 5 })).entries;
    expect(journal.find((e) => e.id === applied.zones[0]!.journalId)).toMatchObject({ kind: 'apply', tenant: 'alice', reverts: bad.journalId });
    const planned = journal.find((e) => e.kind === 'plan-revert')!;
    expect(planned).toMatchObject({ tenant: 'root', zone: ZONE, reverts: bad.journalId });
    expect(planned.summary).toBe(
      `plan ${res.plan!.id} reverts apply ${bad.journalId} of tenant "alice" (asked for by root): 3 record set(s) put back, 0 conflict(s)`,
    );
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
    expect(io.lines.at(-1)).toMatch(
      new RegExp(`^  ! a2\\.${SUFFIX.replace(/\./g, '\\.')} A: left as it is, changed since by journal entry ${later.journalId} \\(tenant alice, `),
    );
  });

  it('a revert plan is stale once what it puts back moves; admin actions, unknown entries and non-admins are refused', async () => {
    const change = await applyInline(upsert([a(5, '192.0.2.7')]));
    const res = await h.adminClient(root).planRevert({ journalId: change.journalId });
    await applyInline(upsert([a(5, '192.0.2.8')]));
    h.sim.clearCalls();
    await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'planId', value: res.plan!.id } }),
      Code.FailedPrecondition,
      /the record sets or ownership the plan touches in zone example\.com changed since it was made/,
    );
    expect(callLines(h.sim)).toEqual([]);
    const audit = (await h.adminClient(root).listJournal({ zone: ZONE, limit: 10 })).entries.find((e) => e.kind === 'plan-revert')!;
    await expectRejected(h.adminClient(root).planRevert({ journalId: audit.id }), Code.InvalidArgument, /is an admin action \(plan-revert\), not an apply/);
    await expectRejected(h.adminClient(root).planRevert({ journalId: '999999' }), Code.NotFound, /999999/);
    await expectRejected(h.adminClient(root).planRevert({ journalId: 'x' }), Code.InvalidArgument, /^journalId: must be a journal entry id/);
    await expectRejected(h.adminClient(alice).planRevert({ journalId: change.journalId }), Code.PermissionDenied, /admin scope/);
  });

  it("a shared set: only the reverted tenant's targets are put back; the other tenant's are never named or touched", async () => {
    const name = `s.${SUFFIX}`;
    const shared = (e: Endpoint) => ({ ...e, labels: { 'dnsplane/shared': 'true' } });
    await applyInline(upsert([shared(ep(name, 'A', ['192.0.2.10'], 300))]));
    const join = async (targets: string[]) =>
      (await h.zoneClient(bob).apply({ source: { case: 'plan', value: upsert([ep(name, 'A', targets, 600)]) } })).zones[0]!;
    expect((await join(['198.51.100.10'])).status).toBe(ApplyStatus.APPLIED);
    const setNow = () =>
      h.sim
        .draftRecords(ZONE)
        .filter((r) => r.subDomain === 's.alice')
        .map((r) => `${r.id} ${r.target} ${r.ttl}`)
        .sort();
    const before = setNow();
    const alicesRecord = before.find((r) => r.includes(' 192.0.2.10 '))!;
    const bad = await join(['198.51.100.11', '198.51.100.12']);
    expect(bad.status).toBe(ApplyStatus.APPLIED);
    const idOfTarget = (t: string) =>
      setNow()
        .find((r) => r.includes(` ${t} `))!
        .split(' ')[0]!;
    const [id11, id12] = [idOfTarget('198.51.100.11'), idOfTarget('198.51.100.12')];
    h.sim.clearCalls();

    const res = await h.adminClient(root).planRevert({ journalId: bad.journalId });
    expect(res.plan).toMatchObject({ tenant: 'bob' });
    expect(res.conflicts).toEqual([]);
    expect(res.plan!.zones[0]!.conflicts).toEqual([]);
    expect(res.plan!.zones[0]!.changes.map((c) => [c.before?.targets, c.after?.targets])).toEqual([[['198.51.100.11', '198.51.100.12'], ['198.51.100.10']]]);
    const applied = await h.zoneClient(bob).apply({ source: { case: 'planId', value: res.plan!.id } });
    expect(applied.zones[0]!.status).toBe(ApplyStatus.APPLIED);
    // Only bob's records are written; alice's (id, target, TTL) is as it was.
    const aliceId = alicesRecord.split(' ')[0]!;
    expect(callLines(h.sim)).toEqual([
      `DELETE /domain/zone/${ZONE}/record/${id12}`,
      `PUT /domain/zone/${ZONE}/record/${id11}`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    expect(id11 === aliceId || id12 === aliceId).toBe(false);
    expect(setNow().map((r) => r.split(' ').slice(1).join(' '))).toEqual(['192.0.2.10 300', '198.51.100.10 600']);
    expect(setNow()).toContain(alicesRecord);
    const { rows } = await h.server.ctx.pool.query<{ target: string; name: string }>(
      `SELECT o.target, t.name FROM ownership o JOIN tenants t ON t.id = o.tenant_id WHERE dns_name = $1 ORDER BY o.target`,
      [name],
    );
    expect(rows).toEqual([
      { target: '192.0.2.10', name: 'alice' },
      { target: '198.51.100.10', name: 'bob' },
    ]);
  });

  it('stores the revert plan and its journal row in one transaction: a journal write refused stores no plan', async () => {
    const change = await applyInline(upsert([a(7, '192.0.2.8')]));
    const pool = h.server.ctx.pool;
    const plans = async () => Number((await pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM plans`)).rows[0]!.n);
    const count = await plans();
    await pool.query(
      `CREATE FUNCTION test_refuse_revert_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'journal refused for the test'; END $$`,
    );
    await pool.query(
      `CREATE TRIGGER test_refuse_revert_row BEFORE INSERT ON journal FOR EACH ROW WHEN (NEW.intent->>'kind' = 'plan-revert') EXECUTE FUNCTION test_refuse_revert_row()`,
    );
    try {
      await expectRejected(h.adminClient(root).planRevert({ journalId: change.journalId }), Code.Internal, /./);
      expect(await plans()).toBe(count);
    } finally {
      await pool.query(`DROP TRIGGER test_refuse_revert_row ON journal; DROP FUNCTION test_refuse_revert_row()`);
    }
    await h.adminClient(root).planRevert({ journalId: change.journalId });
    expect(await plans()).toBe(count + 1);
  });
});
