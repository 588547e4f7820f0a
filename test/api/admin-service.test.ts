/**
 * AdminService's happy paths in memory (test/helpers/api-memory.ts): a tenant made, used, rotated
 * and disabled through the RPCs, each step felt by the next call of that tenant (this context keeps
 * no token cache: each call reads Postgres); an admin reading another tenant's plan and the journal
 * of its apply.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { Policy, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { inMemoryClient } from '../helpers/api-memory.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { ep, expectRejected } from '../helpers/expect.js';

const ZONE = 'admin.test';
let room: ApplyRoom;
let root: ReturnType<typeof inMemoryClient<typeof AdminService>>;

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [] }, tenants: ['alice'] });
  root = inMemoryClient(room.ctx, AdminService, (await createTenant(room.db.pool, { name: 'root', zones: [], admin: true })).token);
});
afterAll(async () => {
  await room?.close();
});

const zoneAs = (token: string) => inMemoryClient(room.ctx, ZoneService, token);

describe('a tenant through its life', () => {
  it('created with a token that works at once; rotated without grace: the old one refused, the new one works; disabled: refused; enabled again: works', async () => {
    const created = await root.createTenant({ name: 'team', zones: [ZONE], suffixes: [`apps.${ZONE}`] });
    expect([created.tenant!.name, created.tenant!.zones, created.tenant!.suffixes]).toEqual(['team', [ZONE], [`apps.${ZONE}`]]);
    const listed = await zoneAs(created.token).listZones({});
    expect([listed.tenant, listed.suffixes]).toEqual(['team', [`apps.${ZONE}`]]);
    expect((await root.listTenants({})).tenants.map((t) => t.name).sort()).toEqual(['alice', 'root', 'team']);

    const rotated = await root.rotateTenantToken({ name: 'team' });
    expect(rotated.token).not.toBe(created.token);
    await expectRejected(zoneAs(created.token).listZones({}), Code.Unauthenticated, /^invalid or disabled token$/);
    expect((await zoneAs(rotated.token).listZones({})).tenant).toBe('team');

    expect((await root.disableTenant({ name: 'team' })).tenant!.disabled).toBe(true);
    await expectRejected(zoneAs(rotated.token).listZones({}), Code.Unauthenticated, /^invalid or disabled token$/);
    expect((await root.disableTenant({ name: 'team', enable: true })).tenant!.disabled).toBe(false);
    expect((await zoneAs(rotated.token).listZones({})).tenant).toBe('team');
    expect(room.calls()).toEqual([]);
  });

  it("the suffixes granted are enforced on the tenant's next Plan", async () => {
    const { token } = await root.createTenant({ name: 'narrow', zones: [ZONE], suffixes: [`apps.${ZONE}`] });
    const planOf = (name: string) =>
      zoneAs(token).plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(name, 'A', ['192.0.2.1'])] } } });
    expect((await planOf(`web.apps.${ZONE}`)).plan!.zones[0]!.changes).toHaveLength(1);
    await expectRejected(
      planOf(`web.${ZONE}`),
      Code.PermissionDenied,
      /^desired\.endpoints\[0\]\.dnsName: "web\.admin\.test" is outside tenant "narrow"'s allowed suffixes \(apps\.admin\.test\)$/,
    );
  });
});

describe("an admin reading a tenant's work", () => {
  it("alice's stored plan and the journal of its apply, as alice's", async () => {
    const alice = zoneAs(room.tokens['alice']!);
    const planned = (
      await alice.plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`www.${ZONE}`, 'A', ['192.0.2.5'])] } } })
    ).plan!;
    const got = await root.getPlan({ id: planned.id });
    expect([got.plan!.id, got.plan!.digest, got.summary!.tenant, got.summary!.status]).toEqual([planned.id, planned.digest, 'alice', 'pending']);
    expect((await root.listPlans({ tenant: 'alice' })).plans.map((p) => p.id)).toContain(planned.id);

    await alice.apply({ source: { case: 'planId', value: planned.id } });
    const entries = (await root.listJournal({ zone: ZONE, limit: 5 })).entries;
    expect(entries.map((e) => [e.zone, e.tenant, e.kind, e.state])).toEqual([[ZONE, 'alice', 'apply', 'done']]);
    expect((await root.getPlan({ id: planned.id })).summary!.status).toBe('applied');
  });
});
