/**
 * Ownership end to end: a tenant never changes what another owns, by any path (Apply of a desired
 * state, inline change sets, a stored plan made before an ownership change), and its other changes
 * still apply; shared record sets (each tenant owns its targets, OVH holds the union). Real Postgres,
 * the OVH simulator over HTTPS; every test asserts the exact OVH calls.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, ChangeAction, EndpointSchema, Policy, type Endpoint, type PlanRequest } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { snapshot } from '../helpers/snapshot.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'example.com';
const SHARED = { 'dnsplane/shared': 'true' };
let h: Harness;
let alice: string;
let bob: string;
let admin: string;

const calls = (): string[] => callLines(h.sim);

function ep(name: string, recordType: string, targets: string[], ttl = 300, labels: Record<string, string> = {}): Endpoint {
  return create(EndpointSchema, { dnsName: name === '' ? ZONE : `${name}.${ZONE}`, recordType, targets, ttl, labels });
}

/** The simulator's draft records of one name and type, as "id target ttl". */
function inOvh(sub: string, type = 'A'): Array<{ id: string; target: string; ttl: number }> {
  return h.sim
    .draftRecords(ZONE)
    .filter((r) => r.subDomain === sub && r.fieldType === type)
    .map((r) => ({ id: r.id, target: r.target, ttl: r.ttl }))
    .sort((a, b) => (a.target < b.target ? -1 : 1));
}

const desired = (endpoints: Endpoint[], policy = Policy.UPSERT_ONLY, zones: string[] = []): PlanRequest =>
  ({ policy, input: { case: 'desired', value: { zones, endpoints } } }) as PlanRequest;
const changes = (c: { create?: Endpoint[]; updateOld?: Endpoint[]; updateNew?: Endpoint[]; delete?: Endpoint[] }): PlanRequest =>
  ({ policy: Policy.SYNC, input: { case: 'changes', value: { create: [], updateOld: [], updateNew: [], delete: [], ...c } } }) as PlanRequest;

async function apply(token: string, req: PlanRequest) {
  const res = await h.zoneClient(token).apply({ source: { case: 'plan', value: req } });
  return res.zones[0]!;
}

const summary = (z: {
  changes: Array<{ action: ChangeAction; before?: Endpoint; after?: Endpoint }>;
  conflicts: Array<{ action: ChangeAction; endpoint?: Endpoint; owner: string }>;
}) => ({
  changes: z.changes.map((c) => `${ChangeAction[c.action]} ${(c.after ?? c.before)!.dnsName} ${(c.after ?? c.before)!.targets.join(',')}`),
  conflicts: z.conflicts.map((c) => `${ChangeAction[c.action]} ${c.endpoint!.dnsName} ${c.endpoint!.targets.join(',')} owner=${c.owner}`),
});

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [{ subDomain: 'manual', fieldType: 'A', target: '192.0.2.200', ttl: 600 }],
    },
  });
  alice = await h.tenant('alice', [ZONE]);
  bob = await h.tenant('bob', [ZONE]);
  admin = await h.tenant('admin', [], { admin: true });
  // alice owns a1, a2, a3 (and the zone gets synced).
  await apply(alice, desired([ep('a1', 'A', ['192.0.2.1']), ep('a2', 'A', ['192.0.2.2']), ep('a3', 'TXT', ['alice was here'])]));
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('tenant B never changes what tenant A owns; its other changes still apply', () => {
  it("through Apply of a desired state: an overwrite is a conflict, B's new record is created", async () => {
    const before = inOvh('a1');
    const z = await apply(bob, desired([ep('a1', 'A', ['198.51.100.1']), ep('b1', 'A', ['198.51.100.2'])]));
    expect(ApplyStatus[z.status]).toBe('APPLIED');
    expect(summary(z)).toEqual({ changes: ['CREATE b1.example.com 198.51.100.2'], conflicts: ['UPDATE a1.example.com 198.51.100.1 owner=alice'] });
    expect(z.conflicts[0]!.reason).toBe('a1.example.com A is owned by tenant "alice"');
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'b1', target: '198.51.100.2', ttl: 300 });
    expect(inOvh('a1')).toEqual(before);
  });

  it("through inline change sets: create over, update of and delete of A's sets are conflicts; B's create applies", async () => {
    const before = h.sim.draftRecords(ZONE);
    const z = await apply(
      bob,
      changes({
        create: [ep('a1', 'A', ['198.51.100.9']), ep('b2', 'A', ['198.51.100.3'])],
        updateOld: [ep('a2', 'A', ['192.0.2.2'])],
        updateNew: [ep('a2', 'A', ['198.51.100.8'])],
        delete: [ep('a3', 'TXT', ['alice was here'])],
      }),
    );
    expect(summary(z)).toEqual({
      changes: ['CREATE b2.example.com 198.51.100.3'],
      conflicts: [
        // A create of a set that exists is an update of it.
        'UPDATE a1.example.com 198.51.100.9 owner=alice',
        'UPDATE a2.example.com 198.51.100.8 owner=alice',
        'DELETE a3.example.com alice was here owner=alice',
      ],
    });
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    const after = h.sim.draftRecords(ZONE);
    expect(after.filter((r) => r.subDomain !== 'b2')).toEqual(before);
  });

  it("SYNC with an empty desired state deletes only B's own records", async () => {
    const z = await apply(bob, desired([], Policy.SYNC, [ZONE]));
    expect(summary(z)).toEqual({ changes: ['DELETE b1.example.com 198.51.100.2', 'DELETE b2.example.com 198.51.100.3'], conflicts: [] });
    expect(calls()).toEqual([
      expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)),
      expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)),
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    expect(inOvh('a1')).toHaveLength(1);
    expect(inOvh('manual')).toHaveLength(1);
  });

  it("through a stored plan made before an ownership change: stale, nothing sent; re-planned, only B's own change applies", async () => {
    const bobZone = h.zoneClient(bob);
    const stored = await bobZone.plan(desired([ep('c', 'A', ['198.51.100.4']), ep('b3', 'A', ['198.51.100.5'])]));
    expect(summary(stored.plan!.zones[0]!).changes).toEqual(['CREATE b3.example.com 198.51.100.5', 'CREATE c.example.com 198.51.100.4']);

    // An admin gives c.example.com A (absent in OVH) to alice before bob applies.
    await h.adminClient(admin).assignOwnership({ dnsName: `c.${ZONE}`, recordType: 'A', tenant: 'alice' });
    h.sim.clearCalls();
    const dbBefore = await snapshot(h.server.ctx.pool);
    const err = await bobZone.apply({ source: { case: 'planId', value: stored.plan!.id } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect(Code[(err as ConnectError).code]).toBe('FailedPrecondition');
    expect((err as ConnectError).rawMessage).toMatch(
      /^the record sets or ownership the plan touches in zone example\.com changed since it was made.*nothing was sent/,
    );
    expect(calls()).toEqual([]);
    const dbAfter = await snapshot(h.server.ctx.pool);
    // Only the plan's status moved (pending -> stale); nothing else in the database.
    expect({ ...dbAfter, plans: [] }).toEqual({ ...dbBefore, plans: [] });
    expect((dbAfter.plans as Array<{ id: string; status: string }>).find((p) => p.id === stored.plan!.id)?.status).toBe('stale');

    // Planned again: the conflict is reported, bob's other change goes through.
    const again = await bobZone.plan(desired([ep('c', 'A', ['198.51.100.4']), ep('b3', 'A', ['198.51.100.5'])]));
    expect(summary(again.plan!.zones[0]!)).toEqual({
      changes: ['CREATE b3.example.com 198.51.100.5'],
      conflicts: ['CREATE c.example.com 198.51.100.4 owner=alice'],
    });
    h.sim.clearCalls();
    const applied = await bobZone.apply({ source: { case: 'planId', value: again.plan!.id } });
    expect(ApplyStatus[applied.zones[0]!.status]).toBe('APPLIED');
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(inOvh('c')).toEqual([]);
  });

  it("a stored plan whose update became someone else's is stale too (ownership moved by an admin)", async () => {
    const stored = await h.zoneClient(bob).plan(desired([ep('b3', 'A', ['198.51.100.6'])]));
    expect(summary(stored.plan!.zones[0]!).changes).toEqual(['UPDATE b3.example.com 198.51.100.6']);
    await h.adminClient(admin).assignOwnership({ dnsName: `b3.${ZONE}`, recordType: 'A', tenant: 'alice' });
    h.sim.clearCalls();
    await expect(h.zoneClient(bob).apply({ source: { case: 'planId', value: stored.plan!.id } })).rejects.toMatchObject({ code: Code.FailedPrecondition });
    expect(calls()).toEqual([]);
    expect(inOvh('b3').map((r) => r.target)).toEqual(['198.51.100.5']);
    // Back to bob for the tests below.
    await h.adminClient(admin).assignOwnership({ dnsName: `b3.${ZONE}`, recordType: 'A', tenant: 'bob' });
  });

  it("another tenant's stored plan cannot be applied or read: PermissionDenied, nothing sent", async () => {
    const alicePlan = await h.zoneClient(alice).plan(desired([ep('a1', 'A', ['192.0.2.11'])]));
    h.sim.clearCalls();
    await expect(h.zoneClient(bob).apply({ source: { case: 'planId', value: alicePlan.plan!.id } })).rejects.toMatchObject({ code: Code.PermissionDenied });
    expect(calls()).toEqual([]);
  });

  it('records made by hand are never touched until an admin assigns them', async () => {
    const z = await apply(alice, desired([ep('manual', 'A', ['192.0.2.201'])]));
    expect(z.conflicts.map((c) => [c.owner, c.reason])).toEqual([['', 'exists in OVH without an owner; an admin must assign it']]);
    expect(calls()).toEqual([]);
    await h.adminClient(admin).assignOwnership({ dnsName: `manual.${ZONE}`, recordType: 'A', tenant: 'alice' });
    h.sim.clearCalls();
    const id = inOvh('manual')[0]!.id;
    const after = await apply(alice, desired([ep('manual', 'A', ['192.0.2.201'], 600)]));
    expect(summary(after).changes).toEqual(['UPDATE manual.example.com 192.0.2.201']);
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${id}`, `POST /domain/zone/${ZONE}/refresh`]);
  });

  it("Records: own sets with the owner label; the others' only with include_foreign", async () => {
    const mine = await h.zoneClient(bob).records({ zones: [ZONE] });
    expect(mine.zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.labels['owner']}`)).toEqual([`b3.${ZONE} bob`]);
    const all = await h.zoneClient(bob).records({ zones: [ZONE], includeForeign: true });
    expect(all.zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.recordType} ${e.labels['owner']}`)).toEqual([
      `a1.${ZONE} A alice`,
      `a2.${ZONE} A alice`,
      `a3.${ZONE} TXT alice`,
      `b3.${ZONE} A bob`,
      `${ZONE} NS `,
      `manual.${ZONE} A alice`,
    ]);
    expect(calls()).toEqual([]);
  });
});

describe('shared record sets', () => {
  it('the creator marks a set shared with the label; a second tenant adds its targets; OVH holds the union', async () => {
    const created = await apply(alice, desired([ep('www', 'A', ['192.0.2.10'], 300, SHARED)]));
    expect(summary(created).changes).toEqual(['CREATE www.example.com 192.0.2.10']);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    h.sim.clearCalls();

    // bob needs no label: the set is shared.
    const joined = await apply(bob, desired([ep('www', 'A', ['198.51.100.10', '198.51.100.11'])]));
    expect(summary(joined)).toEqual({ changes: ['CREATE www.example.com 198.51.100.10,198.51.100.11'], conflicts: [] });
    expect(joined.changes[0]!.after!.labels['dnsplane/shared']).toBe('true');
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(
      h.sim
        .writes()
        .slice(0, 2)
        .map((c) => c.body),
    ).toEqual([
      { fieldType: 'A', subDomain: 'www', target: '198.51.100.10', ttl: 300 },
      { fieldType: 'A', subDomain: 'www', target: '198.51.100.11', ttl: 300 },
    ]);
    expect(
      h.sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'www')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['192.0.2.10', '198.51.100.10', '198.51.100.11']);

    const { rows } = await h.server.ctx.pool.query<{ target: string; name: string; shared: boolean }>(
      `SELECT o.target, t.name, o.shared FROM ownership o JOIN tenants t ON t.id = o.tenant_id WHERE dns_name = $1 ORDER BY o.target`,
      [`www.${ZONE}`],
    );
    expect(rows).toEqual([
      { target: '192.0.2.10', name: 'alice', shared: true },
      { target: '198.51.100.10', name: 'bob', shared: true },
      { target: '198.51.100.11', name: 'bob', shared: true },
    ]);
  });

  it('each tenant sees its own targets; with include_foreign, one endpoint per owner', async () => {
    const own = await h.zoneClient(alice).records({ zones: [ZONE] });
    expect(own.zones[0]!.endpoints.filter((e) => e.dnsName === `www.${ZONE}`).map((e) => [e.targets, e.labels])).toEqual([
      [['192.0.2.10'], { owner: 'alice', 'dnsplane/shared': 'true' }],
    ]);
    const all = await h.zoneClient(alice).records({ zones: [ZONE], includeForeign: true });
    expect(all.zones[0]!.endpoints.filter((e) => e.dnsName === `www.${ZONE}`).map((e) => `${e.labels['owner']} ${e.targets.join(',')}`)).toEqual([
      'alice 192.0.2.10',
      'bob 198.51.100.10,198.51.100.11',
    ]);
    // The same desired state again plans no change for either tenant.
    expect(summary(await apply(alice, desired([ep('www', 'A', ['192.0.2.10'])])))).toEqual({ changes: [], conflicts: [] });
    expect(summary(await apply(bob, desired([ep('www', 'A', ['198.51.100.11', '198.51.100.10'])])))).toEqual({ changes: [], conflicts: [] });
    expect(calls()).toEqual([]);
  });

  it('a tenant changing one of its targets costs one PUT of its own record; a target of the other is a conflict', async () => {
    const old = inOvh('www').find((r) => r.target === '198.51.100.11')!;
    const z = await apply(bob, desired([ep('www', 'A', ['198.51.100.10', '198.51.100.12', '192.0.2.10'])]));
    expect(summary(z)).toEqual({
      changes: ['UPDATE www.example.com 198.51.100.10,198.51.100.12'],
      conflicts: ['UPDATE www.example.com 192.0.2.10 owner=alice'],
    });
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${old.id}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ target: '198.51.100.12', ttl: 300 });
  });

  it("a TTL change touches only the tenant's own records", async () => {
    const bobs = inOvh('www').filter((r) => r.target.startsWith('198.51.100.'));
    await apply(bob, desired([ep('www', 'A', ['198.51.100.10', '198.51.100.12'], 120)]));
    expect(calls().sort()).toEqual([...bobs.map((r) => `PUT /domain/zone/${ZONE}/record/${r.id}`), `POST /domain/zone/${ZONE}/refresh`].sort());
    expect(inOvh('www').map((r) => `${r.target} ${r.ttl}`)).toEqual(['192.0.2.10 300', '198.51.100.10 120', '198.51.100.12 120']);
  });

  it("one tenant deletes its target; the other's remain", async () => {
    const alices = inOvh('www').find((r) => r.target === '192.0.2.10')!;
    const z = await apply(alice, changes({ delete: [ep('www', 'A', ['192.0.2.10'])] }));
    expect(summary(z)).toEqual({ changes: ['DELETE www.example.com 192.0.2.10'], conflicts: [] });
    expect(calls()).toEqual([`DELETE /domain/zone/${ZONE}/record/${alices.id}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(
      h.sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'www')
        .map((r) => r.target)
        .sort(),
    ).toEqual(['198.51.100.10', '198.51.100.12']);
  });

  it('the set disappears with the last target, and its ownership with it', async () => {
    const bobs = inOvh('www');
    const z = await apply(bob, desired([], Policy.SYNC, [ZONE]));
    expect(summary(z).changes).toEqual(['DELETE b3.example.com 198.51.100.5', 'DELETE www.example.com 198.51.100.10,198.51.100.12']);
    expect(
      calls()
        .filter((c) => c.includes(bobs[0]!.id) || c.includes(bobs[1]!.id))
        .sort(),
    ).toEqual(bobs.map((r) => `DELETE /domain/zone/${ZONE}/record/${r.id}`).sort());
    expect(calls()).toHaveLength(4); // 2 www + 1 b3 + refresh
    expect(inOvh('www')).toEqual([]);
    const { rows } = await h.server.ctx.pool.query(`SELECT 1 FROM ownership WHERE dns_name = $1`, [`www.${ZONE}`]);
    expect(rows).toEqual([]);
  });

  it('an admin makes an exclusive set shared: its owner keeps its targets, another tenant may join', async () => {
    await apply(alice, desired([ep('api', 'AAAA', ['2001:db8::1'])]));
    await h.adminClient(admin).assignOwnership({ dnsName: `api.${ZONE}`, recordType: 'AAAA', tenant: 'alice', shared: true });
    h.sim.clearCalls();
    const z = await apply(bob, desired([ep('api', 'AAAA', ['2001:db8::2'])]));
    expect(summary(z).changes).toEqual(['CREATE api.example.com 2001:db8::2']);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(inOvh('api', 'AAAA').map((r) => r.target)).toEqual(['2001:db8::1', '2001:db8::2']);
  });

  it('a CNAME cannot be shared: InvalidArgument naming the label, nothing sent', async () => {
    const err = await apply(alice, desired([ep('cn', 'CNAME', ['target.example.org'], 300, SHARED)])).then(
      () => undefined,
      (e: unknown) => e as ConnectError,
    );
    expect(Code[err!.code]).toBe('InvalidArgument');
    expect(err!.rawMessage).toBe('desired.endpoints[0].labels["dnsplane/shared"]: a CNAME record set cannot be shared (shared sets: A, AAAA, TXT, MX, SRV)');
    expect(calls()).toEqual([]);
  });
});
