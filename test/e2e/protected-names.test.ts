/**
 * Protected names (issue 31.4; core/plan/protected-names.ts): an admin marks names of a zone protected
 * (exactly, or with everything below them); a plan changing a record set there is refused as the change
 * threshold refuses — under the threshold, and with force too — until an admin other than the one who
 * asked approves it; then its tenant applies it with exactly its OVH calls, and the journal names the
 * protected names. Names elsewhere apply as before. `dnsplane zone protect|unprotect|protected`.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { zoneCommand } from '../../src/cli/zone.js';
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

const upsert = (endpoints: Endpoint[]) => ({ policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } });

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  root = await h.tenant('root', [], { admin: true });
  ops = await h.tenant('ops', [], { admin: true });
  alice = await h.tenant('alice', [ZONE], { suffixes: [SUFFIX] });
  await h.zoneClient(alice).apply({ source: { case: 'plan', value: upsert([ep(`www.${SUFFIX}`, 'A', ['192.0.2.1'])]) } });
  const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: root });
  expect(await zoneCommand.run(['protect', ZONE, `api.${SUFFIX}`], io)).toBe(0);
  expect(await zoneCommand.run(['protect', ZONE, `prod.${SUFFIX}`, '--suffix'], io)).toBe(0);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('protected names', () => {
  it('are listed by the command line and AdminService, with who protected them; protecting is journaled', async () => {
    const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: root });
    expect(await zoneCommand.run(['protected', ZONE], io)).toBe(0);
    expect(io.lines[0]).toMatch(/^ZONE +NAME +BELOW TOO +SINCE +BY$/);
    expect(io.lines.slice(1).map((l) => l.split(/ +/).filter((_, i) => i !== 3))).toEqual([
      [ZONE, `api.${SUFFIX}`, 'no', 'root'],
      [ZONE, `prod.${SUFFIX}`, 'yes', 'root'],
    ]);
    const listed = (await h.adminClient(ops).listProtectedNames({ zone: '' })).names;
    expect(listed.map((p) => [p.name, p.suffix, p.createdBy])).toEqual([
      [`api.${SUFFIX}`, false, 'root'],
      [`prod.${SUFFIX}`, true, 'root'],
    ]);
    const journal = (await h.adminClient(root).listJournal({ zone: ZONE, limit: 20 })).entries.filter((e) => e.kind === 'protect-names');
    expect(journal.map((e) => e.summary).sort()).toEqual([
      `names and everything below them prod.${SUFFIX} of zone ${ZONE} protected by root: a change there needs a second admin's approval`,
      `names api.${SUFFIX} of zone ${ZONE} protected by root: a change there needs a second admin's approval`,
    ]);
  });

  it('a one-record plan at a protected name is refused (with force too, and as a direct apply) until a second admin approves it; then it applies with exactly its OVH calls', async () => {
    const change = [ep(`api.${SUFFIX}`, 'A', ['192.0.2.7'])];
    const planned = (await h.zoneClient(alice).plan(upsert(change))).plan!;
    expect(planned.zones[0]!.threshold).toMatchObject({ exceeded: false, wouldRefuse: true, protectedNames: [`api.${SUFFIX}`] });
    const refusal = new RegExp(
      `^protected names: this apply changes api\\.${SUFFIX.replace('.', '\\.')}, protected in zone ${ZONE}.*dnsplane plan approve PLAN_ID.*force does not lift this$`,
    );
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } }), Code.FailedPrecondition, refusal);
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id }, force: true }), Code.FailedPrecondition, refusal);
    await expectRejected(h.zoneClient(alice).apply({ source: { case: 'plan', value: { ...upsert(change), force: true } } }), Code.FailedPrecondition, refusal);
    expect(callLines(h.sim)).toEqual([]);
    // Still pending: refused with nothing sent. alice's admin-less self cannot approve, root can.
    await expectRejected(h.adminClient(alice).approvePlan({ id: planned.id }), Code.PermissionDenied, /admin scope/);
    await h.adminClient(root).approvePlan({ id: planned.id });
    const res = await h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } });
    expect(res.zones[0]).toMatchObject({ status: ApplyStatus.APPLIED });
    expect(callLines(h.sim)).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    const journal = (await h.adminClient(ops).listJournal({ zone: ZONE, limit: 5 })).entries;
    expect(journal.find((e) => e.kind === 'approve-plan')!.summary).toBe(
      `plan ${planned.id} of tenant "alice" (asked for by "alice") approved touching protected names api.${SUFFIX} by root, digest ${planned.digest}`,
    );
    expect(journal.find((e) => e.id === res.zones[0]!.journalId)).toMatchObject({ kind: 'apply', approval: { planId: planned.id, approvedBy: 'root' } });
  });

  it('a suffix protects the names below it; self-approval is refused; names elsewhere apply as before', async () => {
    const below = [ep(`db.eu.prod.${SUFFIX}`, 'A', ['192.0.2.8'])];
    const planned = (await h.adminClient(root).planAs({ tenant: 'alice', request: upsert(below) })).plan!;
    expect(planned.zones[0]!.threshold?.protectedNames).toEqual([`db.eu.prod.${SUFFIX}`]);
    await expectRejected(h.adminClient(root).approvePlan({ id: planned.id }), Code.PermissionDenied, /two-person rule/);
    await expectRejected(
      h.zoneClient(alice).apply({ source: { case: 'planId', value: planned.id } }),
      Code.FailedPrecondition,
      /^protected names: this apply changes db\.eu\.prod\./,
    );
    expect(callLines(h.sim)).toEqual([]);
    // "prodx" is not below "prod"; "www" is not protected.
    const free = await h
      .zoneClient(alice)
      .apply({ source: { case: 'plan', value: upsert([ep(`prodx.${SUFFIX}`, 'A', ['192.0.2.9']), ep(`www.${SUFFIX}`, 'A', ['192.0.2.2'])]) } });
    expect(free.zones[0]).toMatchObject({ status: ApplyStatus.APPLIED });
    const plain = (await h.zoneClient(alice).plan(upsert([ep(`www.${SUFFIX}`, 'A', ['192.0.2.3'])]))).plan!;
    expect(plain.zones[0]!.threshold).toMatchObject({ wouldRefuse: false, protectedNames: [] });
    await expectRejected(h.adminClient(ops).approvePlan({ id: plain.id }), Code.FailedPrecondition, /touches no protected name/);
  });

  it('unprotect lifts it; bad names are refused naming the field, and nothing is written', async () => {
    await expectRejected(
      h.adminClient(root).protectNames({ zone: ZONE, names: [`ok.${SUFFIX}`, 'www.other.org'] }),
      Code.InvalidArgument,
      /^names\[1\]: "www\.other\.org" is not in zone example\.com$/,
    );
    await expectRejected(h.adminClient(root).protectNames({ zone: 'nope.test', names: ['a.nope.test'] }), Code.NotFound, /nope\.test/);
    await expectRejected(
      h.adminClient(root).unprotectNames({ zone: ZONE, names: [`api.${SUFFIX}`, `ok.${SUFFIX}`] }),
      Code.InvalidArgument,
      new RegExp(`^names: not protected in zone ${ZONE}: ok\\.${SUFFIX}`),
    );
    await expectRejected(h.adminClient(alice).protectNames({ zone: ZONE, names: ['@'] }), Code.PermissionDenied, /admin/);
    expect((await h.adminClient(root).listProtectedNames({ zone: ZONE })).names.map((p) => p.name)).toEqual([`api.${SUFFIX}`, `prod.${SUFFIX}`]);
    const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: ops });
    expect(await zoneCommand.run(['unprotect', ZONE, `api.${SUFFIX}`], io)).toBe(0);
    const res = await h.zoneClient(alice).apply({ source: { case: 'plan', value: upsert([ep(`api.${SUFFIX}`, 'A', ['192.0.2.10'])]) } });
    expect(res.zones[0]).toMatchObject({ status: ApplyStatus.APPLIED });
    expect(callLines(h.sim)).toEqual([
      `PUT /domain/zone/${ZONE}/record/${h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'api.alice')!.id}`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
  });
});
