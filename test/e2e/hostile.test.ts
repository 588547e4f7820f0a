/**
 * Hostile clients are bounded, on both ports (both behind the HTTP front, src/api/front/): silent and
 * dripping connections are closed when their timeout says (test/e2e/front.test.ts has every kind of
 * half-sent request), idle h2 sessions too; a bad token is answered before the body is read; failed logins are limited per
 * client address (429 / RESOURCE_EXHAUSTED with Retry-After) and summarized in the log, not a line each.
 */
import http2 from 'node:http2';
import type net from 'node:net';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/server.js';
import { expectRejected } from '../helpers/expect.js';
import { tokenHashHex } from '../../src/core/keys/tokens.js';
import { captureLogger } from '../helpers/log-capture.js';
import { closedByServer, type Closed } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.com';
let h: Harness;
let alice: string;
const { log, lines } = captureLogger('debug');

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [] },
    env: {
      DNSPLANE_HEADERS_TIMEOUT: `${HEADERS_MS}ms`,
      DNSPLANE_REQUEST_TIMEOUT: `${REQUEST_MS}ms`,
      DNSPLANE_IDLE_TIMEOUT: `${IDLE_MS}ms`,
      DNSPLANE_LOGIN_BURST: '3',
      DNSPLANE_LOGIN_RATE: '0.01',
    },
    logger: log,
  });
  alice = await h.tenant('alice', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

const portOf = (url: string) => Number(new URL(url).port);

const HEADERS_MS = 1000;
const REQUEST_MS = 2000;
const IDLE_MS = 1000;
/** Never before the timeout (the server's clock starts after ours); within a generous margin on a busy machine. */
function closedWithin(c: Closed | number, timeoutMs: number): void {
  const ms = typeof c === 'number' ? c : c.ms;
  expect(ms).toBeGreaterThanOrEqual(timeoutMs - 250);
  expect(ms).toBeLessThanOrEqual(timeoutMs + 5000);
}

function drip(s: net.Socket): void {
  s.write('POST /dnsplane.v1.ZoneService/ListZones HTTP/1.1\r\nHost: x\r\n');
  const timer = setInterval(() => s.writable && s.write('X-Drip: 1\r\n'), 100);
  s.once('close', () => clearInterval(timer));
}

/** A request its port reads the body of (an RPC on the API, an apply on the webhook), whose body drips. */
const slowBody = (head: () => string) => (s: net.Socket) => {
  s.write(`${head()}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`);
  const timer = setInterval(() => s.writable && s.write(' '), 100);
  s.once('close', () => clearInterval(timer));
};

describe.each([
  ['API', () => portOf(h.server.url), () => `POST /dnsplane.v1.ZoneService/ListZones HTTP/1.1\r\nAuthorization: Bearer ${alice}`],
  ['webhook', () => portOf(h.webhookUrl), () => `POST /records HTTP/1.1\r\nAuthorization: Basic ${Buffer.from(`alice:${alice}`).toString('base64')}`],
])('%s port', (_name, port, bodyRequest) => {
  it('closes a connection that sends nothing, silently, after DNSPLANE_HEADERS_TIMEOUT', async () => {
    const c = await closedByServer(port());
    expect(c.got).toBe('');
    closedWithin(c, HEADERS_MS);
  });

  it('answers 408 to a connection that drips its headers, and closes it after DNSPLANE_HEADERS_TIMEOUT', async () => {
    const c = await closedByServer(port(), drip);
    expect(c.got).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    closedWithin(c, HEADERS_MS);
  });

  it('answers 408 to a connection that drips its body, and closes it after DNSPLANE_REQUEST_TIMEOUT', async () => {
    const c = await closedByServer(port(), slowBody(bodyRequest));
    expect(c.got).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    closedWithin(c, REQUEST_MS);
  });
});

describe('API port, h2', () => {
  it('closes a session that opens no stream after DNSPLANE_HEADERS_TIMEOUT, and one idle after its request after DNSPLANE_IDLE_TIMEOUT', async () => {
    const opened = performance.now();
    const idle = http2.connect(h.server.url);
    idle.on('error', () => undefined);
    await new Promise<void>((resolve) => idle.once('close', () => resolve()));
    closedWithin(performance.now() - opened, HEADERS_MS);

    const used = http2.connect(h.server.url);
    used.on('error', () => undefined);
    const status = await new Promise<number>((resolve, reject) => {
      const req = used.request({ ':method': 'GET', ':path': '/healthz' });
      req.on('response', (hd) => resolve(Number(hd[':status'])));
      req.on('error', reject);
      req.resume();
      req.end();
    });
    const answered = performance.now();
    expect(status).toBe(200);
    await new Promise<void>((resolve) => used.once('close', () => resolve()));
    closedWithin(performance.now() - answered, IDLE_MS);
  });
});

describe('bad tokens', () => {
  it('are answered before the body is read: 401 for an 8 MiB request whose body never comes', async () => {
    const { got: answer } = await closedByServer(portOf(h.server.url), (s) => {
      s.write(
        'POST /dnsplane.v1.ZoneService/ListZones HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dnsp_wrong0\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n\r\n{',
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401/);
    expect(answer).toMatch(/"code":"unauthenticated"/);
  });

  it('are limited per address after a burst: RESOURCE_EXHAUSTED with Retry-After on the API, 429 on the webhook; every valid token still works from there; one summary line', async () => {
    // The earlier test spent one failure of this address's burst of 3.
    const good = h.zoneClient(alice);
    expect((await good.listZones({})).zones).toHaveLength(1);
    const bad = h.zoneClient('dnsp_wrong1');
    await expectRejected(bad.listZones({}), Code.Unauthenticated, /invalid or disabled token/);
    await expectRejected(h.zoneClient(undefined).listZones({}), Code.Unauthenticated, /missing credentials/);
    const limited = await expectRejected(bad.listZones({}), Code.ResourceExhausted, /too many failed logins from 127\.0\.0\.1; try again in \d+ s/);
    expect(Number(limited.metadata.get('retry-after'))).toBeGreaterThan(0);
    await expectRejected(h.zoneClient('dnsp_wrong1', 'grpc').listZones({}), Code.ResourceExhausted, /too many failed logins/);
    // A valid token is never refused for its address's failures: alice, who called before, and bob,
    // who never called — the token cache holds every enabled tenant's token (core/tenants/token-warmth.ts),
    // once the tenant's creation has been heard.
    expect((await good.listZones({})).zones).toHaveLength(1);
    const bob = await h.tenant('bob', [ZONE]);
    await until('the token cache holds the new tenant', () => h.server.ctx.tokens?.get(tokenHashHex(bob))?.name === 'bob');
    expect((await h.zoneClient(bob).listZones({})).zones).toHaveLength(1);
    // A made-up token is still refused without a lookup.
    await expectRejected(h.zoneClient('dnsp_wrong3').listZones({}), Code.ResourceExhausted, /too many failed logins/);

    const res = await fetch(`${h.webhookUrl}/records`, { headers: { authorization: `Basic ${Buffer.from('alice:dnsp_wrong2').toString('base64')}` } });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);

    const m = await h.server.metrics.registry.getSingleMetric('dnsplane_failed_logins_total')?.get();
    expect(m?.values.find((v) => v.labels['outcome'] === 'failed')?.value).toBe(3);
    expect(m?.values.find((v) => v.labels['outcome'] === 'limited')?.value).toBeGreaterThanOrEqual(4);

    // Summaries, not a line per failure: flushed on the limiter's own clock, waited for here.
    await until('a failed-logins summary with refusals while limited', () =>
      lines.some((l) => l.msg.startsWith('failed logins: ') && Number(l['refusedWhileLimited']) > 0),
    );
    const summaries = lines.filter((l) => l.msg.startsWith('failed logins: '));
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.length).toBeLessThanOrEqual(3);
    expect(summaries[0]).toMatchObject({ level: 40, top: [{ address: '127.0.0.1' }] });
    expect(lines.filter((l) => l.level >= 30 && /webhook request|rpc rejected/.test(l.msg) && [401, 429].includes(Number(l['status'])))).toEqual([]);
  });
});
