/**
 * The simulated OVH API through the real @ovhcloud/node-ovh client over real HTTPS (REFERENCE.md 1 and 2).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OvhClient } from '@ovhcloud/node-ovh';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { clientFor, raw, rejection, trust } from '../helpers/sim-clients.js';

const ZONE = 'example.test';
let sim: OvhSimulator;
let client: OvhClient;

interface Rec {
  id: number;
  zone: string;
  subDomain: string;
  fieldType: string;
  target: string;
  ttl: number;
}

const get = (path: string, params?: Record<string, unknown>): Promise<unknown> => client.requestPromised('GET', path, params);
const post = (path: string, params?: Record<string, unknown>): Promise<unknown> => client.requestPromised('POST', path, params);
const put = (path: string, params?: Record<string, unknown>): Promise<unknown> => client.requestPromised('PUT', path, params);
const del = (path: string): Promise<unknown> => client.requestPromised('DELETE', path);
const create = async (body: Record<string, unknown>, zone = ZONE): Promise<Rec> => (await post(`/domain/zone/${zone}/record`, body)) as Rec;

beforeAll(async () => {
  sim = await OvhSimulator.start({
    zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }], 'other.test': [] },
  });
  trust(sim);
  client = clientFor(sim);
});

afterAll(async () => {
  await sim?.stop();
});

beforeEach(() => {
  sim.faults.clear();
});

describe('auth/time and signing', () => {
  it('answers /auth/time unsigned with a bare JSON integer', async () => {
    const res = await raw(sim, 'GET', '/1.0/auth/time');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^\d+$/);
    expect(Math.abs(Number(res.text) - Date.now() / 1000)).toBeLessThan(3);
    expect(res.headers['x-ovh-queryid']).toMatch(/^EU\.ext-1\./);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('accepts the signature over the portless URL (node client) and over host:port', async () => {
    const portless = await raw(sim, 'GET', `/1.0/domain/zone/${ZONE}/record?fieldType=A`, { sign: { url: 'portless' } });
    expect(portless.status).toBe(200);
    const withPort = await raw(sim, 'GET', `/1.0/domain/zone/${ZONE}/record?fieldType=A`, { sign: { url: 'withPort' } });
    expect(withPort.status).toBe(200);
    expect(JSON.parse(withPort.text)).toEqual(JSON.parse(portless.text));
  });

  it('signs the exact body bytes', async () => {
    const body = JSON.stringify({ fieldType: 'A', subDomain: 'signed', target: '192.0.2.9', ttl: 0 });
    const ok = await raw(sim, 'POST', `/1.0/domain/zone/${ZONE}/record`, { body, sign: {} });
    expect(ok.status).toBe(200);
    // The same JSON value with other bytes (a space) than the ones signed: refused.
    const res = await raw(sim, 'POST', `/1.0/domain/zone/${ZONE}/record`, { body: body.replace(':', ': '), sign: { body } });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ errorCode: 'INVALID_SIGNATURE' });
  });

  it('rejects a wrong secret with 400 INVALID_SIGNATURE', async () => {
    const bad = clientFor(sim, { appSecret: 'wrong-secret' });
    const err = await rejection(bad.requestPromised('GET', '/domain/zone'));
    expect(err).toEqual({ error: 400, message: 'Invalid signature' });
    const res = await raw(sim, 'GET', '/1.0/domain/zone', { sign: { secret: 'nope' } });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toEqual({ errorCode: 'INVALID_SIGNATURE', httpCode: '400 Bad Request', message: 'Invalid signature' });
    expect(res.headers['x-ovh-queryid']).toBeTruthy();
  });

  it('rejects an unknown application key with 403 INVALID_KEY', async () => {
    const bad = clientFor(sim, { appKey: 'unknownkey000000' });
    expect(await rejection(bad.requestPromised('GET', '/domain/zone'))).toEqual({ error: 403, message: 'This application key is invalid' });
    const res = await raw(sim, 'GET', '/1.0/domain/zone', {
      headers: { 'X-Ovh-Application': 'x', 'X-Ovh-Consumer': 'y', 'X-Ovh-Timestamp': '1', 'X-Ovh-Signature': '$1$0' },
    });
    expect(JSON.parse(res.text)).toEqual({ errorCode: 'INVALID_KEY', httpCode: '403 Forbidden', message: 'This application key is invalid' });
  });

  it('rejects an unknown consumer key with 403 INVALID_CREDENTIAL', async () => {
    const bad = clientFor(sim, { consumerKey: 'unknownconsumer' });
    expect(await rejection(bad.requestPromised('GET', '/domain/zone'))).toEqual({ error: 403, message: 'This credential is not valid' });
  });

  it('rejects an unsigned call with 403 NOT_CREDENTIAL', async () => {
    const res = await raw(sim, 'GET', '/1.0/domain/zone');
    expect(res.status).toBe(403);
    expect(JSON.parse(res.text)).toMatchObject({ errorCode: 'NOT_CREDENTIAL' });
  });

  it('rejects a timestamp more than 300 s away with 400 QUERY_TIME_OUT', async () => {
    const skewed = clientFor(sim, { apiTimeDiff: 1000 });
    const err = await rejection(skewed.requestPromised('GET', '/domain/zone'));
    expect(err.error).toBe(400);
    const res = await raw(sim, 'GET', '/1.0/domain/zone', { sign: { timestamp: Math.round(Date.now() / 1000) - 301 } });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ errorCode: 'QUERY_TIME_OUT', httpCode: '400 Bad Request' });
    const inWindow = await raw(sim, 'GET', '/1.0/domain/zone', { sign: { timestamp: Math.round(Date.now() / 1000) - 250 } });
    expect(inWindow.status).toBe(200);
  });

  it('serves a drifted clock that the client learns from /auth/time', async () => {
    const drifted = await OvhSimulator.start({ timeDriftSeconds: 5000, zones: { 'd.test': [] } });
    try {
      trust(drifted);
      const time = Number((await raw(drifted, 'GET', '/1.0/auth/time')).text);
      expect(time - Date.now() / 1000).toBeGreaterThan(4990);
      const c = clientFor(drifted);
      expect(await c.requestPromised('GET', '/domain/zone')).toEqual(['d.test']);
      expect(c.apiTimeDiff).toBeGreaterThan(4990);
    } finally {
      await drifted.stop();
    }
  });
});

describe('zones', () => {
  it('lists zones and describes one', async () => {
    expect(await get('/domain/zone')).toEqual([ZONE, 'other.test']);
    const zone = (await get(`/domain/zone/${ZONE}`)) as Record<string, unknown>;
    expect(zone).toMatchObject({ name: ZONE, nameServers: ['dns1.sim.test', 'ns1.sim.test'], dnssecSupported: true, hasDnsAnycast: false });
    expect(typeof zone.lastUpdate).toBe('string');
  });

  it('answers 404 "This service does not exist" for an unknown zone, on every zone route', async () => {
    for (const path of ['', '/record', '/record/5000000001', '/soa', '/export', '/status']) {
      expect(await rejection(get(`/domain/zone/nope.test${path}`))).toEqual({ error: 404, message: 'This service does not exist' });
    }
    const res = await raw(sim, 'GET', '/1.0/domain/zone/nope.test', { sign: {} });
    expect(JSON.parse(res.text)).toEqual({ class: 'Client::NotFound', message: 'This service does not exist' });
    expect(await rejection(post('/domain/zone/nope.test/refresh'))).toMatchObject({ error: 404 });
  });

  it('answers 404 with an OVH body for an unknown route, 405 for a known route with another method', async () => {
    const res = await raw(sim, 'GET', '/1.0/domain/nothing', { sign: {} });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toMatchObject({ class: 'Client::NotFound' });
    expect(res.headers['x-ovh-queryid']).toBeTruthy();
    const outside = await raw(sim, 'GET', '/2.0/domain/zone');
    expect(outside.status).toBe(404);
    expect(await rejection(client.requestPromised('DELETE', `/domain/zone/${ZONE}/refresh`))).toMatchObject({ error: 405 });
  });
});

describe('records', () => {
  it('creates, reads, lists, updates and deletes a record (full CRUD)', async () => {
    const created = await create({ fieldType: 'A', subDomain: 'crud', target: '192.0.2.10', ttl: 300 });
    expect(created).toEqual({ id: expect.any(Number), zone: ZONE, subDomain: 'crud', fieldType: 'A', target: '192.0.2.10', ttl: 300 });
    expect(created.id).toBeGreaterThan(2 ** 32);
    expect(Number.isSafeInteger(created.id)).toBe(true);

    expect(await get(`/domain/zone/${ZONE}/record/${created.id}`)).toEqual(created);
    const ids = (await get(`/domain/zone/${ZONE}/record`)) as number[];
    expect(ids).toContain(created.id);
    expect(ids.every((id) => typeof id === 'number' && id > 2 ** 32)).toBe(true);
    expect(await get(`/domain/zone/${ZONE}/record`, { fieldType: 'A', subDomain: 'crud' })).toEqual([created.id]);

    expect(await put(`/domain/zone/${ZONE}/record/${created.id}`, { target: '192.0.2.11', ttl: 600 })).toBeNull();
    expect(await get(`/domain/zone/${ZONE}/record/${created.id}`)).toMatchObject({ target: '192.0.2.11', ttl: 600, subDomain: 'crud' });
    expect(await put(`/domain/zone/${ZONE}/record/${created.id}`, { subDomain: 'Crud2' })).toBeNull();
    expect(await get(`/domain/zone/${ZONE}/record/${created.id}`)).toMatchObject({ subDomain: 'crud2' });

    expect(await del(`/domain/zone/${ZONE}/record/${created.id}`)).toBeNull();
    expect(await rejection(get(`/domain/zone/${ZONE}/record/${created.id}`))).toEqual({
      error: 404,
      message: `The requested object (id = ${created.id}) does not exist`,
    });
    expect(await rejection(del(`/domain/zone/${ZONE}/record/${created.id}`))).toMatchObject({ error: 404 });
  });

  it('answers PUT and DELETE with 200 and no body, refresh with 204 and no body', async () => {
    const rec = await create({ fieldType: 'A', subDomain: 'rawput', target: '192.0.2.12' });
    const body = JSON.stringify({ ttl: 120 });
    const putRes = await raw(sim, 'PUT', `/1.0/domain/zone/${ZONE}/record/${rec.id}`, { body, sign: {} });
    expect(putRes.status).toBe(200);
    expect(putRes.text).toBe('');
    const delRes = await raw(sim, 'DELETE', `/1.0/domain/zone/${ZONE}/record/${rec.id}`, { sign: {} });
    expect(delRes.status).toBe(200);
    expect(delRes.text).toBe('');
    const refresh = await raw(sim, 'POST', `/1.0/domain/zone/${ZONE}/refresh`, { sign: {} });
    expect(refresh.status).toBe(204);
    expect(refresh.text).toBe('');
    expect(refresh.headers['x-ovh-queryid']).toBeTruthy();
  });

  it('answers the unknown-record 404 with the OVH body', async () => {
    const res = await raw(sim, 'GET', `/1.0/domain/zone/${ZONE}/record/123`, { sign: {} });
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toEqual({ class: 'Client::NotFound', message: 'The requested object (id = 123) does not exist' });
    expect(await rejection(get(`/domain/zone/${ZONE}/record/abc`))).toMatchObject({ error: 400 });
  });

  it('filters the id list by fieldType and case-insensitive subDomain', async () => {
    const a = await create({ fieldType: 'A', subDomain: 'Filter', target: '192.0.2.20' });
    const t = await create({ fieldType: 'TXT', subDomain: 'filter', target: 'x' });
    expect(await get(`/domain/zone/${ZONE}/record`, { subDomain: 'FILTER' })).toEqual([a.id, t.id]);
    expect(await get(`/domain/zone/${ZONE}/record`, { subDomain: 'filter', fieldType: 'TXT' })).toEqual([t.id]);
    expect(a.subDomain).toBe('filter');
    const apex = (await get(`/domain/zone/${ZONE}/record`, { fieldType: 'NS' })) as number[];
    expect(apex).toHaveLength(2); // the zone's apex NS records, as at OVH
    expect(await rejection(get(`/domain/zone/${ZONE}/record`, { fieldType: 'BOGUS' }))).toMatchObject({ error: 400 });
  });

  it('allows duplicates of (subDomain, fieldType, target)', async () => {
    const one = await create({ fieldType: 'A', subDomain: 'dup', target: '192.0.2.30' });
    const two = await create({ fieldType: 'A', subDomain: 'dup', target: '192.0.2.30' });
    expect(two.id).not.toBe(one.id);
    expect(await get(`/domain/zone/${ZONE}/record`, { subDomain: 'dup' })).toEqual([one.id, two.id]);
  });

  it('refuses PUT of fieldType (read-only)', async () => {
    const rec = await create({ fieldType: 'A', subDomain: 'ro', target: '192.0.2.31' });
    const res = await raw(sim, 'PUT', `/1.0/domain/zone/${ZONE}/record/${rec.id}`, { body: JSON.stringify({ fieldType: 'AAAA', target: '::1' }), sign: {} });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toEqual({ class: 'Client::BadRequest', message: 'Try to alter read-only properties: fieldType' });
    expect(await rejection(put(`/domain/zone/${ZONE}/record/${rec.id}`, { fieldType: 'AAAA' }))).toEqual({
      error: 400,
      message: 'Try to alter read-only properties: fieldType',
    });
    expect(sim.draftRecords(ZONE).find((r) => r.id === String(rec.id))).toMatchObject({ fieldType: 'A', target: '192.0.2.31' });
  });

  it('validates field types, targets and bodies', async () => {
    expect(await rejection(create({ fieldType: 'BOGUS', subDomain: 'x', target: 'y' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'A', subDomain: 'x', target: '2001:db8::1' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'AAAA', subDomain: 'x', target: '192.0.2.1' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'MX', subDomain: 'x', target: 'mail.example.test.' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'SRV', subDomain: '_x._tcp', target: '0 5 host.' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'A', subDomain: 'x' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'A', subDomain: 'a..b', target: '192.0.2.1' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'A', subDomain: 'x', target: '192.0.2.1', color: 'red' }))).toMatchObject({ error: 400 });
    const notJson = await raw(sim, 'POST', `/1.0/domain/zone/${ZONE}/record`, { body: '{nope', sign: {} });
    expect(notJson.status).toBe(400);
    expect(JSON.parse(notJson.text)).toMatchObject({ class: 'Client::BadRequest' });
    for (const fieldType of ['CAA', 'NS', 'PTR', 'SPF', 'DKIM', 'DMARC', 'HTTPS', 'SVCB', 'TLSA', 'LOC']) {
      const target =
        {
          CAA: '0 issue "ca.example"',
          NS: 'host.example.',
          PTR: 'host.example.',
          SPF: 'v=spf1 -all',
          DKIM: 'v=DKIM1;p=abc',
          DMARC: 'v=DMARC1;p=none',
          TLSA: '3 1 1 abcd',
          LOC: '52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m',
        }[fieldType] ?? 'v=x 1 2 3';
      const subDomain = fieldType === 'DMARC' ? '_dmarc' : `ft-${fieldType.toLowerCase()}`;
      expect((await create({ fieldType, subDomain, target })).fieldType).toBe(fieldType);
    }
  });

  it('applies the TTL rules: 0 kept, 1..59 -> 60, negative refused', async () => {
    expect((await create({ fieldType: 'A', subDomain: 'ttl0', target: '192.0.2.40', ttl: 0 })).ttl).toBe(0);
    expect((await create({ fieldType: 'A', subDomain: 'ttl-default', target: '192.0.2.40' })).ttl).toBe(0);
    expect((await create({ fieldType: 'A', subDomain: 'ttl1', target: '192.0.2.40', ttl: 1 })).ttl).toBe(60);
    expect((await create({ fieldType: 'A', subDomain: 'ttl59', target: '192.0.2.40', ttl: 59 })).ttl).toBe(60);
    const r60 = await create({ fieldType: 'A', subDomain: 'ttl60', target: '192.0.2.40', ttl: 60 });
    expect(r60.ttl).toBe(60);
    expect(await rejection(create({ fieldType: 'A', subDomain: 'ttlneg', target: '192.0.2.40', ttl: -1 }))).toMatchObject({ error: 400 });
    await put(`/domain/zone/${ZONE}/record/${r60.id}`, { ttl: 30 });
    expect(await get(`/domain/zone/${ZONE}/record/${r60.id}`)).toMatchObject({ ttl: 60 });
    expect(await rejection(put(`/domain/zone/${ZONE}/record/${r60.id}`, { ttl: -5 }))).toMatchObject({ error: 400 });
  });

  it('refuses underscores in A/AAAA/CNAME names, allows them for SRV/TXT', async () => {
    for (const [fieldType, target] of [
      ['A', '192.0.2.50'],
      ['AAAA', '2001:db8::50'],
      ['CNAME', 'www'],
    ] as const) {
      expect(await rejection(create({ fieldType, subDomain: 'bad_name', target }))).toEqual({
        error: 400,
        message: 'Invalid domain name, underscore not allowed',
      });
    }
    expect((await create({ fieldType: 'SRV', subDomain: '_sip._tcp', target: '0 5 5060 sip.example.test.' })).subDomain).toBe('_sip._tcp');
    expect((await create({ fieldType: 'TXT', subDomain: '_acme-challenge', target: 'token' })).subDomain).toBe('_acme-challenge');
    const a = await create({ fieldType: 'A', subDomain: 'good', target: '192.0.2.51' });
    expect(await rejection(put(`/domain/zone/${ZONE}/record/${a.id}`, { subDomain: 'now_bad' }))).toMatchObject({ error: 400 });
  });

  it('quotes TXT targets in answers and splits them at 255 characters', async () => {
    const plain = await create({ fieldType: 'TXT', subDomain: 'txt1', target: 'hello world' });
    expect(plain.target).toBe('"hello world"');
    expect(sim.draftRecords(ZONE).find((r) => r.id === String(plain.id))?.target).toBe('hello world');

    const quoted = await create({ fieldType: 'TXT', subDomain: 'txt2', target: '"already quoted"' });
    expect(quoted.target).toBe('"already quoted"');
    expect(sim.draftRecords(ZONE).find((r) => r.id === String(quoted.id))?.target).toBe('already quoted');

    const long = 'a'.repeat(255) + 'b'.repeat(255) + 'c'.repeat(10);
    const big = await create({ fieldType: 'TXT', subDomain: 'txt3', target: long });
    expect(big.target).toBe(`"${'a'.repeat(255)}" "${'b'.repeat(255)}" "${'c'.repeat(10)}"`);
    expect(await get(`/domain/zone/${ZONE}/record/${big.id}`)).toMatchObject({ target: big.target });

    expect(await rejection(create({ fieldType: 'TXT', subDomain: 'txt4', target: '' }))).toMatchObject({ error: 400 });
    expect(await rejection(create({ fieldType: 'TXT', subDomain: 'txt4', target: '""' }))).toMatchObject({ error: 400 });

    await put(`/domain/zone/${ZONE}/record/${plain.id}`, { target: '"changed"' });
    expect(await get(`/domain/zone/${ZONE}/record/${plain.id}`)).toMatchObject({ target: '"changed"' });
  });

  it('keeps TXT unquoted in answers when configured for the older API', async () => {
    const old = await OvhSimulator.start({ behavior: { quoteTxtInAnswers: false, refreshStatus: 200, apexNsRecords: false }, zones: { 'old.test': [] } });
    try {
      trust(old);
      const c = clientFor(old);
      const rec = (await c.requestPromised('POST', '/domain/zone/old.test/record', { fieldType: 'TXT', subDomain: 'a', target: 'v' })) as Rec;
      expect(rec.target).toBe('v');
      expect(await c.requestPromised('GET', '/domain/zone/old.test/record')).toEqual([rec.id]);
      const refresh = await raw(old, 'POST', '/1.0/domain/zone/old.test/refresh', { sign: {} });
      expect(refresh.status).toBe(200);
      expect(refresh.text).toBe('null');
    } finally {
      await old.stop();
    }
  });
});

describe('draft and published', () => {
  it('publishes on refresh (the client resolves null) and bumps the SOA serial', async () => {
    const z = 'other.test';
    const serial0 = ((await get(`/domain/zone/${z}/soa`)) as { serial: number }).serial;
    expect(serial0).toBe(sim.soaSerial(z));
    expect(await get(`/domain/zone/${z}/status`)).toEqual({ isDeployed: true, errors: [], warnings: [] });

    const rec = await create({ fieldType: 'A', subDomain: 'new', target: '192.0.2.60' }, z);
    expect(await get(`/domain/zone/${z}/status`)).toEqual({ isDeployed: false, errors: [], warnings: [] });
    expect(sim.draftRecords(z).map((r) => r.id)).toContain(String(rec.id));
    expect(sim.publishedRecords(z).map((r) => r.id)).not.toContain(String(rec.id));
    expect(await get(`/domain/zone/${z}/export`)).toContain('new');

    expect(await post(`/domain/zone/${z}/refresh`)).toBeNull();
    const soa = (await get(`/domain/zone/${z}/soa`)) as Record<string, unknown>;
    expect(soa).toEqual({
      email: expect.any(String),
      expire: expect.any(Number),
      nxDomainTtl: expect.any(Number),
      refresh: expect.any(Number),
      serial: expect.any(Number),
      server: 'dns1.sim.test',
      ttl: expect.any(Number),
    });
    expect(soa.serial as number).toBeGreaterThan(serial0);
    expect(sim.publishedRecords(z).map((r) => r.id)).toContain(String(rec.id));
    expect(await get(`/domain/zone/${z}/status`)).toMatchObject({ isDeployed: true });

    await post(`/domain/zone/${z}/refresh`);
    expect(sim.soaSerial(z)).toBeGreaterThan(soa.serial as number);

    await del(`/domain/zone/${z}/record/${rec.id}`);
    expect(await get(`/domain/zone/${z}/status`)).toMatchObject({ isDeployed: false });
    expect(sim.publishedRecords(z).map((r) => r.id)).toContain(String(rec.id));
  });

  it('exports the draft as a BIND zone file without ids', async () => {
    const z = 'export.test';
    sim.addZone(z, [{ subDomain: '', fieldType: 'MX', target: '10 mail', ttl: 0 }]);
    const txt = await create({ fieldType: 'TXT', subDomain: 'note', target: 'v=spf1 -all', ttl: 120 }, z);
    const text = await get(`/domain/zone/${z}/export`);
    expect(typeof text).toBe('string');
    const zoneFile = text as string;
    expect(zoneFile).toMatch(/^\$TTL 3600\n/);
    expect(zoneFile).toMatch(new RegExp(`IN SOA dns1\\.sim\\.test\\. tech\\.sim\\.test\\. \\(${sim.soaSerial(z)} `));
    expect(zoneFile).toMatch(/@\s+IN NS\s+dns1\.sim\.test\./);
    expect(zoneFile).toMatch(/@\s+IN MX\s+10 mail\n/);
    expect(zoneFile).toMatch(/note\s+120 IN TXT\s+"v=spf1 -all"\n/);
    expect(zoneFile).not.toContain(String(txt.id));
  });

  it('edits the state directly without logging calls', async () => {
    const z = 'direct.test';
    sim.clearCalls();
    sim.addZone(z);
    const rec = sim.addRecord(z, { subDomain: 'Hand', fieldType: 'A', target: '192.0.2.70' });
    expect(rec).toMatchObject({ zone: z, subDomain: 'hand', ttl: 0 });
    expect(Number(rec.id)).toBeGreaterThan(2 ** 32);
    sim.updateRecord(z, rec.id, { ttl: 10 });
    expect(sim.draftRecords(z).find((r) => r.id === rec.id)?.ttl).toBe(60);
    expect(sim.isDeployed(z)).toBe(false);
    const serial = sim.soaSerial(z);
    sim.publish(z);
    expect(sim.soaSerial(z)).toBeGreaterThan(serial);
    expect(sim.publishedRecords(z).find((r) => r.id === rec.id)).toBeDefined();
    sim.deleteRecord(z, rec.id);
    expect(sim.draftRecords(z).find((r) => r.id === rec.id)).toBeUndefined();
    expect(() => sim.addRecord(z, { subDomain: 'x_y', fieldType: 'A', target: '192.0.2.1' })).toThrow(/underscore/);
    expect(() => sim.draftRecords('unknown.test')).toThrow();
    expect(sim.calls()).toEqual([]);
    expect(await get('/domain/zone')).toContain(z);
  });
});

describe('call log', () => {
  it('records every call in order, with query, body, status and query id', async () => {
    const fresh = clientFor(sim);
    sim.clearCalls();
    const rec = (await fresh.requestPromised('POST', `/domain/zone/${ZONE}/record`, { fieldType: 'A', subDomain: 'log', target: '192.0.2.80' })) as Rec;
    await fresh.requestPromised('GET', `/domain/zone/${ZONE}/record`, { subDomain: 'log' });
    await rejection(fresh.requestPromised('GET', '/domain/zone/nope.test'));
    await rejection(clientFor(sim, { appSecret: 'bad', apiTimeDiff: 1 }).requestPromised('DELETE', `/domain/zone/${ZONE}/record/${rec.id}`));
    const calls = sim.calls();
    expect(calls.map((c) => [c.seq, c.method, c.path, c.status])).toEqual([
      [calls[0]?.seq, 'GET', '/auth/time', 200],
      [(calls[0]?.seq ?? 0) + 1, 'POST', `/domain/zone/${ZONE}/record`, 200],
      [(calls[0]?.seq ?? 0) + 2, 'GET', `/domain/zone/${ZONE}/record`, 200],
      [(calls[0]?.seq ?? 0) + 3, 'GET', '/domain/zone/nope.test', 404],
      [(calls[0]?.seq ?? 0) + 4, 'DELETE', `/domain/zone/${ZONE}/record/${rec.id}`, 400],
    ]);
    expect(calls[1]?.body).toEqual({ fieldType: 'A', subDomain: 'log', target: '192.0.2.80' });
    expect(calls[2]?.query).toEqual({ subDomain: 'log' });
    expect(new Set(calls.map((c) => c.queryId)).size).toBe(calls.length);
    expect(calls.every((c) => c.at <= Date.now() && c.at > Date.now() - 10_000)).toBe(true);
    expect(sim.writes().map((c) => c.method)).toEqual(['POST', 'DELETE']);
    sim.clearCalls();
    expect(sim.calls()).toEqual([]);
  });

  it('sends the logged query id in the X-Ovh-Queryid header', async () => {
    sim.clearCalls();
    const res = await raw(sim, 'GET', '/1.0/domain/zone', { sign: {} });
    expect(res.headers['x-ovh-queryid']).toBe(sim.calls()[0]?.queryId);
  });

  it('never logs the application secret', async () => {
    const lines: string[] = [];
    const logged = await OvhSimulator.start({ zones: { 'log.test': [] }, log: (msg, fields) => lines.push(JSON.stringify([msg, fields])) });
    try {
      trust(logged);
      await clientFor(logged).requestPromised('GET', '/domain/zone');
      await rejection(clientFor(logged, { appSecret: 'other' }).requestPromised('GET', '/domain/zone'));
      expect(lines.length).toBeGreaterThan(2);
      expect(lines.join('\n')).not.toContain(logged.credentials.applicationSecret);
    } finally {
      await logged.stop();
    }
  });
});
