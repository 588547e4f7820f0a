/**
 * @ovhcloud/node-ovh, the real client, against the OVH API dnsplane serves — reached over HTTPS
 * through a TLS front, as behind an ingress (node-ovh speaks only HTTPS and signs `https://` + its host
 * without the port): every route, every error shape node-ovh shows, a bad signature, a skewed clock, an
 * unknown application, a wrong or expired consumer key. Reads cost no OVH call; writes are staged until
 * the refresh, which publishes them as one apply; a staged id keeps working after it.
 */
import { randomBytes } from 'node:crypto';
import ovh, { type OvhClient, type OvhClientParams } from '@ovhcloud/node-ovh';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOvhKey, type IssuedOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { setTenantDisabled } from '../../src/core/tenants/tenants.js';
import { callLines } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { rejection } from '../helpers/sim-clients.js';
import { startTlsFront, type TlsFront } from '../helpers/tls-front.js';

const ZONE = 'example.test';
const REC = `/domain/zone/${ZONE}/record`;

let h: Harness;
let front: TlsFront;
let alice: IssuedOvhKey;
let bob: IssuedOvhKey;

function client(key: IssuedOvhKey, overrides: Partial<OvhClientParams> = {}): OvhClient {
  return ovh({
    host: '127.0.0.1',
    port: front.port,
    basePath: '/ovh/1.0',
    appKey: key.key.applicationKey,
    appSecret: key.applicationSecret,
    consumerKey: key.consumerKey,
    ...overrides,
  });
}

const issue = (tenant: string, expiresInMs?: number) =>
  createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant, expiresInMs });

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 },
        { subDomain: 'hand', fieldType: 'A', target: '192.0.2.9', ttl: 300 },
      ],
      'other.test': [],
    },
    env: { DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64') },
  });
  const aliceToken = await h.tenant('alice', [ZONE]);
  const bobToken = await h.tenant('bob', [ZONE, 'other.test']);
  // alice owns www (A); bob owns api (A): both made through Apply.
  const ep = (dnsName: string, target: string) => ({ dnsName, recordType: 'A', targets: [target], ttl: 300 });
  const applyAs = (token: string, e: ReturnType<typeof ep>) =>
    h
      .zoneClient(token)
      .apply({ source: { case: 'plan', value: { input: { case: 'changes', value: { create: [e], updateOld: [], updateNew: [], delete: [] } } } } });
  await h.server.ctx.pool.query(
    `INSERT INTO ownership (zone, dns_name, record_type, target, tenant_id) SELECT '${ZONE}', 'www.${ZONE}', 'A', '', id FROM tenants WHERE name = 'alice'`,
  );
  await applyAs(bobToken, ep(`api.${ZONE}`, '192.0.2.7'));
  await h.zoneClient(aliceToken).records({ zones: [ZONE] });
  alice = await issue('alice');
  bob = await issue('bob');
  front = await startTlsFront(h.server);
});

afterAll(async () => {
  await front?.close();
  await h?.close();
});

describe('node-ovh against the served OVH API', () => {
  it('GET /auth/time, the zones, a zone, its SOA and status: answered from the cache, no OVH call', async () => {
    h.sim.clearCalls();
    const c = client(alice);
    const time = (await c.requestPromised('GET', '/auth/time')) as number;
    expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(5);
    expect(await c.requestPromised('GET', '/domain/zone')).toEqual([ZONE]);
    expect(await client(bob).requestPromised('GET', '/domain/zone')).toEqual(['example.test', 'other.test']);
    const zone = (await c.requestPromised('GET', `/domain/zone/${ZONE}`)) as Record<string, unknown>;
    expect(zone).toMatchObject({ name: ZONE, nameServers: ['dns1.sim.test', 'ns1.sim.test'], dnssecSupported: true, hasDnsAnycast: false });
    const soa = (await c.requestPromised('GET', `/domain/zone/${ZONE}/soa`)) as Record<string, unknown>;
    expect(Object.keys(soa).sort()).toEqual(['email', 'expire', 'nxDomainTtl', 'refresh', 'serial', 'server', 'ttl']);
    expect(soa['server']).toBe('dns1.sim.test.');
    expect(await c.requestPromised('GET', `/domain/zone/${ZONE}/status`)).toEqual({ errors: [], isDeployed: true, warnings: [] });
    // Only its own records: www (its own), not api (bob's) nor hand (nobody's).
    const ids = (await c.requestPromised('GET', REC)) as number[];
    expect(ids).toHaveLength(1);
    expect(await c.requestPromised('GET', `${REC}/${ids[0]}`)).toMatchObject({
      id: ids[0],
      zone: ZONE,
      subDomain: 'www',
      fieldType: 'A',
      target: '192.0.2.1',
      ttl: 300,
    });
    expect(await c.requestPromised('GET', REC, { fieldType: 'A', subDomain: 'WWW' })).toEqual(ids);
    expect(await c.requestPromised('GET', REC, { fieldType: 'TXT' })).toEqual([]);
    expect(callLines(h.sim)).toEqual([]);
  });

  it('POST, PUT, DELETE are staged (no OVH call, visible to the tenant only); the refresh publishes them as one apply; the staged id keeps working', async () => {
    const c = client(alice);
    h.sim.clearCalls();
    const created = (await c.requestPromised('POST', REC, { fieldType: 'TXT', subDomain: 'note', target: 'hello', ttl: 120 })) as { id: number };
    expect(created).toMatchObject({ fieldType: 'TXT', subDomain: 'note', target: '"hello"', ttl: 120, zone: ZONE });
    expect(created.id).toBeGreaterThan(4e15);
    expect(created.id).toBeLessThan(2 ** 53);
    expect(await c.requestPromised('GET', REC, { fieldType: 'TXT', subDomain: 'note' })).toEqual([created.id]);
    expect(await client(bob).requestPromised('GET', REC, { subDomain: 'note' })).toEqual([]);
    expect(await c.requestPromised('PUT', `${REC}/${created.id}`, { target: 'hello again' })).toBeNull();
    expect(await c.requestPromised('GET', `${REC}/${created.id}`)).toMatchObject({ target: '"hello again"', ttl: 120 });
    const www = ((await c.requestPromised('GET', REC, { subDomain: 'www' })) as number[])[0]!;
    expect(await c.requestPromised('PUT', `${REC}/${www}`, { target: '192.0.2.2' })).toBeNull();
    expect(callLines(h.sim)).toEqual([]);
    expect(h.sim.publishedRecords(ZONE).find((r) => r.subDomain === 'www')?.target).toBe('192.0.2.1');

    expect(await c.requestPromised('POST', `/domain/zone/${ZONE}/refresh`)).toBeNull();
    expect(callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'))).toEqual([
      `PUT ${REC}/ID`,
      `POST ${REC}`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    expect(
      h.sim
        .publishedRecords(ZONE)
        .filter((r) => ['www', 'note'].includes(r.subDomain))
        .map((r) => `${r.subDomain} ${r.target} ${r.ttl}`)
        .sort(),
    ).toEqual(['note hello again 120', 'www 192.0.2.2 300']);
    // The id the POST answered names the record it became.
    expect(await c.requestPromised('GET', `${REC}/${created.id}`)).toMatchObject({ id: created.id, subDomain: 'note', target: '"hello again"' });
    h.sim.clearCalls();
    expect(await c.requestPromised('DELETE', `${REC}/${created.id}`)).toBeNull();
    expect(await c.requestPromised('GET', REC, { subDomain: 'note' })).toEqual([]);
    expect(await c.requestPromised('POST', `/domain/zone/${ZONE}/refresh`)).toBeNull();
    expect(callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'))).toEqual([`DELETE ${REC}/ID`, `POST /domain/zone/${ZONE}/refresh`]);
    // A refresh with nothing staged sends nothing.
    h.sim.clearCalls();
    expect(await c.requestPromised('POST', `/domain/zone/${ZONE}/refresh`)).toBeNull();
    expect(callLines(h.sim)).toEqual([]);
  });

  it("error shapes as node-ovh shows them: another tenant's set, nobody's, a record of another, an unknown record or zone, bad input", async () => {
    const c = client(alice);
    h.sim.clearCalls();
    expect(await rejection(c.requestPromised('POST', REC, { fieldType: 'A', subDomain: 'api', target: '192.0.2.8', ttl: 60 }))).toEqual({
      error: 403,
      message: 'This call has not been granted (api.example.test A is owned by tenant "bob")',
    });
    expect(await rejection(c.requestPromised('POST', REC, { fieldType: 'A', subDomain: 'hand', target: '192.0.2.8' }))).toEqual({
      error: 403,
      message: 'This call has not been granted (hand.example.test A: exists in OVH without an owner; an admin must assign it)',
    });
    const bobIds = (await client(bob).requestPromised('GET', REC)) as number[];
    expect(await rejection(c.requestPromised('DELETE', `${REC}/${bobIds[0]}`))).toMatchObject({ error: 403 });
    expect(await rejection(c.requestPromised('GET', `${REC}/${bobIds[0]}`))).toMatchObject({ error: 403 });
    expect(await rejection(c.requestPromised('GET', `${REC}/12345`))).toEqual({ error: 404, message: 'The requested object (id = 12345) does not exist' });
    expect(await rejection(c.requestPromised('GET', '/domain/zone/other.test'))).toEqual({ error: 404, message: 'This service does not exist' });
    expect(await rejection(c.requestPromised('GET', '/domain/zone/nowhere.test/record'))).toEqual({ error: 404, message: 'This service does not exist' });
    expect(await rejection(c.requestPromised('POST', REC, { fieldType: 'BOGUS', subDomain: 'x', target: 'y' }))).toEqual({
      error: 400,
      message: '[fieldType] Given data (BOGUS) does not belong to the NamedResolutionFieldTypeEnum enumeration',
    });
    expect(await rejection(c.requestPromised('POST', REC, { fieldType: 'A', subDomain: 'x', target: 'not-an-ip' }))).toEqual({
      error: 400,
      message: 'Invalid IPv4 address: not-an-ip',
    });
    expect(await rejection(c.requestPromised('POST', REC, { fieldType: 'SVCB', subDomain: 'x', target: '1 . alpn=h2' }))).toMatchObject({
      error: 400,
      message: '[fieldType] Given data (SVCB) does not belong to the NamedResolutionFieldTypeEnum enumeration',
    });
    expect(await rejection(c.requestPromised('PUT', `${REC}/${bobIds[0]}`, { fieldType: 'TXT' }))).toEqual({
      error: 400,
      message: 'Try to alter read-only properties: fieldType',
    });
    expect(await rejection(c.requestPromised('GET', '/domain/zone/example.test/nope'))).toEqual({ error: 404, message: 'Got an invalid (or empty) URL' });
    expect(await rejection(c.requestPromised('DELETE', `/domain/zone/${ZONE}/soa`))).toEqual({ error: 405, message: 'Method not allowed' });
    expect(callLines(h.sim)).toEqual([]);
    expect((await h.server.ctx.pool.query('SELECT count(*)::int AS n FROM ovh_drafts')).rows[0].n).toBe(0);
  });

  it("a bad signature, a skewed clock, an unknown application, a wrong, expired or disabled consumer key: OVH's answers", async () => {
    expect(await rejection(client(alice, { appSecret: 'x'.repeat(32) }).requestPromised('GET', '/domain/zone'))).toEqual({
      error: 400,
      message: 'Invalid signature',
    });
    // node-ovh takes its offset from the server's clock unless given one: an hour off.
    expect(await rejection(client(alice, { apiTimeDiff: 3600 }).requestPromised('GET', '/domain/zone'))).toEqual({ error: 400, message: 'Query out of time' });
    expect(await rejection(client(alice, { appKey: 'A'.repeat(16) }).requestPromised('GET', '/domain/zone'))).toEqual({
      error: 403,
      message: 'This application key is invalid',
    });
    expect(await rejection(client(alice, { consumerKey: bob.consumerKey }).requestPromised('GET', '/domain/zone'))).toEqual({
      error: 403,
      message: 'This credential does not exist',
    });
    expect(await rejection(client(alice, { consumerKey: 'c'.repeat(32) }).requestPromised('GET', '/domain/zone'))).toEqual({
      error: 403,
      message: 'This credential does not exist',
    });
    const shortLived = await issue('alice', 1000);
    await h.server.ctx.pool.query("UPDATE ovh_keys SET expires_at = now() - interval '1 second' WHERE application_key = $1", [shortLived.key.applicationKey]);
    h.server.ctx.ovhKeys?.forget('alice');
    expect(await rejection(client(shortLived).requestPromised('GET', '/domain/zone'))).toEqual({ error: 403, message: 'This credential is not valid' });
    // As `dnsplane tenant disable` does from another process: this replica hears it by NOTIFY, which
    // a loaded machine may deliver after the next call; forgotten here at once, as core/admin/ does.
    await setTenantDisabled(h.server.ctx.pool, 'bob', true);
    h.server.ctx.ovhKeys?.forget('bob');
    expect(await rejection(client(bob).requestPromised('GET', '/domain/zone'))).toEqual({ error: 403, message: 'This credential is not valid' });
    await setTenantDisabled(h.server.ctx.pool, 'bob', false);
    h.server.ctx.ovhKeys?.forget('bob');
    expect(await client(bob).requestPromised('GET', '/domain/zone')).toEqual(['example.test', 'other.test']);
    // node-ovh never signs a path with /auth in it: OVH (and dnsplane) answer such a call as unsigned.
    expect(await rejection(client(alice).requestPromised('GET', '/auth/details'))).toEqual({ error: 403, message: 'You must login first' });
  });
});
