/**
 * The served OVH API on the wire, call by call as go-ovh sends them (the endpoint URL signed, port
 * included): OVH's exact bodies and an X-Ovh-Queryid on every answer; the URL forms a signature may
 * cover and nothing looser; the calls clients make on start (/auth/details, /auth/currentCredential,
 * /me); the expanded list mode; and bad input — unsigned, a wrong consumer key, a body over the limit,
 * unknown routes, methods OVH does not offer — answered as OVH answers it, with nothing written.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { callLines } from '../helpers/expect.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { upload } from '../helpers/raw-http.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { snapshot } from '../helpers/snapshot.js';

const ZONE = 'example.test';
const REC = `/domain/zone/${ZONE}/record`;

let h: Harness;
let key: OvhKeyValues;
let base: string;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: Array.from({ length: 5 }, (_, i) => ({ subDomain: `h${i}`, fieldType: 'A', target: `192.0.2.${i + 1}`, ttl: 300 })) },
    env: { DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'), DNSPLANE_OVH_API_RATE: '1000', DNSPLANE_OVH_API_BURST: '1000' },
  });
  await h.tenant('alice', [ZONE]);
  for (let i = 0; i < 5; i++) {
    await h.server.ctx.pool.query(
      `INSERT INTO ownership (zone, dns_name, record_type, target, tenant_id) SELECT $1, $2, 'A', '', id FROM tenants WHERE name = 'alice'`,
      [ZONE, `h${i}.${ZONE}`],
    );
  }
  const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: 'alice' });
  key = { applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  base = `${h.server.url}/ovh/1.0`;
});

afterAll(async () => {
  await h?.close();
});

const queryId = (a: { headers: Headers }) => a.headers.get('x-ovh-queryid') ?? '';

describe('answers', () => {
  it("every answer carries an X-Ovh-Queryid, errors included; bodies are OVH's", async () => {
    const answers = await Promise.all([
      ovhCall(base, undefined, 'GET', '/auth/time'),
      ovhCall(base, key, 'GET', '/domain/zone'),
      ovhCall(base, key, 'GET', '/nope'),
      ovhCall(base, undefined, 'GET', '/domain/zone'),
      ovhCall(base, key, 'GET', `${REC}/1`),
    ]);
    const ids = answers.map(queryId);
    expect(ids.every((id) => /^EU\.dnsplane\.[0-9a-f]+\.\d+\.[0-9a-f]{8}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(answers.map((a) => [a.status, a.json])).toEqual([
      [200, answers[0]!.json],
      [200, [ZONE]],
      [404, { class: 'Client::NotFound', message: 'Got an invalid (or empty) URL' }],
      [403, { errorCode: 'NOT_CREDENTIAL', httpCode: '403 Forbidden', message: 'You must login first' }],
      [404, { class: 'Client::NotFound', message: 'The requested object (id = 1) does not exist' }],
    ]);
    expect(answers[2]!.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  it('the calls clients make on start: /auth/details (Terraform), /auth/currentCredential, /me — about the key that signed', async () => {
    const details = await ovhCall(base, key, 'GET', '/auth/details');
    expect(details.status).toBe(200);
    expect(details.json).toMatchObject({ account: 'alice', method: 'account', user: '', identities: [], roles: [] });
    expect((details.json as { allowedRoutes: unknown[] }).allowedRoutes).toContainEqual({ method: 'POST', path: '/domain/zone/*' });
    const credential = await ovhCall(base, key, 'GET', '/auth/currentCredential');
    expect(credential.json).toMatchObject({ status: 'validated', ovhSupport: false, allowedIPs: null, expiration: null });
    expect(Object.keys(credential.json as object).sort()).toEqual([
      'allowedIPs',
      'applicationId',
      'creation',
      'credentialId',
      'expiration',
      'lastUse',
      'ovhSupport',
      'rules',
      'status',
    ]);
    expect((await ovhCall(base, key, 'GET', '/me')).json).toMatchObject({ nichandle: 'alice' });
    expect((await ovhCall(base, key, 'POST', '/me')).status).toBe(405);
  });

  it("expanded lists: pages of full records with their paging headers, the filters applied; a bad page is OVH's 400", async () => {
    const headers = { 'X-Pagination-Mode': 'CachedObjectList-Pages', 'X-Pagination-Size': '2', 'X-Pagination-Number': '2', Pragma: 'no-cache' };
    const page = await ovhCall(base, key, 'GET', `${REC}?fieldType=A`, { headers });
    expect(page.status).toBe(200);
    expect(page.headers.get('x-pagination-elements')).toBe('5');
    expect(page.headers.get('x-pagination-number')).toBe('2');
    expect(page.headers.get('x-pagination-size')).toBe('2');
    expect((page.json as Array<{ subDomain: string }>).map((r) => r.subDomain)).toEqual(['h2', 'h3']);
    expect((page.json as object[])[0]).toMatchObject({ fieldType: 'A', zone: ZONE, ttl: 300, target: '192.0.2.3' });
    const one = await ovhCall(base, key, 'GET', `${REC}?subDomain=H4`, { headers: { 'X-Pagination-Mode': 'CachedObjectList-Pages' } });
    expect((one.json as Array<{ subDomain: string }>).map((r) => r.subDomain)).toEqual(['h4']);
    const bad = await ovhCall(base, key, 'GET', REC, { headers: { 'X-Pagination-Mode': 'CachedObjectList-Pages', 'X-Pagination-Number': '0' } });
    expect([bad.status, bad.json]).toEqual([400, { class: 'Client::BadRequest', message: 'Invalid x-pagination-number: 0' }]);
    const mode = await ovhCall(base, key, 'GET', REC, { headers: { 'X-Pagination-Mode': 'Other' } });
    expect([mode.status, mode.json]).toEqual([400, { class: 'Client::BadRequest', message: 'Invalid X-Pagination-Mode: Other' }]);
    expect((await ovhCall(base, key, 'GET', `${REC}?fieldType=NOPE`)).json).toEqual({
      class: 'Client::BadRequest',
      message: '[fieldType] Given data (NOPE) does not belong to the NamedResolutionFieldTypeEnum enumeration',
    });
  });
});

describe('signatures: the URL forms clients produce, nothing looser', () => {
  const port = () => new URL(base).port;
  it("accepts the endpoint URL go-ovh signs (http, port), the https form behind an ingress, node-ovh's portless https form", async () => {
    for (const url of [
      `http://127.0.0.1:${port()}/ovh/1.0/domain/zone`,
      `https://127.0.0.1:${port()}/ovh/1.0/domain/zone`,
      'https://127.0.0.1/ovh/1.0/domain/zone',
      'http://127.0.0.1/ovh/1.0/domain/zone',
    ]) {
      expect((await ovhCall(base, key, 'GET', '/domain/zone', { sign: { url } })).status, url).toBe(200);
    }
  });

  it('refuses another host, another path, another query, another body, another method, another timestamp, another secret', async () => {
    const invalid = { errorCode: 'INVALID_SIGNATURE', httpCode: '400 Bad Request', message: 'Invalid signature' };
    const cases: Array<[string, Parameters<typeof ovhCall>[4]]> = [
      ['host', { sign: { url: `http://dnsplane.example:${port()}/ovh/1.0/domain/zone` } }],
      ['path', { sign: { url: `http://127.0.0.1:${port()}/1.0/domain/zone` } }],
      ['query', { sign: { url: `http://127.0.0.1:${port()}/ovh/1.0/domain/zone?x=1` } }],
      ['scheme', { sign: { url: `ftp://127.0.0.1:${port()}/ovh/1.0/domain/zone` } }],
      ['method', { sign: { method: 'POST' } }],
      ['body', { sign: { body: '{}' } }],
      ['timestamp', { sign: { timestamp: Math.floor(Date.now() / 1000) - 1 } }],
      ['secret', { sign: { secret: 'x'.repeat(32) } }],
    ];
    for (const [what, opts] of cases) {
      const a = await ovhCall(base, key, 'GET', '/domain/zone', opts);
      expect([a.status, a.json], what).toEqual([400, invalid]);
    }
  });
});

describe("bad input: OVH's answers, nothing written", () => {
  it('unsigned, a wrong consumer key, an unknown application, a skewed timestamp, a body over the limit, unknown routes, methods OVH does not offer', async () => {
    const before = await snapshot(h.server.ctx.pool);
    h.sim.clearCalls();
    const body = { fieldType: 'TXT', subDomain: 'x', target: 'y' };
    const expectations: Array<[Promise<Awaited<ReturnType<typeof ovhCall>>>, number, unknown]> = [
      [
        ovhCall(base, key, 'POST', REC, { body, unsigned: true }),
        403,
        { errorCode: 'NOT_CREDENTIAL', httpCode: '403 Forbidden', message: 'You must login first' },
      ],
      [ovhCall(base, undefined, 'POST', REC, { body }), 403, { errorCode: 'NOT_CREDENTIAL', httpCode: '403 Forbidden', message: 'You must login first' }],
      [
        ovhCall(base, { ...key, consumerKey: 'z'.repeat(32) }, 'POST', REC, { body }),
        403,
        { errorCode: 'INVALID_CREDENTIAL', httpCode: '403 Forbidden', message: 'This credential does not exist' },
      ],
      [
        ovhCall(base, { ...key, applicationKey: 'B'.repeat(16) }, 'POST', REC, { body }),
        403,
        { errorCode: 'INVALID_KEY', httpCode: '403 Forbidden', message: 'This application key is invalid' },
      ],
      [
        ovhCall(base, key, 'POST', REC, { body, timestamp: Math.floor(Date.now() / 1000) - 3600 }),
        400,
        { errorCode: 'QUERY_TIME_OUT', httpCode: '400 Bad Request', message: 'Query out of time' },
      ],
      [
        ovhCall(base, key, 'POST', REC, { rawBody: JSON.stringify({ ...body, target: 'y'.repeat(70_000) }) }),
        413,
        { class: 'Client::PayloadTooLarge', message: 'Request body too large' },
      ],
      [ovhCall(base, key, 'POST', REC, { rawBody: '{"fieldType":' }), 400, { class: 'Client::BadRequest', message: 'Invalid JSON received' }],
      [ovhCall(base, key, 'POST', REC, { body: { ...body, colour: 'red' } }), 400, { class: 'Client::BadRequest', message: 'Unknown properties: colour' }],
      [ovhCall(base, key, 'POST', REC, { body: { ...body, id: 5 } }), 400, { class: 'Client::BadRequest', message: 'Try to alter read-only properties: id' }],
      [ovhCall(base, key, 'POST', REC, { body: [body] }), 400, { class: 'Client::BadRequest', message: 'Invalid body: a JSON object is expected' }],
      [ovhCall(base, key, 'POST', `/domain/zone/${ZONE}/records`, { body }), 404, { class: 'Client::NotFound', message: 'Got an invalid (or empty) URL' }],
      [ovhCall(base, key, 'GET', `/domain/zone/${ZONE}/dnssec`), 404, { class: 'Client::NotFound', message: 'Got an invalid (or empty) URL' }],
      [ovhCall(base, key, 'PATCH', `${REC}/1`, { body }), 405, { class: 'Client::MethodNotAllowed', message: 'Method not allowed' }],
      [ovhCall(base, key, 'POST', `/domain/zone/${ZONE}`, { body }), 405, { class: 'Client::MethodNotAllowed', message: 'Method not allowed' }],
      [ovhCall(base, key, 'DELETE', `${REC}/x1`), 400, { class: 'Client::BadRequest', message: '[id] Given data (x1) is not valid for type long' }],
      [
        ovhCall(base, key, 'POST', REC, { body: { fieldType: 'CNAME', subDomain: 'h1', target: 'elsewhere.example.' } }),
        403,
        {
          errorCode: 'NOT_GRANTED_CALL',
          httpCode: '403 Forbidden',
          message: 'This call has not been granted (h1.example.test CNAME: a CNAME cannot coexist with other record types; h1.example.test keeps A)',
        },
      ],
    ];
    for (const [call, status, json] of expectations) {
      const a = await call;
      expect([a.status, a.json], JSON.stringify(json)).toEqual([status, json]);
      expect(queryId(a)).not.toBe('');
    }
    const tooLarge = await ovhCall(base, key, 'POST', REC, { rawBody: 'x'.repeat(70_000) });
    expect(tooLarge.headers.get('allow')).toBeNull();
    expect((await ovhCall(base, key, 'PATCH', `${REC}/1`)).headers.get('allow')).toBe('GET, PUT, DELETE');
    expect(callLines(h.sim)).toEqual([]);
    expect(await snapshot(h.server.ctx.pool)).toEqual(before);
  });

  it("a body over the port's own limit is answered in OVH's shape too: announced (refused before it is sent) or chunked", async () => {
    const port = Number(new URL(h.server.url).port);
    const head = `POST /ovh/1.0${REC} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json`;
    const announced = await upload(port, { head, bytes: 9 * 1024 * 1024, framing: 'content-length', expectContinue: true });
    const chunked = await upload(port, { head, bytes: 256 * 1024, framing: 'chunked', expectContinue: false });
    for (const answer of [announced, chunked]) {
      expect(answer.got).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
      expect(answer.got).toMatch(/\r\nX-Ovh-Queryid: EU\.dnsplane\./i);
      expect(answer.got.slice(answer.got.indexOf('\r\n\r\n') + 4)).toBe(
        JSON.stringify({ class: 'Client::PayloadTooLarge', message: 'Request body too large' }),
      );
    }
    expect([announced.continued, announced.sent]).toEqual([false, 0]);
  });
});
