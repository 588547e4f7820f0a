/**
 * Conformance: external-dns v0.22's webhook client (test/helpers/external-dns.ts, a port of its Go
 * code) against dnsplane, in both modes — the central listener of `dnsplane serve` (HTTP Basic
 * tenant:token) and the sidecar (`dnsplane webhook`, calling the centre over Connect), the sidecar
 * both with a dnsplane token and with a projected ServiceAccount token in a file (workload identity:
 * a test issuer over HTTPS on loopback, the tenant trusting its subject; a wrong credential is then a
 * token of a subject nobody trusts). One suite, run against each; real Postgres, the OVH simulator
 * over HTTPS, and the exact OVH calls the simulator saw asserted at every step.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { connectClient, resolveServer } from '../../src/cli/client.js';
import { trustSubject } from '../../src/core/credentials/workload-trust.js';
import { authenticate } from '../../src/core/tenants/tenants.js';
import { ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startIssuer } from '../helpers/oidc-issuer.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as store from '../../src/store/index.js';
import { startSidecar, type Sidecar } from '../../src/webhook/index.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { calculate, ExternalDns, ExternalDnsError, MEDIA_TYPE, type GoEndpoint } from '../helpers/external-dns.js';
import { callLines, ep } from '../helpers/expect.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'example.com';
const silent = pino({ level: 'silent' });

type Mode = 'central' | 'sidecar' | 'sidecar with a projected token';

interface Setup {
  h: Harness;
  /** The URL external-dns is given (--webhook-provider-url). */
  url(tenant: string, token: string): Promise<string>;
  close(): Promise<void>;
}

async function setup(mode: Mode): Promise<Setup> {
  const h = await startHarness({
    zones: {
      [ZONE]: [
        { subDomain: 'manual', fieldType: 'A', target: '192.0.2.200', ttl: 600 },
        { subDomain: '', fieldType: 'TXT', target: 'v=spf1 include:_spf.example.net -all', ttl: 0 },
      ],
      // Nobody reads it before the "OVH down" test: its first read is a sync.
      'other.example': [{ subDomain: 'a', fieldType: 'A', target: '192.0.2.1', ttl: 60 }],
    },
    env: { DNSPLANE_LOCK_TIMEOUT: '300ms' },
  });
  const sidecars: Sidecar[] = [];
  const issuer = mode === 'sidecar with a projected token' ? await startIssuer() : undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-conformance-'));
  /** The sidecar's client: the token itself, or a projected token file of a subject the tenant trusts when `token` is its good one. */
  const clientFor = async (tenant: string, token: string) => {
    if (!issuer) return h.zoneClient(token);
    const good = await authenticate(h.server.ctx.pool, token).then(
      () => true,
      () => false,
    );
    const subject = `system:serviceaccount:${tenant}:external-dns`;
    if (good) await trustSubject({ pool: h.server.ctx.pool, actor: null }, { tenant, issuer: issuer.url, subject, caPem: issuer.caPem });
    const file = path.join(dir, `${tenant}.token`);
    writeFileSync(file, await issuer.mint({ sub: good ? subject : `${subject}-untrusted` }));
    return connectClient(ZoneService, h.server.url, resolveServer({ tokenFile: file }, {}).tokenSource);
  };
  return {
    h,
    async url(tenant, token) {
      if (mode === 'central') {
        const u = new URL(h.webhookUrl);
        u.username = tenant;
        u.password = token;
        return u.toString();
      }
      const s = await startSidecar({ client: await clientFor(tenant, token), listen: { host: '127.0.0.1', port: 0 }, log: silent });
      sidecars.push(s);
      return s.url;
    },
    async close() {
      for (const s of sidecars) await s.close();
      await h.close();
      await issuer?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe.each<Mode>(['central', 'sidecar', 'sidecar with a projected token'])('the webhook protocol, %s mode', (mode) => {
  let s: Setup;
  let h: Harness;
  /** The simulator's log as "METHOD path" lines, /auth/time left out. */
  const calls = () => callLines(h.sim);
  /** The bodies of the record writes the simulator saw, in a stable order. */
  const recordBodies = () =>
    h.sim
      .writes()
      .filter((c) => c.path.endsWith('/record'))
      .map((c) => c.body)
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  const recordId = (subDomain: string, target: string) => h.sim.draftRecords(ZONE).find((r) => r.subDomain === subDomain && r.target === target)!.id;

  beforeAll(async () => {
    s = await setup(mode);
    h = s.h;
  });
  afterAll(async () => {
    await s?.close();
  });
  beforeEach(() => {
    h.sim.clearCalls();
    h.sim.faults.clear();
  });

  describe('a cluster converging through external-dns v0.22', () => {
    let edns: ExternalDns;

    /** What the cluster's sources produce, in the forms sources really use. */
    const desired1: GoEndpoint[] = [
      // Mixed case and a trailing dot, a duplicate target, a TTL under OVH's minimum, a set identifier
      // and a provider-specific property OVH has no use for.
      {
        dnsName: 'WWW.Example.com.',
        targets: ['192.0.2.2', '192.0.2.1', '192.0.2.1'],
        recordType: 'A',
        recordTTL: 30,
        setIdentifier: 'eu-west',
        labels: { resource: 'ingress/default/web' },
        providerSpecific: [{ name: 'alias', value: 'false' }],
      },
      // TTL 0 (not configured) and a CNAME target with a trailing dot, in capitals.
      { dnsName: 'api.example.com', targets: ['LB.Example.NET.'], recordType: 'CNAME', labels: { resource: 'service/default/api' } },
      // A TXT value quoted, as a DNSEndpoint CRD would carry it.
      { dnsName: 'txt.example.com', targets: ['"hello world"'], recordType: 'TXT', recordTTL: 300 },
      { dnsName: 'old.example.com', targets: ['192.0.2.50'], recordType: 'A', recordTTL: 300 },
    ];
    const managedRecordTypes = ['A', 'AAAA', 'CNAME', 'TXT'];

    beforeAll(async () => {
      edns = new ExternalDns(await s.url('alice', await h.tenant('alice', [ZONE])));
    });

    it("negotiates: 200, Content-Type exactly the media type, the tenant's zones as the domain filter", async () => {
      const filter = await edns.negotiate();
      const ex = edns.exchanges.at(-1)!;
      expect(ex.requestHeaders['accept']).toBe(MEDIA_TYPE);
      expect(ex.status).toBe(200);
      expect(ex.headers['content-type']).toBe('application/external.dns.webhook+json;version=1');
      expect(ex.headers['vary']).toBe('Content-Type');
      expect(ex.body).toBe('{"include":["example.com"]}\n');
      expect(filter).toEqual({ include: [ZONE], exclude: [], regexInclude: '', regexExclude: '' });
      expect(calls()).toEqual([]);
    });

    it("GET /records: syncs the zone once, then answers the tenant's own record sets (none yet)", async () => {
      expect(await edns.records()).toEqual([]);
      const ex = edns.exchanges.at(-1)!;
      expect([ex.status, ex.headers['content-type'], ex.body]).toEqual([200, MEDIA_TYPE, '[]\n']);
      const ids = h.sim.draftRecords(ZONE).map((r) => r.id);
      expect(calls().sort()).toEqual(
        [`GET /domain/zone/${ZONE}/record`, ...ids.map((id) => `GET /domain/zone/${ZONE}/record/${id}`), `GET /domain/zone/${ZONE}/soa`].sort(),
      );
      h.sim.clearCalls();
      await edns.records();
      expect(calls()).toEqual([]); // served from the cache
    });

    it('POST /adjustendpoints: the forms dnsplane will hold, and no OVH call', async () => {
      const adjusted = await edns.adjustEndpoints(desired1);
      const ex = edns.exchanges.at(-1)!;
      expect(ex.requestHeaders['content-type']).toBe(MEDIA_TYPE);
      expect(ex.requestHeaders['accept']).toBe(MEDIA_TYPE);
      expect([ex.status, ex.headers['content-type']]).toEqual([200, MEDIA_TYPE]);
      expect(ex.body).toBe(
        '[' +
          '{"dnsName":"www.example.com","targets":["192.0.2.1","192.0.2.2"],"recordType":"A","recordTTL":60,"labels":{"resource":"ingress/default/web"}},' +
          '{"dnsName":"api.example.com","targets":["lb.example.net"],"recordType":"CNAME","labels":{"resource":"service/default/api"}},' +
          '{"dnsName":"txt.example.com","targets":["hello world"],"recordType":"TXT","recordTTL":300},' +
          '{"dnsName":"old.example.com","targets":["192.0.2.50"],"recordType":"A","recordTTL":300}' +
          ']\n',
      );
      expect(adjusted).toHaveLength(4);
      expect(calls()).toEqual([]);
    });

    it('first loop: four creates in one POST /records, 204, one POST per target and one refresh', async () => {
      const changes = await edns.runOnce(desired1, { managedRecordTypes });
      expect(changes.create?.map((e) => e.dnsName).sort()).toEqual(['api.example.com', 'old.example.com', 'txt.example.com', 'www.example.com']);
      const ex = edns.exchanges.at(-1)!;
      expect([ex.method, ex.path, ex.status, ex.body]).toEqual(['POST', '/records', 204, '']);
      expect(calls()).toEqual([...Array(5).fill(`POST /domain/zone/${ZONE}/record`), `POST /domain/zone/${ZONE}/refresh`]);
      expect(recordBodies()).toEqual([
        { fieldType: 'A', subDomain: 'old', target: '192.0.2.50', ttl: 300 },
        { fieldType: 'A', subDomain: 'www', target: '192.0.2.1', ttl: 60 },
        { fieldType: 'A', subDomain: 'www', target: '192.0.2.2', ttl: 60 },
        { fieldType: 'CNAME', subDomain: 'api', target: 'lb.example.net.', ttl: 0 },
        { fieldType: 'TXT', subDomain: 'txt', target: 'hello world', ttl: 300 },
      ]);
    });

    it("the apply is in the journal (the audit log) under the tenant; central: in the server's /metrics", async () => {
      const alice = await store.getTenantByName(h.server.ctx.pool, 'alice');
      const rows = await store.listJournal(h.server.ctx.pool, { tenantId: alice!.id, limit: 10 });
      expect(rows.map((r) => [r.zone, r.state])).toEqual([[ZONE, 'done']]);
      // The workload that asked, by its subject; a dnsplane token's apply has no summary of its door.
      expect((rows[0]!.intent as { summary?: string }).summary).toEqual(
        mode === 'sidecar with a projected token' ? expect.stringMatching(/^by workload system:serviceaccount:alice:external-dns \(issuer https:/) : undefined,
      );
      if (mode === 'central') {
        const text = await (await fetch(`${h.server.url}/metrics`)).text();
        expect(text).toMatch(/^dnsplane_webhook_requests_total\{route="apply",status="204"\} 1$/m);
        expect(text).toMatch(/^dnsplane_webhook_requests_total\{route="negotiate",status="200"\} 1$/m);
      }
    });

    it('second loop: create, update (paired updateOld/updateNew) and delete in one change set', async () => {
      const www2 = recordId('www', '192.0.2.2');
      const old = recordId('old', '192.0.2.50');
      const desired2: GoEndpoint[] = [
        { ...desired1[0]!, targets: ['192.0.2.1', '192.0.2.3'] },
        desired1[1]!,
        desired1[2]!,
        { dnsName: 'v6.example.com', targets: ['2001:DB8:0:0::1'], recordType: 'AAAA', recordTTL: 120 },
      ];
      const changes = await edns.runOnce(desired2, { managedRecordTypes });
      const ex = edns.exchanges.at(-1)!;
      expect(ex.requestBody).toBe(
        '{"create":[{"dnsName":"v6.example.com","targets":["2001:db8::1"],"recordType":"AAAA","recordTTL":120}],' +
          '"updateOld":[{"dnsName":"www.example.com","targets":["192.0.2.1","192.0.2.2"],"recordType":"A","recordTTL":60}],' +
          '"updateNew":[{"dnsName":"www.example.com","targets":["192.0.2.1","192.0.2.3"],"recordType":"A","recordTTL":60,"labels":{"owner":"","resource":"ingress/default/web"}}],' +
          '"delete":[{"dnsName":"old.example.com","targets":["192.0.2.50"],"recordType":"A","recordTTL":300}]}\n',
      );
      expect(changes.updateOld).toHaveLength(1);
      expect([ex.status, ex.body]).toEqual([204, '']);
      expect(calls()).toEqual([
        `DELETE /domain/zone/${ZONE}/record/${old}`,
        `PUT /domain/zone/${ZONE}/record/${www2}`,
        `POST /domain/zone/${ZONE}/record`,
        `POST /domain/zone/${ZONE}/refresh`,
      ]);
      expect(h.sim.writes().map((c) => c.body)).toEqual([
        undefined,
        { target: '192.0.2.3', ttl: 60 },
        { fieldType: 'AAAA', subDomain: 'v6', target: '2001:db8::1', ttl: 120 },
        undefined,
      ]);
    });

    it('GET /records again: the new state, exactly as external-dns reads it, from the cache', async () => {
      await edns.records();
      const ex = edns.exchanges.at(-1)!;
      expect([ex.status, ex.headers['content-type']]).toEqual([200, MEDIA_TYPE]);
      expect(ex.body).toBe(
        '[' +
          '{"dnsName":"api.example.com","targets":["lb.example.net"],"recordType":"CNAME"},' +
          '{"dnsName":"txt.example.com","targets":["hello world"],"recordType":"TXT","recordTTL":300},' +
          '{"dnsName":"v6.example.com","targets":["2001:db8::1"],"recordType":"AAAA","recordTTL":120},' +
          '{"dnsName":"www.example.com","targets":["192.0.2.1","192.0.2.3"],"recordType":"A","recordTTL":60}' +
          ']\n',
      );
      expect(calls()).toEqual([]);
    });

    it.runIf(mode === 'central')(
      'central: a GET /records reads the generations in Postgres at most once (scope and records share the read; none while the listener keeps them), and answers the same bytes again',
      async () => {
        const reads = () => h.server.ctx.reads!.zoneStates.reads;
        const before = reads();
        await edns.records();
        expect(reads() - before).toBeLessThanOrEqual(1);
        const first = edns.exchanges.at(-1)!.body;
        const once = reads();
        await edns.records();
        expect(edns.exchanges.at(-1)!.body).toBe(first);
        expect(reads() - once).toBeLessThanOrEqual(1);
      },
    );

    it('converges: the next loops plan no change (TXT quotes, trailing dots, TTL 0 and 30), send nothing', async () => {
      const desired2: GoEndpoint[] = [
        { ...desired1[0]!, targets: ['192.0.2.3', '192.0.2.1'] },
        desired1[1]!,
        desired1[2]!,
        { dnsName: 'V6.example.com.', targets: ['2001:db8::1'], recordType: 'AAAA', recordTTL: 120 },
      ];
      const before = edns.exchanges.length;
      for (let loop = 0; loop < 3; loop++) {
        const changes = await edns.runOnce(desired2, { managedRecordTypes });
        expect(changes).toEqual({ create: [], updateOld: [], updateNew: [], delete: [] });
      }
      // Each loop: GET /records and POST /adjustendpoints, never POST /records.
      expect(edns.exchanges.slice(before).map((e) => `${e.method} ${e.path}`)).toEqual(Array(3).fill(['GET /records', 'POST /adjustendpoints']).flat());
      expect(calls()).toEqual([]);
      // And without adjusting, the raw source forms would have planned updates forever: the reason for
      // POST /adjustendpoints.
      const raw = calculate(await edns.records(), desired2, { domainFilter: edns.domainFilter, managedRecordTypes });
      expect({
        create: raw.create.map((e) => e.dnsName),
        delete: raw.delete.map((e) => e.dnsName),
        update: raw.updateNew.map((e) => e.dnsName).sort(),
      }).toEqual({
        create: ['WWW.Example.com.'], // its set identifier makes it another row…
        delete: ['www.example.com'], // …so the record read back would be deleted and re-created
        update: ['api.example.com', 'txt.example.com'], // `LB.Example.NET.` and `"hello world"` differ as strings
      });
    });
  });

  describe('PTR and NAPTR endpoints, as external-dns sends them (issue 43)', () => {
    const desired: GoEndpoint[] = [
      { dnsName: 'host-ptr.example.com', targets: ['Host.Example.NET.'], recordType: 'PTR', recordTTL: 300 },
      { dnsName: 'sip.example.com', targets: ['100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" .'], recordType: 'NAPTR', recordTTL: 300 },
    ];
    const managedRecordTypes = ['PTR', 'NAPTR'];

    it('one POST per record as OVH stores it and one refresh; then the loops converge with no call', async () => {
      const edns = new ExternalDns(await s.url('voip', await h.tenant('voip', [ZONE])));
      const changes = await edns.runOnce(desired, { managedRecordTypes });
      expect(changes.create?.map((e) => e.recordType).sort()).toEqual(['NAPTR', 'PTR']);
      expect(calls()).toEqual([...Array(2).fill(`POST /domain/zone/${ZONE}/record`), `POST /domain/zone/${ZONE}/refresh`]);
      expect(recordBodies()).toEqual([
        { fieldType: 'NAPTR', subDomain: 'sip', target: '100 10 "U" "E2U+sip" "!^.*$!sip:info@example.com!" .', ttl: 300 },
        { fieldType: 'PTR', subDomain: 'host-ptr', target: 'host.example.net.', ttl: 300 },
      ]);
      h.sim.clearCalls();
      for (let loop = 0; loop < 2; loop++)
        expect(await edns.runOnce(desired, { managedRecordTypes })).toEqual({ create: [], updateOld: [], updateNew: [], delete: [] });
      expect(calls()).toEqual([]);
    });
  });

  describe("a TXT at a DKIM's name: one set to external-dns, as to resolvers (issue 43)", () => {
    const DKIM = 'v=DKIM1;k=rsa;p=MIGfOLD';

    it('GET /records shows the union as TXT; a value added is one TXT POST, a DKIM value replaced one PUT of the DKIM record', async () => {
      const token = await h.tenant('mail', [ZONE]);
      await applyDesired(h.zoneClient(token), [ep(`sel._domainkey.${ZONE}`, 'DKIM', [DKIM])]);
      const dkimId = h.sim.draftRecords(ZONE).find((r) => r.fieldType === 'DKIM')!.id;
      const edns = new ExternalDns(await s.url('mail', token));
      expect((await edns.records()).map((e) => [e.dnsName, e.recordType, e.targets])).toEqual([[`sel._domainkey.${ZONE}`, 'TXT', [DKIM]]]);
      h.sim.clearCalls();
      const wanted = (targets: string[]): GoEndpoint[] => [{ dnsName: `sel._domainkey.${ZONE}`, targets, recordType: 'TXT', recordTTL: 300 }];
      await edns.runOnce(wanted([DKIM, 'extra']), { managedRecordTypes: ['TXT'] });
      expect(h.sim.writes().map((c) => [c.method, c.path, c.body])).toEqual([
        ['POST', `/domain/zone/${ZONE}/record`, { fieldType: 'TXT', subDomain: 'sel._domainkey', target: 'extra', ttl: 300 }],
        ['POST', `/domain/zone/${ZONE}/refresh`, undefined],
      ]);
      h.sim.clearCalls();
      await edns.runOnce(wanted(['v=DKIM1;k=rsa;p=MIGfNEW', 'extra']), { managedRecordTypes: ['TXT'] });
      expect(h.sim.writes().map((c) => [c.method, c.path, c.body])).toEqual([
        ['PUT', `/domain/zone/${ZONE}/record/${dkimId}`, { target: 'v=DKIM1;k=rsa;p=MIGfNEW', ttl: 300 }],
        ['POST', `/domain/zone/${ZONE}/refresh`, undefined],
      ]);
      h.sim.clearCalls();
      expect(await edns.runOnce(wanted(['v=DKIM1;k=rsa;p=MIGfNEW', 'extra']), { managedRecordTypes: ['TXT'] })).toEqual({
        create: [],
        updateOld: [],
        updateNew: [],
        delete: [],
      });
      expect(calls()).toEqual([]);
    });
  });

  describe('statuses external-dns acts on', () => {
    it('a wrong password is 401 (fatal to external-dns) and costs no OVH call', async () => {
      const token = await h.tenant('bob', [ZONE]);
      const edns = new ExternalDns(await s.url('bob', `${token}x`));
      const err = await edns.records().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ExternalDnsError);
      expect((err as ExternalDnsError).status).toBe(401);
      expect((err as ExternalDnsError).soft).toBe(false);
      for (const path of ['/', '/records', '/adjustendpoints']) {
        const ex = await edns.do(path === '/adjustendpoints' ? 'POST' : 'GET', path, { accept: MEDIA_TYPE }, path === '/adjustendpoints' ? '[]' : '');
        expect(ex.status).toBe(401);
        expect(ex.body).not.toContain(token);
      }
      const apply = await edns.do(
        'POST',
        '/records',
        { 'content-type': MEDIA_TYPE },
        '{"create":[{"dnsName":"x.example.com","targets":["192.0.2.9"],"recordType":"A"}]}',
      );
      expect(apply.status).toBe(401);
      expect(calls()).toEqual([]);
      expect(h.sim.draftRecords(ZONE).some((r) => r.subDomain === 'x')).toBe(false);
    });

    it("OVH down: GET /records on a zone never read is 503 (a soft error), after the client's retries", async () => {
      const token = await h.tenant('carol', ['other.example']);
      const edns = new ExternalDns(await s.url('carol', token));
      h.sim.faults.fail({ path: '/domain/zone/other.example/**', effect: { kind: 'status', status: 503 } });
      const err = (await edns.records().catch((e: unknown) => e)) as ExternalDnsError;
      expect([err.status, err.soft]).toEqual([503, true]);
      // The OVH client's 4 attempts of the first read of a sync (the SOA serial), nothing else.
      expect(calls()).toEqual(Array(4).fill('GET /domain/zone/other.example/soa'));
    });

    it('OVH down during an apply: 503, the zone rolled back and nothing published', async () => {
      const token = await h.tenant('dave', [ZONE]);
      const edns = new ExternalDns(await s.url('dave', token));
      await edns.records();
      h.sim.clearCalls();
      const published = h.sim.publishedRecords(ZONE).length;
      h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, effect: { kind: 'status', status: 503 } });
      const err = (await edns
        .applyChanges({ create: [{ dnsName: 'dave.example.com', targets: ['192.0.2.77'], recordType: 'A' }] })
        .catch((e: unknown) => e)) as ExternalDnsError;
      expect([err.status, err.soft]).toEqual([503, true]);
      expect(calls()).toEqual([
        `POST /domain/zone/${ZONE}/record`,
        ...Array(4).fill(`POST /domain/zone/${ZONE}/refresh`),
        expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE}/record/\\d+$`)),
        `GET /domain/zone/${ZONE}/record`,
      ]);
      expect(h.sim.draftRecords(ZONE).some((r) => r.subDomain === 'dave')).toBe(false);
      expect(h.sim.publishedRecords(ZONE)).toHaveLength(published);
    });

    it('a zone lock not acquired in time is 503', async () => {
      const token = await h.tenant('erin', [ZONE]);
      const edns = new ExternalDns(await s.url('erin', token));
      await edns.records();
      h.sim.clearCalls();
      const client = await h.server.ctx.pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [0x646e7370, ZONE]);
        const err = (await edns
          .applyChanges({ create: [{ dnsName: 'erin.example.com', targets: ['192.0.2.78'], recordType: 'A' }] })
          .catch((e: unknown) => e)) as ExternalDnsError;
        expect([err.status, err.soft]).toEqual([503, true]);
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
      expect(calls()).toEqual([]);
    });
  });
});
