/**
 * Authentication and the admin scope of every RPC, in memory (test/helpers/api-memory.ts): the
 * server's router and interceptors on a real Postgres, no HTTP server. A refused call reaches no
 * handler: no OVH call, nothing written.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTenant, setTenantDisabled } from '../../src/core/tenants/tenants.js';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { inMemoryClient } from '../helpers/api-memory.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { expectRejected } from '../helpers/expect.js';

// Not "auth.…": @ovhcloud/node-ovh signs no request whose path contains "/auth" (lib/ovh.js), so OVH would refuse its calls.
const ZONE = 'tokens.test';
let room: ApplyRoom;

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] }, tenants: ['alice', 'gone'] });
  await setTenantDisabled(room.db.pool, 'gone', true);
});
afterAll(async () => {
  await room?.close();
});
beforeEach(() => room.sim.clearCalls());

const zone = (token?: string) => inMemoryClient(room.ctx, ZoneService, token);
const admin = (token?: string) => inMemoryClient(room.ctx, AdminService, token);

describe('the bearer token', () => {
  it('none: Unauthenticated, saying what to send, on every service', async () => {
    await expectRejected(zone().listZones({}), Code.Unauthenticated, /^missing credentials: send "Authorization: Bearer <token>"$/);
    await expectRejected(admin().listTenants({}), Code.Unauthenticated, /^missing credentials/);
    expect(room.calls()).toEqual([]);
  });

  it('not a bearer token (another scheme): treated as none', async () => {
    const basic = inMemoryClient(room.ctx, ZoneService, undefined, {
      interceptors: [
        (next) => (req) => {
          req.header.set('authorization', `Basic ${room.tokens['alice']!}`);
          return next(req);
        },
      ],
    });
    await expectRejected(basic.records({ zones: [ZONE] }), Code.Unauthenticated, /^missing credentials/);
  });

  it('unknown, or of a disabled tenant: Unauthenticated, the two alike (a caller cannot tell which)', async () => {
    await expectRejected(zone('not-a-token').records({ zones: [ZONE] }), Code.Unauthenticated, /^invalid or disabled token$/);
    await expectRejected(zone(room.tokens['gone']).records({ zones: [ZONE] }), Code.Unauthenticated, /^invalid or disabled token$/);
    await expectRejected(admin(room.tokens['gone']).listTenants({}), Code.Unauthenticated, /^invalid or disabled token$/);
    expect(room.calls()).toEqual([]);
  });

  it("a tenant's valid token: the call runs as that tenant", async () => {
    const zones = await zone(room.tokens['alice']).listZones({});
    expect([zones.tenant, zones.zones.map((z) => z.name)]).toEqual(['alice', [ZONE]]);
  });

  it('disabled after a call succeeded: the next call is refused (no token cache in this context: each call reads Postgres)', async () => {
    const { token } = await createTenant(room.db.pool, { name: 'brief', zones: [ZONE] });
    expect((await zone(token).listZones({})).tenant).toBe('brief');
    await setTenantDisabled(room.db.pool, 'brief', true);
    await expectRejected(zone(token).listZones({}), Code.Unauthenticated, /^invalid or disabled token$/);
  });
});

describe('the admin scope', () => {
  it("a tenant's token on AdminService: PermissionDenied naming the tenant, before the request is read; nothing written", async () => {
    const before = (await store.listTenants(room.db.pool)).length;
    const alice = admin(room.tokens['alice']);
    await expectRejected(alice.listTenants({}), Code.PermissionDenied, /^this call needs the admin scope; tenant "alice" does not have it$/);
    // A request that would be invalid is refused for the scope, not for its content.
    await expectRejected(alice.createTenant({ name: 'NOT VALID', zones: [] }), Code.PermissionDenied, /needs the admin scope/);
    expect((await store.listTenants(room.db.pool)).length).toBe(before);
    expect(room.calls()).toEqual([]);
  });

  it("an admin's token: the call runs", async () => {
    const { token } = await createTenant(room.db.pool, { name: 'root', zones: [], admin: true });
    const names = (await admin(token).listTenants({})).tenants.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['alice', 'gone', 'root']));
  });
});
