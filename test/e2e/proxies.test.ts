/**
 * Many clusters behind one ingress (issue 41), with real proxies from Debian's packages in front of a
 * real server: HAProxy sending PROXY protocol v2 and v1 and, in HTTP mode, X-Forwarded-For; nginx's
 * stream module sending PROXY v1 and its HTTP proxy writing X-Forwarded-For. DNSPLANE_TRUSTED_PROXIES
 * names 127.0.0.1, where the proxies connect from; clients connect to the proxies from their own
 * loopback addresses (127.0.0.2 …), which dnsplane must know them by.
 *
 * Proved: forty tenants polling through one proxy while a cluster with a stale token retries are all
 * answered, on the API and the webhook port, and the limiter's summary names the stale client by its
 * real address; the same with all of them behind one NAT address; a spoofed X-Forwarded-For cannot
 * make one client look like another; forwarded headers and PROXY headers from a peer not trusted are
 * not believed; a garbage PROXY header closes its connection only; the journal's "from" and "last seen"
 * name the client.
 */
import http from 'node:http';
import net from 'node:net';
import { Code, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tokenHashHex } from '../../src/core/keys/tokens.js';
import { rotateTenantToken } from '../../src/core/tenants/tenants.js';
import { Policy, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { describeWithTools } from '../helpers/dns-tools.js';
import { expectRejected } from '../helpers/expect.js';
import { captureLogger } from '../helpers/log-capture.js';
import { PROXIES_INSTALL, startHaproxy, startNginx, type RealProxy } from '../helpers/real-proxies.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { bearer } from '../helpers/sim-server.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.com';
const TENANTS = 40;
const POLLS = 5;

describeWithTools(
  ['haproxy', 'nginx'],
  'behind real proxies (DNSPLANE_TRUSTED_PROXIES=127.0.0.1)',
  () => {
    let h: Harness;
    const tokens: string[] = [];
    let staleToken: string;
    const proxies: RealProxy[] = [];
    const { log, lines } = captureLogger('info');

    beforeAll(async () => {
      h = await startHarness({
        zones: { [ZONE]: [] },
        env: { DNSPLANE_TRUSTED_PROXIES: '127.0.0.1', DNSPLANE_LOGIN_BURST: '3', DNSPLANE_LOGIN_RATE: '0.01', DNSPLANE_HEALTH_INTERVAL: 'off' },
        logger: log,
      });
      for (let i = 0; i < TENANTS; i++) tokens.push(await h.tenant(`c${i}`, [ZONE]));
      // A cluster whose token was rotated and whose Secret was not updated.
      await h.tenant('stale', [ZONE]);
      staleToken = (await rotateTenantToken(h.server.ctx.pool, 'stale')).token;
      await rotateTenantToken(h.server.ctx.pool, 'stale');
      await until('the token cache holds every tenant', () => tokens.every((t) => h.server.ctx.tokens?.get(tokenHashHex(t)) !== undefined));
    });

    afterAll(async () => {
      await Promise.all(proxies.map((p) => p.close()));
      await h?.close();
    });

    const proxy = async (p: Promise<RealProxy>) => {
      const started = await p;
      proxies.push(started);
      return started;
    };
    const apiPort = () => Number(new URL(h.server.url).port);
    const webhookPort = () => Number(new URL(h.webhookUrl).port);

    /** A Records client through `url` that connects from `from` (its own loopback address). */
    const zoneClient = (url: string, token: string, from: string): Client<typeof ZoneService> =>
      createClient(
        ZoneService,
        createConnectTransport({ baseUrl: url, httpVersion: '1.1', nodeOptions: { localAddress: from }, interceptors: [bearer(token)] }),
      );

    /** Retries `call` as fast as it is answered (as a stale cluster does) until stop(); says how it was answered. */
    const retrying = (call: () => Promise<unknown>) => {
      let stopped = false;
      const codes = new Map<string, number>();
      const loop = (async () => {
        while (!stopped) {
          const code = await call().then(
            () => 'ok',
            (e: unknown) => (typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : 'error'),
          );
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      })();
      return {
        codes,
        async stop() {
          stopped = true;
          await loop;
          return codes;
        },
      };
    };

    /** The limiter's summaries since `from` that name `address` among the worst. */
    const summariesNaming = (address: string, from: number) =>
      lines.slice(from).filter((l) => l.msg.startsWith('failed logins: ') && (l['top'] as Array<{ address: string }>).some((t) => t.address === address));

    it('API through HAProxy send-proxy-v2: forty tenants polling while a stale token retries are all answered; the summary names the stale client, not the proxy', async () => {
      const haproxy = await proxy(startHaproxy(apiPort(), 'send-proxy-v2'));
      const mark = lines.length;
      const stale = retrying(() => zoneClient(haproxy.url, staleToken, '127.0.0.99').records({}));
      await until('the stale client limited', () => (stale.codes.get(String(Code.ResourceExhausted)) ?? 0) > 0);
      const answered = await Promise.all(
        tokens.map(async (token, i) => {
          const client = zoneClient(haproxy.url, token, `127.0.0.${10 + i}`);
          let ok = 0;
          for (let p = 0; p < POLLS; p++) if ((await client.records({})).zones.length === 1) ok++;
          return ok;
        }),
      );
      const codes = await stale.stop();
      expect(answered).toEqual(tokens.map(() => POLLS));
      expect(codes.get(String(Code.Unauthenticated))).toBe(3);
      await until('a summary naming the stale client by its address', () => summariesNaming('127.0.0.99', mark).length > 0);
      // The first summary goes out at the first failure, the rest at the limiter's interval: summed.
      const tops = summariesNaming('127.0.0.99', mark).flatMap((l) => l['top'] as Array<{ address: string; failures: number; refused: number }>);
      expect(tops.map((t) => t.address)).not.toContain('127.0.0.1');
      await until(
        'the summaries count its 3 failures',
        () =>
          summariesNaming('127.0.0.99', mark)
            .flatMap((l) => l['top'] as Array<{ address: string; failures: number }>)
            .filter((t) => t.address === '127.0.0.99')
            .reduce((n, t) => n + t.failures, 0) === 3,
      );
    });

    it('all of them behind one NAT address, through HAProxy send-proxy (v1): every valid tenant answered, the stale token refused', async () => {
      const haproxy = await proxy(startHaproxy(apiPort(), 'send-proxy'));
      const nat = '127.0.0.60';
      const stale = retrying(() => zoneClient(haproxy.url, staleToken, nat).records({}));
      await until('the NAT address limited', () => (stale.codes.get(String(Code.ResourceExhausted)) ?? 0) > 0);
      const answered = await Promise.all(
        tokens.map(async (token) => {
          const client = zoneClient(haproxy.url, token, nat);
          for (let p = 0; p < POLLS; p++) await client.records({});
          return true;
        }),
      );
      await stale.stop();
      expect(answered.every(Boolean)).toBe(true);
      // A made-up token from there is still refused before any lookup.
      await expectRejected(zoneClient(haproxy.url, 'dnsp_made_up', nat).records({}), Code.ResourceExhausted, /too many failed logins from 127\.0\.0\.60/);
    });

    /** GET /records on the webhook through `url`, from `from`, as tenant:token. */
    const webhookGet = (url: string, user: string, token: string, from: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.get(`${url}/records`, {
          localAddress: from,
          headers: { accept: 'application/external.dns.webhook+json;version=1', authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}` },
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });

    it('webhook port through nginx stream proxy_protocol: forty tenants answered while a stale password retries; the summary names it', async () => {
      const nginx = await proxy(startNginx(webhookPort(), 'proxy_protocol'));
      const mark = lines.length;
      const stale = retrying(async () => {
        const status = await webhookGet(nginx.url, 'stale', staleToken, '127.0.0.98');
        if (status !== 200) throw Object.assign(new Error(String(status)), { code: status });
      });
      await until('the stale client limited', () => (stale.codes.get('429') ?? 0) > 0);
      const statuses = await Promise.all(tokens.map((token, i) => webhookGet(nginx.url, `c${i}`, token, `127.0.1.${10 + i}`)));
      const codes = await stale.stop();
      expect(statuses).toEqual(tokens.map(() => 200));
      expect(codes.get('401')).toBe(3);
      await until('a summary naming the stale client', () => summariesNaming('127.0.0.98', mark).length > 0);
    });

    it('HAProxy option forwardfor: a spoofed X-Forwarded-For cannot make a client look like one already limited; an apply journals its client', async () => {
      const haproxy = await proxy(startHaproxy(apiPort(), 'forwardfor'));
      const limited = '127.0.0.77';
      for (let i = 0; i < 3; i++) await expectRejected(zoneClient(haproxy.url, `dnsp_bad${i}`, limited).listZones({}), Code.Unauthenticated, /invalid/);
      await expectRejected(zoneClient(haproxy.url, 'dnsp_bad9', limited).listZones({}), Code.ResourceExhausted, /too many failed logins from 127\.0\.0\.77/);
      // Another client says it is the limited one: HAProxy appends its real address, which is believed.
      const spoofing = createClient(
        ZoneService,
        createConnectTransport({
          baseUrl: haproxy.url,
          httpVersion: '1.1',
          nodeOptions: { localAddress: '127.0.0.21' },
          interceptors: [
            bearer('dnsp_bad_spoof'),
            (next) => (req) => {
              req.header.set('x-forwarded-for', limited);
              return next(req);
            },
          ],
        }),
      );
      await expectRejected(spoofing.listZones({}), Code.Unauthenticated, /invalid or disabled token/);

      // A tenant that has not called yet: its first call's "last seen" is written at once.
      const client = zoneClient(haproxy.url, await h.tenant('fresh', [ZONE]), '127.0.0.23');
      const endpoint = { dnsName: `via-haproxy.${ZONE}`, recordType: 'A', targets: ['192.0.2.23'], ttl: 300, setIdentifier: '', labels: {} };
      const applied = await client.apply({
        source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [endpoint] } } } },
      });
      const journalId = applied.zones[0]!.journalId;
      expect((await client.getApply({ journalId })).clientAddress).toBe('127.0.0.23');
      await until('last seen from the client', async () => (await store.getTenantByName(h.server.ctx.pool, 'fresh'))?.lastSeenFrom === '127.0.0.23');
    });

    it('nginx X-Forwarded-For on the webhook port: an apply journals the client behind nginx', async () => {
      const nginx = await proxy(startNginx(webhookPort(), 'forwardfor'));
      const body = JSON.stringify({
        create: [{ dnsName: `via-nginx.${ZONE}`, targets: ['192.0.2.24'], recordType: 'A', recordTTL: 300 }],
        updateOld: [],
        updateNew: [],
        delete: [],
      });
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${nginx.url}/records`, {
          method: 'POST',
          localAddress: '127.0.0.24',
          headers: {
            'content-type': 'application/external.dns.webhook+json;version=1',
            authorization: `Basic ${Buffer.from(`c1:${tokens[1]}`).toString('base64')}`,
          },
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
      expect(status).toBe(204);
      const { rows } = await h.server.ctx.pool.query<{ from: string }>(
        `SELECT j.intent->>'from' AS from FROM journal j JOIN tenants t ON t.id = j.tenant_id WHERE t.name = 'c1' ORDER BY j.id DESC LIMIT 1`,
      );
      expect(rows[0]?.from).toBe('127.0.0.24');
    });

    it('from a peer not trusted, forwarded headers are ignored: the limiter keys on the peer', async () => {
      const direct = (from: string, token: string, forwardedFor: string) =>
        createClient(
          ZoneService,
          createConnectTransport({
            baseUrl: h.server.url,
            httpVersion: '1.1',
            nodeOptions: { localAddress: from },
            interceptors: [
              bearer(token),
              (next) => (req) => {
                req.header.set('x-forwarded-for', forwardedFor);
                return next(req);
              },
            ],
          }),
        );
      for (let i = 0; i < 3; i++) await expectRejected(direct('127.0.0.30', `dnsp_x${i}`, `203.0.113.${i}`).listZones({}), Code.Unauthenticated, /invalid/);
      await expectRejected(direct('127.0.0.30', 'dnsp_x9', '203.0.113.9').listZones({}), Code.ResourceExhausted, /too many failed logins from 127\.0\.0\.30;/);
      // Naming the limited peer in the header from elsewhere changes nothing either.
      await expectRejected(direct('127.0.0.31', 'dnsp_y', '127.0.0.30').listZones({}), Code.Unauthenticated, /invalid/);
    });

    /** Writes `bytes` on a fresh connection from `from` to the API port; what came back before the server closed it. */
    const rawExchange = (from: string, bytes: Buffer | string) =>
      new Promise<string>((resolve, reject) => {
        const s = net.connect({ port: apiPort(), host: '127.0.0.1', localAddress: from });
        let got = '';
        s.on('data', (d) => (got += d.toString('latin1')));
        s.on('error', reject);
        s.on('close', () => resolve(got));
        s.on('connect', () => s.write(bytes));
      });

    it('a PROXY header from a peer not trusted is refused; a garbage one from a trusted peer closes that connection only', async () => {
      const mark = lines.length;
      // A kept-alive connection open before, from the trusted peer: it goes on being served.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const healthz = () =>
        new Promise<number>((resolve, reject) =>
          http
            .get(`${h.server.url}/healthz`, { agent }, (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            })
            .on('error', reject),
        );
      expect(await healthz()).toBe(200);

      const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
      expect(await rawExchange('127.0.0.32', `PROXY TCP4 192.0.2.1 127.0.0.1 1234 80\r\n${request}`)).toBe('');
      expect(await rawExchange('127.0.0.1', `PROXY TCP4 garbage\r\n${request}`)).toBe('');
      expect(await rawExchange('127.0.0.1', `PROXY TCP4 192.0.2.1 127.0.0.1 1234 80\r\n${request}`)).toMatch(/^HTTP\/1\.1 200/);
      expect(await rawExchange('127.0.0.33', request)).toMatch(/^HTTP\/1\.1 200/);
      expect(await healthz()).toBe(200);
      agent.destroy();

      const logged = lines.slice(mark);
      expect(logged).toContainEqual(expect.objectContaining({ level: 40, peer: '127.0.0.32', reason: 'proxy_untrusted' }));
      expect(logged).toContainEqual(
        expect.objectContaining({ level: 40, peer: '127.0.0.1', reason: 'proxy_malformed', detail: expect.stringMatching(/needs source, destination/) }),
      );
      const refused = await h.server.metrics.registry.getSingleMetric('dnsplane_http_connections_refused_total')?.get();
      expect(refused?.values.find((v) => v.labels['reason'] === 'proxy_untrusted' && v.labels['port'] === 'api')?.value).toBe(1);
      expect(refused?.values.find((v) => v.labels['reason'] === 'proxy_malformed' && v.labels['port'] === 'api')?.value).toBe(1);
    });
  },
  PROXIES_INSTALL,
);
