/**
 * Bad input through the webhook, and the policy for it: a change-set entry that breaks a rule is
 * refused alone (logged, counted), the rest applies, and the answer is a soft error (500) whose body
 * names the refusals — a 4xx would make external-dns exit, a 204 would hide the refusal from the
 * cluster; a body external-dns cannot have sent is a 4xx.
 * Plus Go's case-insensitive keys, the limits, the deadline, and names outside a tenant's suffixes,
 * caught here (central) or by the centre one by one (sidecar).
 */
import { createClient, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ZoneService, type ListZonesResponse } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { MAX_LOGGED_REFUSALS } from '../../src/webhook/apply.js';
import { startSidecar, type Sidecar } from '../../src/webhook/index.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { bearer } from '../helpers/sim-server.js';
import { ExternalDns, MEDIA_TYPE, refusedSoftly } from '../helpers/external-dns.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';
import { callLines } from '../helpers/expect.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.com';
let h: Harness;
let wh: TestWebhook;
let edns: ExternalDns;

const calls = (): string[] => callLines(h.sim);
const names = () => h.sim.draftRecords(ZONE).map((r) => r.subDomain);
const refused = () => wh.lines.filter((l) => l.msg === 'webhook change refused: invalid');
const post = (body: string, headers: Record<string, string> = { 'content-type': MEDIA_TYPE }) => edns.do('POST', '/records', headers, body);

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [], 'other.org': [] } });
  wh = await centralWebhook(h);
  edns = new ExternalDns(wh.url('alice', await h.tenant('alice', [ZONE])));
  await edns.records(); // first sync
});

afterAll(async () => {
  await wh?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('entries that break a rule are refused alone; the rest applies; a soft error names them', () => {
  it("a bad target, a name outside the tenant's zones, an unsupported type, a repeated record set", async () => {
    await refusedSoftly(
      edns.applyChanges({
        create: [
          { dnsName: `bad.${ZONE}`, targets: ['192.0.2.300'], recordType: 'A' },
          { dnsName: 'www.other.org', targets: ['192.0.2.1'], recordType: 'A' },
          { dnsName: `ok.${ZONE}`, targets: ['192.0.2.1'], recordType: 'A', recordTTL: 300 },
          { dnsName: `wks.${ZONE}`, targets: ['x'], recordType: 'WKS' },
          { dnsName: `OK.${ZONE}.`, targets: ['192.0.2.2'], recordType: 'A' },
        ],
      }),
    );
    expect(edns.exchanges.at(-1)!.body.split('\n')).toEqual([
      "4 change(s) refused; the others were applied (dnsplane's log names each refusal):",
      expect.stringMatching(/^invalid bad\.example\.com A: create\[0\]\.targets\[0\]: /),
      expect.stringMatching(/^invalid www\.other\.org A: create\[1\]\.dnsName: /),
      expect.stringMatching(/^invalid wks\.example\.com WKS: create\[3\]\.recordType: /),
      expect.stringMatching(/^invalid OK\.example\.com\. A: create\[4\]: record set ok\.example\.com A appears more than once/),
      '',
    ]);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'ok', target: '192.0.2.1', ttl: 300 });
    expect(refused().map((l) => [l.entry, l.reason])).toEqual([
      ['create[0]', expect.stringMatching(/^create\[0\]\.targets\[0\]: .*192\.0\.2\.300/)],
      ['create[1]', expect.stringMatching(/^create\[1\]\.dnsName: .*www\.other\.org.*none of the zones/)],
      ['create[3]', expect.stringMatching(/^create\[3\]\.recordType: unsupported record type "WKS"/)],
      ['create[4]', expect.stringMatching(/record set ok\.example\.com A appears more than once.*also at create\[2\], which is applied/)],
    ]);
    expect(refused().every((l) => l.level === 40 && l.tenant === 'alice')).toBe(true);
    expect(await wh.metric('dnsplane_webhook_rejected_total', { tenant: 'alice', list: 'create' })).toBe(4);
  });

  it('an update whose updateOld cannot be read still applies from updateNew; updateNew alone is an update too', async () => {
    const id = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'ok')!.id;
    await edns.applyChanges({
      updateOld: [{ dnsName: `ok.${ZONE}`, targets: ['not an address'], recordType: 'A' }],
      updateNew: [{ dnsName: `ok.${ZONE}`, targets: ['192.0.2.5'], recordType: 'A', recordTTL: 300 }],
    });
    expect(edns.exchanges.at(-1)!.status).toBe(204);
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${id}`, `POST /domain/zone/${ZONE}/refresh`]);
    h.sim.clearCalls();
    await edns.applyChanges({ updateNew: [{ dnsName: `ok.${ZONE}`, targets: ['192.0.2.6'], recordType: 'A', recordTTL: 300 }] });
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${id}`, `POST /domain/zone/${ZONE}/refresh`]);
  });

  it('a record set both deleted and created (external-dns without adjust: set identifiers) ends as created: one PUT', async () => {
    const id = h.sim.draftRecords(ZONE).find((r) => r.subDomain === 'ok')!.id;
    await edns.applyChanges({
      create: [{ dnsName: `ok.${ZONE}`, targets: ['192.0.2.9'], recordType: 'A', recordTTL: 300, setIdentifier: 'eu' }],
      delete: [{ dnsName: `ok.${ZONE}`, targets: ['192.0.2.6'], recordType: 'A', recordTTL: 300 }],
    });
    expect(edns.exchanges.at(-1)!.status).toBe(204);
    expect(calls()).toEqual([`PUT /domain/zone/${ZONE}/record/${id}`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(h.sim.writes()[0]!.body).toEqual({ target: '192.0.2.9', ttl: 300 });
  });

  it('keys are matched as Go does: any case, the last of duplicates wins', async () => {
    const ex = await post('{"CREATE":[{"DNSName":"ci.example.com","dnsname":"ci2.example.com","Targets":["192.0.2.7"],"RecordType":"A","RECORDTTL":120}]}');
    expect(ex.status).toBe(204);
    expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'ci2', target: '192.0.2.7', ttl: 120 });
  });

  it('a flood of bad entries: each counted, the first MAX_LOGGED_REFUSALS logged one by one, the rest in one line', async () => {
    const before = refused().length;
    const counted = await wh.metric('dnsplane_webhook_rejected_total', { tenant: 'alice', list: 'delete' });
    const bad = Array.from({ length: MAX_LOGGED_REFUSALS + 7 }, (_, i) => ({ dnsName: `bad${i}.${ZONE}`, targets: ['192.0.2.300'], recordType: 'A' }));
    await refusedSoftly(edns.applyChanges({ delete: bad }));
    expect(edns.exchanges.at(-1)!.body.split('\n').slice(-2)).toEqual(['… 7 more invalid', '']);
    expect(calls()).toEqual([]);
    expect(
      refused()
        .slice(before)
        .map((l) => l.entry),
    ).toEqual(bad.slice(0, MAX_LOGGED_REFUSALS).map((_, i) => `delete[${i}]`));
    expect(wh.lines.filter((l) => l.msg === 'webhook changes refused: invalid, 7 more not logged one by one')).toEqual([
      expect.objectContaining({ level: 40, tenant: 'alice', refused: MAX_LOGGED_REFUSALS + 7, logged: MAX_LOGGED_REFUSALS }),
    ]);
    expect(await wh.metric('dnsplane_webhook_rejected_total', { tenant: 'alice', list: 'delete' })).toBe((counted ?? 0) + MAX_LOGGED_REFUSALS + 7);
  });

  it('a change set where every entry is refused sends nothing and answers the soft error', async () => {
    const ex = await post('{"create":[{"dnsName":"x.example.com","targets":["::1"],"recordType":"A"}]}');
    expect(ex.status).toBe(500);
    expect(calls()).toEqual([]);
  });
});

describe('what external-dns cannot send is a 4xx, with no OVH call', () => {
  it.each([
    ['not JSON', '{"create":[', 400, /not JSON/],
    ['a list where the change set goes', '[]', 400, /must be an object/],
    [
      'a string TTL',
      '{"create":[{"dnsName":"t.example.com","targets":["192.0.2.1"],"recordType":"A","recordTTL":"300"}]}',
      400,
      /create\[0\]\.recordTTL: must be a whole number/,
    ],
    ['a fractional TTL', '{"create":[{"dnsName":"t.example.com","targets":["192.0.2.1"],"recordType":"A","recordTTL":300.5}]}', 400, /create\[0\]\.recordTTL/],
    ['a null endpoint', '{"delete":[null]}', 400, /delete\[0\]: an endpoint must be an object/],
  ])('%s', async (_name, body, status, message) => {
    const ex = await post(body);
    expect(ex.status).toBe(status);
    expect(ex.body).toMatch(message);
    expect(calls()).toEqual([]);
  });

  it('another protocol version (406, 415), an unknown path (404), a wrong method (405)', async () => {
    expect((await edns.do('GET', '/', { accept: 'application/external.dns.webhook+json;version=2' })).status).toBe(406);
    expect((await post('{}', { 'content-type': 'application/external.dns.webhook+json;version=2' })).status).toBe(415);
    expect((await edns.do('GET', '/applychanges', {})).status).toBe(404);
    const wrong = await edns.do('GET', '/adjustendpoints', {});
    expect([wrong.status, wrong.headers['allow']]).toEqual([405, 'POST']);
    // What older external-dns versions send is served: no Content-Type on POST /records, Accept */*.
    expect((await post('{}', {})).status).toBe(204);
    expect((await edns.do('GET', '/records', { accept: '*/*' })).status).toBe(200);
    expect(calls()).toEqual([]);
  });

  it('a body that is not announced as JSON is 415 (text/plain, a form), with no OVH call', async () => {
    const body = `{"create":[{"dnsName":"plain.${ZONE}","targets":["192.0.2.1"],"recordType":"A"}]}`;
    for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded']) {
      const ex = await post(body, { 'content-type': type });
      expect([type, ex.status]).toEqual([type, 415]);
      expect(ex.body).toMatch(/reads application\/external\.dns\.webhook\+json;version=1/);
    }
    for (const type of ['application/json', 'application/json; charset=utf-8', MEDIA_TYPE]) {
      expect((await post('{}', { 'content-type': type })).status).toBe(204);
    }
    expect(calls()).toEqual([]);
  });

  it('fields a newer external-dns may add are accepted and ignored (the webhook must not break on an upgrade)', async () => {
    const body = `{"create":[{"dnsName":"newer.${ZONE}","targets":["192.0.2.1"],"recordType":"A","recordTTL":300,"someFutureField":{"x":1}}],"futureList":[]}`;
    const ex = await post(body);
    expect(ex.status).toBe(204);
    expect(calls()).toContain(`POST /domain/zone/${ZONE}/record`);
  });

  it('a body over the limit is 413', async () => {
    const small = await centralWebhook(h, { maxBodyBytes: 512 });
    try {
      const e = new ExternalDns(small.url('big', await h.tenant('big', [ZONE])));
      const big = { create: Array.from({ length: 20 }, (_, i) => ({ dnsName: `n${i}.${ZONE}`, targets: ['192.0.2.1'], recordType: 'A' })) };
      const err = await e.applyChanges(big).catch((x: unknown) => x);
      expect(e.exchanges.at(-1)!.status).toBe(413);
      expect(err).toMatchObject({ soft: false });
      expect(calls()).toEqual([]);
    } finally {
      await small.close();
    }
  });
});

describe('the deadline', () => {
  it('an apply slower than the deadline is answered 503 (retried next loop); the apply still completes', async () => {
    const slow = await centralWebhook(h, { deadlineMs: 150 });
    try {
      const e = new ExternalDns(slow.url('slowpoke', await h.tenant('slowpoke', [ZONE])));
      h.sim.faults.setLatency(400);
      const err = await e.applyChanges({ create: [{ dnsName: `late.${ZONE}`, targets: ['192.0.2.8'], recordType: 'A' }] }).catch((x: unknown) => x);
      expect(err).toMatchObject({ status: 503, soft: true });
      // The apply goes on after the 503; wait for its log line (the bound only catches a hang).
      await until('the late apply to log its outcome', () => slow.lines.some((l) => l.late));
      expect(slow.lines.find((l) => l.late)).toMatchObject({ status: 204, webhook: 'apply' });
      expect(names()).toContain('late');
      expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    } finally {
      h.sim.faults.clear();
      await slow.close();
    }
  });
});

describe('a tenant limited to suffixes', () => {
  let token: string;
  let sidecar: Sidecar;
  beforeAll(async () => {
    token = await h.tenant('team', [ZONE], { suffixes: ['team.example.com'] });
    sidecar = await startSidecar({ client: h.zoneClient(token), listen: { host: '127.0.0.1', port: 0 }, log: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await sidecar?.close();
  });

  it('central: the domain filter is its suffixes, names outside are refused here', async () => {
    const e = new ExternalDns(wh.url('team', token));
    expect((await e.negotiate()).include).toEqual(['team.example.com']);
    await refusedSoftly(
      e.applyChanges({
        create: [
          { dnsName: `outside.${ZONE}`, targets: ['192.0.2.9'], recordType: 'A' },
          { dnsName: `a.team.${ZONE}`, targets: ['192.0.2.9'], recordType: 'A' },
        ],
      }),
    );
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(refused().at(-1)).toMatchObject({ tenant: 'team', entry: 'create[0]', reason: expect.stringMatching(/outside tenant "team"'s allowed suffixes/) });
  });

  it('sidecar: the centre tells it the suffixes, so its domain filter and refusals match the central listener', async () => {
    const e = new ExternalDns(sidecar.url);
    expect((await e.negotiate()).include).toEqual(['team.example.com']);
    await refusedSoftly(
      e.applyChanges({
        create: [
          { dnsName: `b.team.${ZONE}`, targets: ['192.0.2.10'], recordType: 'A' },
          { dnsName: `outside2.${ZONE}`, targets: ['192.0.2.10'], recordType: 'A' },
          { dnsName: `c.team.${ZONE}`, targets: ['192.0.2.11'], recordType: 'A' },
        ],
      }),
    );
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    expect(names()).not.toContain('outside2');
    expect(await sidecar.metrics.registry.getSingleMetric('dnsplane_webhook_rejected_total')?.get()).toMatchObject({
      values: [{ value: 1, labels: { list: 'create' } }],
    });
  });

  it('sidecar against a centre that does not send suffixes (an older version): the centre refuses the name outside, the sidecar drops that entry and applies the rest', async () => {
    // The centre's ListZones answer loses its suffixes on the way, as from a dnsplane that predates them.
    const older: Interceptor = (next) => async (req) => {
      const res = await next(req);
      if (!res.stream && req.method.name === 'ListZones') (res.message as ListZonesResponse).suffixes = [];
      return res;
    };
    const client = createClient(ZoneService, createConnectTransport({ baseUrl: h.server.url, httpVersion: '1.1', interceptors: [older, bearer(token)] }));
    const old = await startSidecar({ client, listen: { host: '127.0.0.1', port: 0 }, log: pino({ level: 'silent' }) });
    try {
      const e = new ExternalDns(old.url);
      expect((await e.negotiate()).include).toEqual([ZONE]); // told zones, not suffixes
      await refusedSoftly(
        e.applyChanges({
          create: [
            { dnsName: `d.team.${ZONE}`, targets: ['192.0.2.12'], recordType: 'A' },
            { dnsName: `outside3.${ZONE}`, targets: ['192.0.2.12'], recordType: 'A' },
            { dnsName: `e.team.${ZONE}`, targets: ['192.0.2.13'], recordType: 'A' },
          ],
        }),
      );
      expect(e.exchanges.at(-1)!.body).toMatch(/^1 change\(s\) refused.*\ninvalid outside3\.example\.com A: /);
      expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
      expect(names()).not.toContain('outside3');
      expect(await old.metrics.registry.getSingleMetric('dnsplane_webhook_rejected_total')?.get()).toMatchObject({
        values: [{ value: 1, labels: { list: 'create' } }],
      });
    } finally {
      await old.close();
    }
  });
});

describe('credentials (central)', () => {
  it("the user name must be the token's tenant; wrong or missing credentials are 401; no secret is logged", async () => {
    const token = await h.tenant('frank', [ZONE]);
    const urls = [wh.url('alice', token), wh.url('frank', `${token}x`), wh.url('frank', ''), wh.listener.url];
    for (const url of urls) {
      const ex = await new ExternalDns(url).do('GET', '/records', { accept: MEDIA_TYPE });
      expect([ex.status, ex.headers['www-authenticate']]).toEqual([401, 'Basic realm="dnsplane"']);
      expect(ex.body).not.toContain(token);
    }
    const ok = await new ExternalDns(wh.url('frank', token)).do('GET', '/records', { accept: MEDIA_TYPE });
    expect(ok.status).toBe(200);
    expect(calls()).toEqual([]);
    const logged = JSON.stringify(wh.lines);
    expect(logged).not.toContain(token);
    expect(logged).not.toContain(Buffer.from(`frank:${token}`).toString('base64'));
  });
});
