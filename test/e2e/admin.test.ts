/**
 * AdminService end to end: PlanAs (no OVH call), plans, tenants, ownership (list, assign),
 * ImportTxtRegistry over zones that external-dns filled (typed and old TXT names, a prefix; a dry run
 * that writes nothing), InvalidateZone (exact OVH calls) and the journal as audit log.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { getJournalEntry } from '../../src/store/index.js';
import { AdminService, AdoptionOutcome } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { ChangeAction, PlanRequestSchema, Policy, type Endpoint, type PlanRequest } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { SimRecordInit } from '../../src/ovhsim/index.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { bearer } from '../helpers/sim-server.js';
import { snapshot } from '../helpers/snapshot.js';
import { callLines, ep } from '../helpers/expect.js';

const COM = 'example.com';
const NET = 'example.net';
let h: Harness;
let admin: string;
let alice: string;
let bob: string;

const reg = (owner: string, resource = 'ingress/default/web') => `"heritage=external-dns,external-dns/owner=${owner},external-dns/resource=${resource}"`;
const rec = (subDomain: string, fieldType: string, target: string): SimRecordInit => ({ subDomain, fieldType, target, ttl: 300 });

/** What external-dns (in-tree OVH provider, TXT registry) left in the zones. */
const FILLED: Record<string, SimRecordInit[]> = {
  [COM]: [
    // cluster c1, new (typed) format
    rec('web', 'A', '192.0.2.1'),
    rec('a-web', 'TXT', reg('c1')),
    // cluster c1, old (untyped) format: the TXT sits at the name itself and never speaks for AAAA
    rec('old', 'A', '192.0.2.2'),
    rec('old', 'AAAA', '2001:db8::2'),
    rec('old', 'TXT', reg('c1')),
    // cluster c2
    rec('v6', 'AAAA', '2001:db8::6'),
    rec('aaaa-v6', 'TXT', reg('c2')),
    rec('alias', 'CNAME', 'lb.example.org.'),
    rec('cname-alias', 'TXT', reg('c2')),
    // cluster c3: not mapped
    rec('other', 'A', '192.0.2.3'),
    rec('a-other', 'TXT', reg('c3')),
    // cluster c4: mapped to a tenant that may not write www
    rec('www', 'A', '192.0.2.4'),
    rec('a-www', 'TXT', reg('c4')),
    // by hand
    rec('handmade', 'A', '192.0.2.5'),
    rec('', 'TXT', 'v=spf1 -all'),
  ],
  // external-dns ran with --txt-prefix=_extdns.
  [NET]: [
    rec('shop', 'A', '198.51.100.1'),
    rec('_extdns.a-shop', 'TXT', reg('c1')),
    rec('legacy', 'A', '198.51.100.2'),
    rec('_extdns.legacy', 'TXT', reg('c1')),
  ],
};

const calls = (): string[] => callLines(h.sim);

const desired = (endpoints: Endpoint[]): PlanRequest =>
  create(PlanRequestSchema, { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints } } });

async function refused(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ConnectError);
  return e as ConnectError;
}

beforeAll(async () => {
  h = await startHarness({ zones: FILLED });
  admin = await h.tenant('admin', [], { admin: true });
  alice = await h.tenant('alice', [COM, NET]);
  bob = await h.tenant('bob', [COM]);
  await h.tenant('carol', [COM]);
  await h.tenant('dave', [COM], { suffixes: [`dave.${COM}`] });
  // Both zones synced before the tests count calls.
  await h.zoneClient(admin).records({});
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('ImportTxtRegistry', () => {
  const owners = { c1: 'alice', c2: 'bob', c4: 'dave' };
  const outcomes = (adoptions: Array<{ dnsName: string; recordType: string; ownerId: string; tenant: string; outcome: AdoptionOutcome }>) =>
    adoptions.map((a) => `${a.dnsName} ${a.recordType} ${a.ownerId}->${a.tenant || '?'} ${AdoptionOutcome[a.outcome]}`);
  const EXPECTED = [
    `a-other.${COM} TXT c3->? UNMAPPED_OWNER`,
    `a-web.${COM} TXT c1->alice ADOPTED`,
    `a-www.${COM} TXT c4->dave NOT_ALLOWED`,
    `aaaa-v6.${COM} TXT c2->bob ADOPTED`,
    `alias.${COM} CNAME c2->bob CONFLICT`,
    `cname-alias.${COM} TXT c2->bob ADOPTED`,
    `old.${COM} A c1->alice ADOPTED`,
    `old.${COM} TXT c1->alice ADOPTED`,
    `other.${COM} A c3->? UNMAPPED_OWNER`,
    `v6.${COM} AAAA c2->bob ADOPTED`,
    `web.${COM} A c1->alice ADOPTED`,
    `www.${COM} A c4->dave NOT_ALLOWED`,
  ];

  it('a dry run shows what it would adopt and writes nothing (no OVH call, every table unchanged)', async () => {
    // carol already owns the CNAME external-dns says is c2's: a conflict, left alone.
    await h.adminClient(admin).assignOwnership({ dnsName: `alias.${COM}`, recordType: 'CNAME', tenant: 'carol' });
    h.sim.clearCalls();
    const before = await snapshot(h.server.ctx.pool);
    const res = await h.adminClient(admin).importTxtRegistry({ zone: COM, owners, dryRun: true });
    expect(res.dryRun).toBe(true);
    expect(outcomes(res.adoptions)).toEqual(EXPECTED);
    expect(res.adoptions.find((a) => a.dnsName === `alias.${COM}`)!.reason).toBe('owned by tenant "carol"; use AssignOwnership to move it');
    expect(res.adoptions.find((a) => a.dnsName === `www.${COM}`)!.reason).toMatch(/outside tenant "dave"'s allowed suffixes/);
    expect(res.adoptions.find((a) => a.dnsName === `web.${COM}`)!.registryName).toBe(`a-web.${COM}`);
    expect(calls()).toEqual([]);
    expect(await snapshot(h.server.ctx.pool)).toEqual(before);
    // The same answer in the JSON format (the console's) as in the binary one (the CLI's: its list encoded in slices, api/binary-write.ts).
    const json = createClient(
      AdminService,
      createConnectTransport({ baseUrl: h.server.url, httpVersion: '1.1', useBinaryFormat: false, interceptors: [bearer(admin)] }),
    );
    expect(await json.importTxtRegistry({ zone: COM, owners, dryRun: true })).toEqual(res);
  });

  it('adopts the owners external-dns recorded (typed and old names), the registry records with them', async () => {
    const generation = (await h.zoneClient(admin).listZones({})).zones.find((z) => z.name === COM)!.generation;
    const res = await h.adminClient(admin).importTxtRegistry({ zone: COM, owners });
    expect(outcomes(res.adoptions)).toEqual(EXPECTED);
    expect(res.generation).toBe(generation + 1n);
    expect(calls()).toEqual([]);
    const listing = await h.adminClient(admin).listOwnership({ zone: COM });
    expect(listing.entries.map((e) => `${e.dnsName} ${e.recordType} ${e.tenant}`)).toEqual([
      `a-web.${COM} TXT alice`,
      `aaaa-v6.${COM} TXT bob`,
      `alias.${COM} CNAME carol`,
      `cname-alias.${COM} TXT bob`,
      `old.${COM} A alice`,
      `old.${COM} TXT alice`,
      `v6.${COM} AAAA bob`,
      `web.${COM} A alice`,
    ]);
    // Again: nothing new.
    const again = await h.adminClient(admin).importTxtRegistry({ zone: COM, owners });
    expect(again.adoptions.filter((a) => a.outcome === AdoptionOutcome.ADOPTED)).toEqual([]);
    expect(again.adoptions.filter((a) => a.outcome === AdoptionOutcome.ALREADY_OWNED)).toHaveLength(7);
    expect(again.generation).toBe(res.generation);
  });

  it('reads names written with --txt-prefix', async () => {
    const res = await h.adminClient(admin).importTxtRegistry({ zone: NET, owners: { c1: 'alice' }, txtPrefix: '_extdns.' });
    expect(outcomes(res.adoptions)).toEqual([
      `_extdns.a-shop.${NET} TXT c1->alice ADOPTED`,
      `_extdns.legacy.${NET} TXT c1->alice ADOPTED`,
      `legacy.${NET} A c1->alice ADOPTED`,
      `shop.${NET} A c1->alice ADOPTED`,
    ]);
    expect(calls()).toEqual([]);
  });

  it('the adopted owner may now change its records; another tenant may not', async () => {
    const web = h.sim.draftRecords(COM).find((r) => r.subDomain === 'web')!;
    const mine = await h.zoneClient(alice).apply({ source: { case: 'plan', value: desired([ep(`web.${COM}`, 'A', ['192.0.2.11'])]) } });
    expect(mine.zones[0]!.changes.map((c) => ChangeAction[c.action])).toEqual(['UPDATE']);
    expect(calls()).toEqual([`PUT /domain/zone/${COM}/record/${web.id}`, `POST /domain/zone/${COM}/refresh`]);
    h.sim.clearCalls();
    const theirs = await h.zoneClient(bob).apply({ source: { case: 'plan', value: desired([ep(`web.${COM}`, 'A', ['198.51.100.66'])]) } });
    expect(theirs.zones[0]!.conflicts.map((c) => c.owner)).toEqual(['alice']);
    expect(calls()).toEqual([]);
  });

  it('refuses bad input with the field and the rule', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ zone: 'nope.test', owners }, /^zone: "nope.test" is not a zone dnsplane manages$/],
      [{ zone: COM, owners: {} }, /^owners: map at least one external-dns owner id to a tenant$/],
      [{ zone: COM, owners: { c1: 'nobody' } }, /^owners\["c1"\]: tenant "nobody" does not exist$/],
      [{ zone: COM, owners, txtPrefix: 'p', txtSuffix: 's' }, /^txtSuffix: txt_prefix and txt_suffix are mutually exclusive/],
    ];
    for (const [req, message] of cases) {
      const e = await refused(h.adminClient(admin).importTxtRegistry(req));
      expect(Code[e.code]).toBe('InvalidArgument');
      expect(e.rawMessage).toMatch(message);
    }
  });
});

describe('plans', () => {
  it("PlanAs computes and stores the tenant's plan and makes no OVH call at all", async () => {
    const res = await h
      .adminClient(admin)
      .planAs({ tenant: 'alice', request: desired([ep(`web.${COM}`, 'A', ['192.0.2.12']), ep(`new.${COM}`, 'A', ['192.0.2.13'])]) });
    const plan = res.plan!;
    expect(plan.tenant).toBe('alice');
    expect(plan.zones[0]!.changes.map((c) => `${ChangeAction[c.action]} ${(c.after ?? c.before)!.dnsName}`)).toEqual([
      `CREATE new.${COM}`,
      `UPDATE web.${COM}`,
    ]);
    expect(plan.zones[0]!.changes[1]!.operations.map((o) => o.method)).toEqual(['PUT']);
    expect(calls()).toEqual([]);

    const listed = await h.adminClient(admin).listPlans({ tenant: 'alice' });
    expect(listed.plans[0]).toMatchObject({
      id: plan.id,
      tenant: 'alice',
      requestedBy: 'admin',
      status: 'pending',
      changeCount: 2,
      conflictCount: 0,
      operationCount: 3,
    });
    const got = await h.adminClient(admin).getPlan({ id: plan.id });
    expect(got.plan!.digest).toBe(plan.digest);
    expect(got.summary!.requestedBy).toBe('admin');
    // As a dry run for bob: his conflict shows, nothing is sent.
    const asBob = await h.adminClient(admin).planAs({ tenant: 'bob', request: desired([ep(`web.${COM}`, 'A', ['192.0.2.14'])]) });
    expect(asBob.plan!.zones[0]!.conflicts.map((c) => c.owner)).toEqual(['alice']);
    expect(calls()).toEqual([]);
  });

  it('lists by status, with explicit limits', async () => {
    const e = await refused(h.adminClient(admin).listPlans({ limit: 5000 }));
    expect(e.rawMessage).toBe('limit: must be 1-1000 (0 means 100), got 5000');
    const e2 = await refused(h.adminClient(admin).listPlans({ status: 'weird' }));
    expect(e2.rawMessage).toMatch(/^status: unknown status "weird"/);
    expect((await h.adminClient(admin).listPlans({ status: 'applied', limit: 1 })).plans).toHaveLength(0);
  });
});

describe('tenants', () => {
  it('creates (token shown once), lists, rotates, disables and enables again', async () => {
    const c = h.adminClient(admin);
    const created = await c.createTenant({ name: 'erin', zones: [COM], suffixes: [`erin.${COM}`] });
    expect(created.token).toMatch(/^dnsp_[A-Za-z0-9_-]{43}$/);
    expect(created.tenant).toMatchObject({ name: 'erin', zones: [COM], suffixes: [`erin.${COM}`], scopes: [], disabled: false });
    expect((await c.listTenants({})).tenants.map((t) => t.name)).toEqual(['admin', 'alice', 'bob', 'carol', 'dave', 'erin']);
    expect((await h.zoneClient(created.token).listZones({})).zones).toHaveLength(1);

    const rotated = await c.rotateTenantToken({ name: 'erin' });
    expect(rotated.token).not.toBe(created.token);
    expect(Code[(await refused(h.zoneClient(created.token).listZones({}))).code]).toBe('Unauthenticated');

    expect((await c.disableTenant({ name: 'erin' })).tenant!.disabled).toBe(true);
    expect(Code[(await refused(h.zoneClient(rotated.token).listZones({}))).code]).toBe('Unauthenticated');
    expect((await c.disableTenant({ name: 'erin', enable: true })).tenant!.disabled).toBe(false);
    expect((await h.zoneClient(rotated.token).listZones({})).zones).toHaveLength(1);
  });

  it('refuses bad input naming the field', async () => {
    const c = h.adminClient(admin);
    const cases: Array<[() => Promise<unknown>, string, string]> = [
      [
        () => c.createTenant({ name: 'Bad Name', zones: [COM] }),
        'InvalidArgument',
        'name: must be 1-63 characters of a-z, 0-9 and "-", starting with a letter or digit',
      ],
      [() => c.createTenant({ name: 'alice', zones: [COM] }), 'InvalidArgument', 'name: a tenant named "alice" already exists'],
      [() => c.createTenant({ name: 'x1', zones: [COM], scopes: ['root'] }), 'InvalidArgument', 'scopes[0]: unknown scope "root" (known: admin)'],
      [
        () => c.createTenant({ name: 'x2', zones: [COM], suffixes: ['elsewhere.org'] }),
        'InvalidArgument',
        `suffixes[0]: "elsewhere.org" is in none of the tenant's zones (${COM})`,
      ],
      [() => c.createTenant({ name: 'x3', zones: [] }), 'InvalidArgument', 'zones: a tenant needs at least one zone (admins without zones may use every zone)'],
      [
        () => c.createTenant({ name: 'x4', zones: [COM, 'not-managed.example'] }),
        'InvalidArgument',
        `zones[1]: "not-managed.example" is not a zone dnsplane manages (managed: ${COM}, ${NET}); the OVH account does not hold it`,
      ],
      [() => c.disableTenant({ name: 'admin' }), 'InvalidArgument', 'name: an admin cannot disable itself (it would lock itself out)'],
      [() => c.rotateTenantToken({ name: 'ghost' }), 'NotFound', 'tenant "ghost" does not exist'],
    ];
    for (const [p, code, message] of cases) {
      const e = await refused(p());
      expect([Code[e.code], e.rawMessage]).toEqual([code, message]);
    }
    const names = (await c.listTenants({})).tenants.map((t) => t.name);
    for (const refusedName of ['x1', 'x2', 'x3', 'x4']) expect(names).not.toContain(refusedName); // nothing written
  });
});

describe('ownership', () => {
  it('lists who owns what, and what exists without an owner', async () => {
    const res = await h.adminClient(admin).listOwnership({ zone: COM, includeUnowned: true });
    expect(res.unowned.map((e) => `${e.dnsName} ${e.recordType}`)).toEqual([
      `a-other.${COM} TXT`,
      `a-www.${COM} TXT`,
      `${COM} NS`,
      `${COM} TXT`,
      `handmade.${COM} A`,
      `old.${COM} AAAA`,
      `other.${COM} A`,
      `www.${COM} A`,
    ]);
    const bobs = await h.adminClient(admin).listOwnership({ tenant: 'bob' });
    expect(bobs.entries.map((e) => `${e.dnsName} ${e.recordType}`)).toEqual([`aaaa-v6.${COM} TXT`, `cname-alias.${COM} TXT`, `v6.${COM} AAAA`]);
  });

  it('assigns and releases; each change bumps the generation and is audited', async () => {
    const c = h.adminClient(admin);
    const adopted = await c.assignOwnership({ dnsName: `handmade.${COM}`, recordType: 'A', tenant: 'bob' });
    expect(adopted.entries.map((e) => [e.tenant, e.target, e.shared])).toEqual([['bob', '', false]]);
    const shared = await c.assignOwnership({ dnsName: `handmade.${COM}`, recordType: 'A', tenant: 'alice', shared: true, targets: ['192.0.2.50'] });
    expect(shared.entries.map((e) => [e.tenant, e.target, e.shared])).toEqual([
      ['bob', '192.0.2.5', true],
      ['alice', '192.0.2.50', true],
    ]);
    expect(shared.generation).toBe(adopted.generation + 1n);
    const released = await c.assignOwnership({ dnsName: `handmade.${COM}`, recordType: 'A', tenant: '' });
    expect(released.entries).toEqual([]);
    expect(calls()).toEqual([]);

    const e = await refused(c.assignOwnership({ dnsName: `alias.${COM}`, recordType: 'CNAME', tenant: 'bob', shared: true }));
    expect([Code[e.code], e.rawMessage]).toEqual(['InvalidArgument', 'shared: a CNAME record set cannot be shared (shared sets: A, AAAA, TXT, MX, SRV)']);
    const e2 = await refused(c.assignOwnership({ dnsName: 'www.elsewhere.org', recordType: 'A', tenant: 'bob' }));
    expect(e2.rawMessage).toMatch(/^dnsName: "www.elsewhere.org" is not in any zone dnsplane manages/);
  });
});

describe('InvalidateZone and the audit log', () => {
  it('drops the cache and re-reads the zone: ids, one GET per record, the SOA; no write', async () => {
    const before = (await h.zoneClient(admin).listZones({})).zones.find((z) => z.name === NET)!;
    const res = await h.adminClient(admin).invalidateZone({ zone: NET });
    const ids = h.sim.draftRecords(NET).map((r) => r.id);
    expect(calls().sort()).toEqual(
      [`GET /domain/zone/${NET}/record`, ...ids.map((id) => `GET /domain/zone/${NET}/record/${id}`), `GET /domain/zone/${NET}/soa`].sort(),
    );
    expect(res.recordCount).toBe(ids.length);
    expect(res.generation).toBe(before.generation + 1n);
    // Ownership is kept.
    expect((await h.adminClient(admin).listOwnership({ zone: NET })).entries).toHaveLength(4);
  });

  it('the journal says who did what, when, with which OVH calls and how it ended', async () => {
    const res = await h.adminClient(admin).listJournal({ zone: COM });
    const apply = res.entries.find((e) => e.kind === 'apply' && e.tenant === 'alice')!;
    expect(apply).toMatchObject({ zone: COM, state: 'done' });
    expect(apply.operations.map((o) => o.method)).toEqual(['PUT']);
    expect(apply.calls.map((o) => `${o.method} ${o.status}`)).toEqual(['PUT 200', 'POST 204']);
    expect(apply.startedAt).toBeDefined();
    const kinds = res.entries.map((e) => `${e.kind} ${e.tenant}`);
    expect(kinds).toContain('import-txt-registry admin');
    expect(kinds).toContain('assign-ownership admin');
    const imported = res.entries.find((e) => e.kind === 'import-txt-registry')!;
    expect(imported.summary).toBe('adopted 7 record set(s) from the TXT registry by admin: alice 4, bob 3');
    // The row names the sets adopted (the first AUDIT_SAMPLE of a large import) and counts them.
    const detail = (await getJournalEntry(h.server.ctx.pool, imported.id))!.intent as { detail: Record<string, unknown> };
    expect(detail.detail).toEqual({
      adopted: expect.arrayContaining([{ dnsName: `web.${COM}`, recordType: 'A', tenant: 'alice', ownerId: 'c1' }]),
      adoptedCount: 7,
      byTenant: { alice: 4, bob: 3 },
    });
    expect(detail.detail['adopted']).toHaveLength(7);
    const net = await h.adminClient(admin).listJournal({ zone: NET, limit: 1 });
    expect(net.entries.map((e) => e.kind)).toEqual(['invalidate-zone']);
    expect((await h.adminClient(admin).listJournal({ tenant: 'bob' })).entries).toEqual([]);
  });
});
