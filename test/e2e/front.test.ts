/**
 * The HTTP front (src/api/front/) as hostile clients meet it, on both HTTP ports, HTTP/1.1 and h2c:
 * a connection that sends nothing, half a header, the request line only, complete headers and half a
 * body, or one header line a second, is closed within its timeout (DNSPLANE_HEADERS_TIMEOUT or
 * DNSPLANE_REQUEST_TIMEOUT) — never before, and no later than a generous margin on a busy machine —
 * while a good client is served meanwhile; the connection caps refuse what is over them, counted
 * and summarized in one log line.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/server.js';
import { captureLogger } from '../helpers/log-capture.js';
import { closedByServer, H2_HALF_HEADERS, H2_PING, H2_PREFACE, H2_SETTINGS, trickle, type Closed } from '../helpers/raw-http.js';
import { seriesValue } from '../helpers/prometheus.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.com';
const HEADERS_MS = 2000;
const REQUEST_MS = 4000;
const IDLE_MS = 6000;
/** The server's clock starts when it accepts, after ours: it never closes before the timeout by ours. */
const SLACK_MS = 250;
/** A busy 2-core machine: a close may come this much after its timeout. */
const MARGIN_MS = 5000;
const PER_ADDRESS = 40;

let h: Harness;
let alice: string;
const { log, lines } = captureLogger('info');

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [] },
    env: {
      DNSPLANE_HEADERS_TIMEOUT: `${HEADERS_MS}ms`,
      DNSPLANE_REQUEST_TIMEOUT: `${REQUEST_MS}ms`,
      DNSPLANE_IDLE_TIMEOUT: `${IDLE_MS}ms`,
      DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    },
    logger: log,
  });
  alice = await h.tenant('alice', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

const portOf = (url: string) => Number(new URL(url).port);

function closedWithin(c: Closed, timeoutMs: number): void {
  expect(c.ms).toBeGreaterThanOrEqual(timeoutMs - SLACK_MS);
  expect(c.ms).toBeLessThanOrEqual(timeoutMs + MARGIN_MS);
}

/** A good client's call on each port, made while the hostile connections are open. */
async function goodClientServed(): Promise<void> {
  expect((await h.zoneClient(alice).listZones({})).zones.map((z) => z.name)).toEqual([ZONE]);
  const res = await fetch(`${h.webhookUrl}/records`, { headers: { authorization: `Basic ${Buffer.from(`alice:${alice}`).toString('base64')}` } });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

const ports = [
  ['API', () => portOf(h.server.url), '/dnsplane.v1.ZoneService/ListZones', () => `Authorization: Bearer ${alice}\r\nContent-Type: application/json`],
  [
    'webhook',
    () => portOf(h.webhookUrl),
    '/records',
    () => `Authorization: Basic ${Buffer.from(`alice:${alice}`).toString('base64')}\r\nContent-Type: application/json`,
  ],
] as const;

describe.each(ports)('%s port, HTTP/1.1', (_name, port, path, auth) => {
  it('closes, each within its timeout, a connection that sends nothing, half a header, the request line only, a header line a second, or half a body; a good client is served meanwhile', async () => {
    const [nothing, halfHeader, requestLine, dripping, halfBody] = await Promise.all([
      closedByServer(port()),
      closedByServer(port(), (s) => s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n`)),
      closedByServer(port(), (s) => s.write('GET /healthz HTTP/1.1\r\n')),
      closedByServer(port(), (s) => trickle(s, `POST ${path} HTTP/1.1\r\nHost: x\r\n`, 'X-Drip: 1\r\n', 1000)),
      closedByServer(port(), (s) => s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${auth()}\r\nContent-Length: 100\r\n\r\n{"a`)),
      goodClientServed(),
    ]);
    closedWithin(nothing, HEADERS_MS);
    expect(nothing.got).toBe('');
    for (const c of [halfHeader, requestLine, dripping]) {
      closedWithin(c, HEADERS_MS);
      expect(c.got).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(c.error).toBeUndefined();
    }
    closedWithin(halfBody, REQUEST_MS);
    expect(halfBody.got).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });

  it('gives the next request on a kept-alive connection its headers timeout from its first byte, not the idle timeout', async () => {
    let sentHalf = 0;
    const c = await closedByServer(port(), (s) => {
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      s.once('data', () =>
        setTimeout(() => {
          sentHalf = performance.now();
          s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
        }, 500),
      );
    });
    expect(c.got).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*ok\n/);
    expect(c.got).toMatch(/HTTP\/1\.1 408 Request Timeout\r\n/);
    closedWithin({ ...c, ms: performance.now() - sentHalf }, HEADERS_MS);
  });
});

describe('API port, HTTP/1.1 idle', () => {
  it('closes a kept-alive connection idle for DNSPLANE_IDLE_TIMEOUT after its answer', async () => {
    let answered = 0;
    const c = await closedByServer(portOf(h.server.url), (s) => {
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      s.once('data', () => (answered = performance.now()));
    });
    const idleFor = performance.now() - answered;
    expect(c.got).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(c.got).toMatch(/Keep-Alive: timeout=6\r\n/);
    expect(idleFor).toBeGreaterThanOrEqual(IDLE_MS - SLACK_MS);
    expect(idleFor).toBeLessThanOrEqual(IDLE_MS + MARGIN_MS);
  });
});

describe('API port, h2c', () => {
  it('closes a session that sends half a preface, half a HEADERS frame, or pings every second but no request, each within DNSPLANE_HEADERS_TIMEOUT; a good client is served meanwhile', async () => {
    const port = portOf(h.server.url);
    const [halfPreface, halfHeaders, pinging] = await Promise.all([
      closedByServer(port, (s) => s.write(H2_PREFACE.slice(0, 16))),
      closedByServer(port, (s) => s.write(Buffer.concat([Buffer.from(H2_PREFACE), H2_SETTINGS(), H2_HALF_HEADERS()]))),
      closedByServer(port, (s) => {
        s.write(Buffer.concat([Buffer.from(H2_PREFACE), H2_SETTINGS()]));
        const timer = setInterval(() => s.writable && s.write(H2_PING()), 1000);
        s.once('close', () => clearInterval(timer));
      }),
      goodClientServed(),
    ]);
    for (const c of [halfPreface, halfHeaders, pinging]) closedWithin(c, HEADERS_MS);
    // The server spoke HTTP/2 to the last two (its SETTINGS, then GOAWAY: type 7).
    expect(Buffer.from(pinging.got, 'latin1').includes(Buffer.from([0x07, 0x00, 0x00, 0x00, 0x00, 0x00]))).toBe(true);
  });

  it('cancels a stream whose body has not all arrived within DNSPLANE_REQUEST_TIMEOUT, then closes the session once idle', async () => {
    const session = http2.connect(h.server.url);
    session.on('error', () => undefined);
    const started = performance.now();
    const sessionClosed = new Promise<number>((resolve) => session.once('close', () => resolve(performance.now() - started)));
    const stream = session.request({
      ':method': 'POST',
      ':path': '/dnsplane.v1.ZoneService/ListZones',
      authorization: `Bearer ${alice}`,
      'content-type': 'application/json',
    });
    stream.on('error', () => undefined);
    stream.resume();
    stream.write('{"a');
    const { ms, code } = await new Promise<{ ms: number; code: number }>((resolve) =>
      stream.once('close', () => resolve({ ms: performance.now() - started, code: stream.rstCode ?? -1 })),
    );
    expect(code).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(ms).toBeGreaterThanOrEqual(REQUEST_MS - SLACK_MS);
    expect(ms).toBeLessThanOrEqual(REQUEST_MS + MARGIN_MS);
    const closedAt = await sessionClosed;
    expect(closedAt - ms).toBeGreaterThanOrEqual(IDLE_MS - SLACK_MS - 1000);
    expect(closedAt).toBeLessThanOrEqual(ms + IDLE_MS + MARGIN_MS);
  });
  // (an h2 session idle after its last stream: test/e2e/hostile.test.ts)
});

describe('connection caps', () => {
  it(`refuses connections from one address past DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS (${PER_ADDRESS}) at once, counts them, logs one summary line; the port serves again once they are gone`, async () => {
    const port = portOf(h.server.url);
    const metric = async (name: string, labels: Record<string, string>) => seriesValue(await h.server.metrics.registry.metrics(), name, labels);
    const refusedBefore = (await metric('dnsplane_http_connections_refused_total', { port: 'api', reason: 'per_address' })) ?? 0;
    // Connections this process still holds from the tests before (kept alive by its clients) count too.
    const heldBefore = (await metric('dnsplane_http_connections', { port: 'api' })) ?? 0;
    const refused = 5 + heldBefore;
    const clients = Array.from({ length: PER_ADDRESS + 5 }, () => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      return { socket, closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) };
    });
    // The server holds PER_ADDRESS of them and closes the rest as they arrive.
    await until('the server to hold its cap', async () => (await metric('dnsplane_http_connections', { port: 'api' })) === PER_ADDRESS);
    await until('the refused connections to be closed', () => clients.filter((c) => c.socket.destroyed || c.socket.readyState === 'closed').length === refused);
    expect(await metric('dnsplane_http_connections_refused_total', { port: 'api', reason: 'per_address' })).toBe(refusedBefore + refused);
    // The webhook port counts its own connections: served meanwhile.
    expect((await fetch(`${h.webhookUrl}/healthz`)).status).toBe(200);
    for (const c of clients) c.socket.destroy();
    await Promise.all(clients.map((c) => c.closed));
    await until(
      'the API port to serve again',
      async () =>
        (await fetch(`${h.server.url}/healthz`)
          .then((r) => r.status)
          .catch(() => 0)) === 200,
    );
    const summary = (l: { msg: string }) => l.msg.includes('connections refused over the connection caps (summary)');
    await until('the summary line', () => lines.some(summary), 20_000);
    const summaries = lines.filter(summary);
    expect(summaries).toHaveLength(1);
    // (the good client's first tries, while the cap was still full, may be in it too)
    expect(summaries[0]).toMatchObject({ level: 40, port: 'api', reasons: { total: 0 }, top: [{ address: '127.0.0.1' }] });
    expect(Number(summaries[0]!['refused'])).toBeGreaterThanOrEqual(refused);
  }, 40_000);
});
