/**
 * Authorization on every RPC of every service the server registers (enumerated from the real router,
 * so a service or RPC added later is covered, and must be given its cases in PERMISSION below):
 * no token, a wrong token, a disabled tenant -> Unauthenticated; a zone or name outside the tenant's
 * grant, another tenant's plan, an admin RPC without the admin scope -> PermissionDenied. Each refused
 * call changes nothing: the simulator saw no call at all and every table is as it was.
 *
 * The server logs at trace level into this test; no token ever appears in the logs, in an error, or
 * in the database (which holds only the tokens' sha-256).
 */
import { createHash, randomBytes } from 'node:crypto';
import { fromJson, type DescMethod, type DescService, type JsonValue } from '@bufbuild/protobuf';
import { Code, ConnectError, createConnectRouter } from '@connectrpc/connect';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlanRequestSchema } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { registerServices } from '../../src/api/services.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { dumpText, snapshot } from '../helpers/snapshot.js';

const ZONE = 'example.com';
const OTHER = 'other.test';
const logLines: string[] = [];
const errorMessages: string[] = [];
const tokens: Record<string, string> = {};
let h: Harness;
let alicePlanId = '';

type Who = 'alice' | 'limited' | 'outsider' | 'admin';
interface Case {
  what: string;
  who: Who;
  request: JsonValue;
}

const endpoint = (dnsName: string) => ({ dnsName, recordType: 'A', targets: ['192.0.2.99'], ttl: 300 });
const desiredReq = (dnsName: string, zones: string[] = []) => ({ policy: 'POLICY_UPSERT_ONLY', desired: { zones, endpoints: [endpoint(dnsName)] } });
const nsmReq = (domain: string) => ({ domain, services: [{ name: 'registry', port: 5002, addresses: ['192.0.2.50'] }] });

/**
 * Per RPC ("Service/Method"): the requests that must be PermissionDenied for the tenant named, or why
 * there is none. Admin RPCs are also refused to a non-admin tenant, whatever the request.
 */
const PERMISSION: Record<string, Case[] | string> = {
  'dnsplane.v1.ZoneService/ListZones': "no zone in the request: it lists the tenant's zones only (checked below)",
  'dnsplane.v1.ZoneService/Records': [{ what: 'a zone not its own', who: 'outsider', request: { zones: [ZONE] } }],
  'dnsplane.v1.ZoneService/Plan': [
    { what: 'a name in a zone not its own', who: 'outsider', request: desiredReq(`x.${ZONE}`) },
    { what: 'a name outside its suffixes', who: 'limited', request: desiredReq(`www.${ZONE}`) },
    { what: 'desired.zones not its own', who: 'alice', request: desiredReq(`x.${ZONE}`, [OTHER]) },
  ],
  'dnsplane.v1.ZoneService/Apply': [
    { what: 'inline, a name in a zone not its own', who: 'outsider', request: { plan: desiredReq(`x.${ZONE}`) } },
    { what: 'inline, a name outside its suffixes', who: 'limited', request: { plan: desiredReq(`www.${ZONE}`) } },
    { what: "another tenant's stored plan", who: 'limited', request: { planId: '<alice-plan>' } },
  ],
  'dnsplane.v1.ZoneService/GetApply':
    "another tenant's journal id is NotFound, as an id that does not exist (ids of others leak nothing; test/e2e/wait-visible.test.ts); it reads, changes nothing",
  'dnsplane.v1.NsmService/PublishDomain': [
    { what: 'a domain in a zone not its own', who: 'outsider', request: nsmReq(`c1.nsm.${ZONE}`) },
    { what: 'a domain outside its suffixes', who: 'limited', request: nsmReq(`c1.nsm.${ZONE}`) },
  ],
  'dnsplane.v1.NsmService/UnpublishDomain': [
    { what: 'a domain in a zone not its own', who: 'outsider', request: { domain: `c1.nsm.${ZONE}` } },
    { what: 'a domain outside its suffixes', who: 'limited', request: { domain: `c1.nsm.${ZONE}` } },
  ],
  'dnsplane.v1.AdminService/PlanAs': [
    { what: 'planning for a tenant outside its zones', who: 'admin', request: { tenant: 'outsider', request: desiredReq(`x.${ZONE}`) } },
    { what: 'planning for a tenant outside its suffixes', who: 'admin', request: { tenant: 'limited', request: desiredReq(`www.${ZONE}`) } },
  ],
  'dnsplane.v1.AdminService/ListPlans': 'admins see every plan',
  'dnsplane.v1.AdminService/GetPlan': 'admins see every plan',
  'dnsplane.v1.AdminService/ApprovePlan': 'admins see every plan; the two-person rule and its refusals are test/e2e/approvals.test.ts',
  'dnsplane.v1.AdminService/PlanRevert': "the revert is planned with the apply's tenant's grants (test/e2e/revert.test.ts)",
  'dnsplane.v1.AdminService/CreateTenant': 'no zone grant involved',
  'dnsplane.v1.AdminService/ListTenants': 'no zone grant involved',
  'dnsplane.v1.AdminService/RotateTenantToken': 'no zone grant involved',
  'dnsplane.v1.AdminService/DisableTenant': 'no zone grant involved',
  'dnsplane.v1.AdminService/SetTenantMaxChangePercent': 'no zone grant involved',
  'dnsplane.v1.AdminService/SetTenantWithdrawAfter': 'no zone grant involved',
  'dnsplane.v1.AdminService/ListOwnership': 'admins see every zone',
  'dnsplane.v1.AdminService/AssignOwnership': [
    { what: "giving a name outside the new owner's suffixes", who: 'admin', request: { dnsName: `www.${ZONE}`, recordType: 'A', tenant: 'limited' } },
    { what: "giving a name outside the new owner's zones", who: 'admin', request: { dnsName: `www.${ZONE}`, recordType: 'A', tenant: 'outsider' } },
  ],
  'dnsplane.v1.AdminService/ImportTxtRegistry': 'a mapped tenant outside its grant is reported per record (admin.test.ts), not refused',
  'dnsplane.v1.AdminService/InvalidateZone': 'admins may use every zone',
  'dnsplane.v1.AdminService/ExportZone': 'admins see every zone',
  'dnsplane.v1.AdminService/ListJournal': 'admins see every zone',
  'dnsplane.v1.AdminService/ParseDesiredState': 'reads nothing: it only parses the document it is given',
  'dnsplane.v1.AdminService/CreateTsigKey': 'no zone grant involved: the key acts as its tenant (its grants are checked where it is used)',
  'dnsplane.v1.AdminService/ListTsigKeys': "admins see every tenant's keys",
  'dnsplane.v1.AdminService/RotateTsigKey': 'no zone grant involved',
  'dnsplane.v1.AdminService/DeleteTsigKey': 'no zone grant involved',
  'dnsplane.v1.AdminService/CreateOvhKey': 'no zone grant involved: the key acts as its tenant (its grants are checked where it is used)',
  'dnsplane.v1.AdminService/ListOvhKeys': "admins see every tenant's keys",
  'dnsplane.v1.AdminService/RotateOvhKey': 'no zone grant involved',
  'dnsplane.v1.AdminService/DeleteOvhKey': 'no zone grant involved',
  'dnsplane.v1.AdminService/ListOvhDrafts': "admins see every tenant's staged writes",
  'dnsplane.v1.AdminService/ProtectNames': 'admins may use every zone',
  'dnsplane.v1.AdminService/UnprotectNames': 'admins may use every zone',
  'dnsplane.v1.AdminService/ListProtectedNames': 'admins see every zone',
  'dnsplane.v1.AdminService/TrustSubject': 'no zone grant involved: the subject acts as its tenant (its grants are checked where it is used)',
  'dnsplane.v1.AdminService/UntrustSubject': 'no zone grant involved',
  'dnsplane.v1.AdminService/ListTrustedSubjects': "admins see every tenant's trusted subjects",
  'dnsplane.v1.AdminService/AddOvhAccount': "no zone grant involved: OVH accounts are the deployment's (test/e2e/ovh-accounts.test.ts)",
  'dnsplane.v1.AdminService/ListOvhAccounts': 'no zone grant involved',
  'dnsplane.v1.AdminService/RotateOvhAccount': 'no zone grant involved',
  'dnsplane.v1.AdminService/SetOvhAccountEnabled': 'no zone grant involved',
  'dnsplane.v1.AdminService/RemoveOvhAccount': 'no zone grant involved',
  // A cluster's life (issue 46).
  'dnsplane.v1.AdminService/HandoverTenant': [
    { what: 'handing a zone over to a tenant outside its zones', who: 'admin', request: { old: 'alice', new: 'outsider', zone: ZONE } },
  ],
  'dnsplane.v1.AdminService/DrainTenant': 'admins may use every zone; only the tenant named is drained',
  'dnsplane.v1.AdminService/RetireTenant':
    "its handover is HandoverTenant's, refused where the heir's grants do not cover a set (test/e2e/tenant-retire.test.ts)",
  'dnsplane.v1.AdminService/ListOrphans': 'admins see every zone',
  'dnsplane.v1.AdminService/RevertHandover': 'moves back only what the handover moved (test/e2e/tenant-handover.test.ts)',
};

/** A plausible request per RPC for the authentication cases (they are refused before it is read). */
function sampleRequest(rpc: string): JsonValue {
  const cases = PERMISSION[rpc];
  return Array.isArray(cases) && cases[0] ? cases[0].request : {};
}

interface Rpc {
  name: string;
  service: DescService;
  method: DescMethod;
}

function registeredRpcs(): Rpc[] {
  const router = registerServices(createConnectRouter(), h.server.ctx);
  return router.handlers.map((x) => ({ name: `${x.service.typeName}/${x.method.name}`, service: x.service, method: x.method }));
}

function withPlanId(request: JsonValue): JsonValue {
  return JSON.parse(JSON.stringify(request).replace('<alice-plan>', alicePlanId)) as JsonValue;
}

async function call(rpc: Rpc, token: string | undefined, request: JsonValue): Promise<unknown> {
  if (rpc.method.methodKind !== 'unary') throw new Error(`${rpc.name}: only unary RPCs are exercised here`);
  const client = h.client(rpc.service, token) as unknown as Record<string, (req: unknown) => Promise<unknown>>;
  return client[rpc.method.localName]!(fromJson(rpc.method.input, withPlanId(request)));
}

/** Calls, expects `code`, and checks that nothing changed: no OVH call, every table as it was. */
async function expectRefused(rpc: Rpc, token: string | undefined, request: JsonValue, code: Code): Promise<ConnectError> {
  const before = await snapshot(h.server.ctx.pool);
  h.sim.clearCalls();
  const err = await call(rpc, token, request).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `${rpc.name} should have been refused`).toBeInstanceOf(ConnectError);
  const ce = err as ConnectError;
  errorMessages.push(ce.message, ce.rawMessage);
  expect(Code[ce.code], `${rpc.name}: ${ce.rawMessage}`).toBe(Code[code]);
  expect(h.sim.calls().filter((c) => c.path !== '/auth/time')).toEqual([]);
  expect(await snapshot(h.server.ctx.pool)).toEqual(before);
  return ce;
}

beforeAll(async () => {
  const logger = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) });
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: 'manual', fieldType: 'A', target: '192.0.2.200' }], [OTHER]: [] },
    logger,
    // Every RPC is called with bad credentials here, far more than a client address's burst of
    // failed logins: the limiter (test/e2e/hostile.test.ts) is not what this file tests.
    env: { DNSPLANE_LOGIN_BURST: '100000' },
  });
  tokens['admin'] = await h.tenant('admin', [], { admin: true });
  tokens['alice'] = await h.tenant('alice', [ZONE]);
  tokens['limited'] = await h.tenant('limited', [ZONE], { suffixes: [`team.${ZONE}`] });
  tokens['outsider'] = await h.tenant('outsider', [OTHER]);
  tokens['ghost'] = await h.tenant('ghost', [ZONE]);
  tokens['wrong'] = `dnsp_${randomBytes(32).toString('base64url')}`;
  const adminClient = h.adminClient(tokens['admin']);
  await adminClient.disableTenant({ name: 'ghost' });
  // Through the API too: tokens shown once in an answer must not be logged either.
  tokens['created'] = (await adminClient.createTenant({ name: 'created', zones: [ZONE] })).token;
  tokens['rotated'] = (await adminClient.rotateTenantToken({ name: 'created' })).token;
  // State the refused calls could damage: both zones synced, a record, a pending plan of alice's.
  await h.zoneClient(tokens['alice']).apply({ source: { case: 'plan', value: fromJson(PlanRequestSchema, desiredReq(`a.${ZONE}`)) } });
  await h.zoneClient(tokens['outsider']).records({});
  alicePlanId = (await h.zoneClient(tokens['alice']).plan(fromJson(PlanRequestSchema, desiredReq(`b.${ZONE}`)))).plan!.id;
});

afterAll(async () => {
  await h?.close();
});

describe('every RPC of every service', () => {
  it('is covered by the permission table (a new RPC must get its cases)', () => {
    const names = registeredRpcs().map((r) => r.name);
    expect(names.length).toBeGreaterThanOrEqual(4 + 12);
    expect(names.filter((n) => PERMISSION[n] === undefined)).toEqual([]);
  });

  const credentials: Array<[string, () => string | undefined]> = [
    ['no token', () => undefined],
    ['a wrong token', () => tokens['wrong']],
    ['a disabled tenant', () => tokens['ghost']],
  ];

  it('refuses no token, a wrong token and a disabled tenant with Unauthenticated, changing nothing', async () => {
    let n = 0;
    for (const rpc of registeredRpcs()) {
      for (const [label, token] of credentials) {
        const err = await expectRefused(rpc, token(), sampleRequest(rpc.name), Code.Unauthenticated);
        expect(err.rawMessage, `${rpc.name} / ${label}`).toMatch(label === 'no token' ? /missing credentials/ : /invalid or disabled token/);
        n++;
      }
    }
    expect(n).toBe(registeredRpcs().length * 3);
  });

  it('refuses every admin RPC to a tenant without the admin scope, changing nothing', async () => {
    const adminRpcs = registeredRpcs().filter((r) => r.service.typeName === 'dnsplane.v1.AdminService');
    expect(adminRpcs.map((r) => r.method.name).sort()).toEqual(
      [
        'ApprovePlan',
        'AssignOwnership',
        'CreateOvhKey',
        'CreateTenant',
        'CreateTsigKey',
        'DeleteOvhKey',
        'DeleteTsigKey',
        'DisableTenant',
        'ExportZone',
        'GetPlan',
        'ImportTxtRegistry',
        'InvalidateZone',
        'ListJournal',
        'ListOvhDrafts',
        'ListOvhKeys',
        'ListOwnership',
        'ListPlans',
        'ListTenants',
        'ListProtectedNames',
        'ListTsigKeys',
        'ParseDesiredState',
        'PlanAs',
        'PlanRevert',
        'ProtectNames',
        'RotateOvhKey',
        'RotateTenantToken',
        'RotateTsigKey',
        'SetTenantMaxChangePercent',
        'SetTenantWithdrawAfter',
        'TrustSubject',
        'UnprotectNames',
        'UntrustSubject',
        'ListTrustedSubjects',
        'AddOvhAccount',
        'ListOvhAccounts',
        'RotateOvhAccount',
        'SetOvhAccountEnabled',
        'RemoveOvhAccount',
        'HandoverTenant',
        'RevertHandover',
        'DrainTenant',
        'RetireTenant',
        'ListOrphans',
      ].sort(),
    );
    for (const rpc of adminRpcs) {
      const err = await expectRefused(rpc, tokens['alice'], sampleRequest(rpc.name), Code.PermissionDenied);
      expect(err.rawMessage).toBe('this call needs the admin scope; tenant "alice" does not have it');
      // Even an empty request: the scope is checked before anything is read.
      await expectRefused(rpc, tokens['alice'], {}, Code.PermissionDenied);
    }
  });

  it("refuses zones, names and plans outside the tenant's grant with PermissionDenied, changing nothing", async () => {
    let n = 0;
    for (const rpc of registeredRpcs()) {
      const cases = PERMISSION[rpc.name];
      if (!Array.isArray(cases)) continue;
      for (const c of cases) {
        const err = await expectRefused(rpc, tokens[c.who], c.request, Code.PermissionDenied);
        expect(err.rawMessage, `${rpc.name}: ${c.what}`).toMatch(/not one of tenant|outside tenant|belongs to another tenant|zones|suffixes/);
        n++;
      }
    }
    expect(n).toBeGreaterThanOrEqual(12);
  });

  it('ListZones shows a tenant its own zones only', async () => {
    const names = async (who: Who) => (await h.zoneClient(tokens[who]).listZones({})).zones.map((z) => z.name);
    expect(await names('alice')).toEqual([ZONE]);
    expect(await names('outsider')).toEqual([OTHER]);
    expect(await names('admin')).toEqual([ZONE, OTHER]);
  });
});

describe('tokens', () => {
  it('are 32 random bytes or more, and the database holds only their sha-256', async () => {
    for (const name of ['admin', 'alice', 'created']) {
      const token = name === 'created' ? tokens['rotated']! : tokens[name]!;
      expect(Buffer.from(token.replace(/^dnsp_/, ''), 'base64url').length).toBeGreaterThanOrEqual(32);
      const { rows } = await h.server.ctx.pool.query<{ token_sha256: Buffer }>('SELECT token_sha256 FROM tenants WHERE name = $1', [name]);
      expect(rows[0]!.token_sha256.equals(createHash('sha256').update(token).digest())).toBe(true);
    }
  });

  it('a rotated token stops working at once; the new one works', async () => {
    const rpc = registeredRpcs().find((r) => r.name === 'dnsplane.v1.ZoneService/ListZones')!;
    const created = await h.adminClient(tokens['admin']).createTenant({ name: 'rotating', zones: [ZONE] });
    tokens['rotating-1'] = created.token;
    const rotated = await h.adminClient(tokens['admin']).rotateTenantToken({ name: 'rotating' });
    tokens['rotating-2'] = rotated.token;
    await expectRefused(rpc, created.token, {}, Code.Unauthenticated);
    expect((await h.zoneClient(rotated.token).listZones({})).zones.map((z) => z.name)).toEqual([ZONE]);
  });

  it('never appear in the logs, in errors, or in the database', async () => {
    const logs = logLines.join('');
    expect(logs).toMatch(/rpc rejected/); // the capture works
    expect(logs.length).toBeGreaterThan(1000);
    const errors = errorMessages.join('\n');
    const db = await dumpText(h.server.ctx.pool);
    const secrets = Object.values(tokens).filter((t) => t !== undefined);
    expect(secrets.length).toBeGreaterThanOrEqual(9);
    for (const token of secrets) {
      const secret = token.replace(/^dnsp_/, '');
      for (const [where, text] of [
        ['logs', logs],
        ['errors', errors],
        ['database', db],
      ] as const) {
        expect(text.includes(secret), `a token was found in the ${where}`).toBe(false);
      }
    }
  });
});
