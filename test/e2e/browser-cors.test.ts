/**
 * CORS as a real browser enforces it: headless Chromium loads a page from one origin that calls the
 * API on another (a different port). From an origin listed in DNSPLANE_CORS_ORIGINS, the preflighted
 * calls succeed (Connect POST and GET with a bearer token, binary gRPC-Web); from any other origin
 * the browser blocks every call. (The exposed response headers are checked at the HTTP level in
 * browser-reach.test.ts: this server sends gRPC-Web statuses in the body's trailer frame.)
 *
 * Needs Debian's chromium (`apt-get install chromium`); where it is absent the test says so and is
 * skipped.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/server.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const ZONE = 'example.com';

/** The page's script: three calls to the API, their outcomes written into <pre id="out">. */
const script = (api: string, token: string) => `
const out = {};
const show = () => { document.getElementById('out').textContent = JSON.stringify(out); };
const auth = { authorization: 'Bearer ${token}' };
(async () => {
  try {
    const r = await fetch('${api}/dnsplane.v1.ZoneService/ListZones', { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'connect-protocol-version': '1' }, body: '{}' });
    out.post = { status: r.status, tenant: (await r.json()).tenant };
  } catch (e) { out.post = { error: String(e.message) }; }
  try {
    const q = '?connect=v1&encoding=json&message=' + encodeURIComponent(JSON.stringify({ zones: ['${ZONE}'], includeForeign: true }));
    const r = await fetch('${api}/dnsplane.v1.ZoneService/Records' + q, { headers: auth });
    out.get = { status: r.status, zone: (await r.json()).zones[0].zone };
  } catch (e) { out.get = { error: String(e.message) }; }
  try {
    const r = await fetch('${api}/dnsplane.v1.ZoneService/ListZones', { method: 'POST', headers: { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1' }, body: new Uint8Array([0, 0, 0, 0, 0]) });
    // gRPC-Web carries the status in a trailer frame (flag 0x80) at the end of the body.
    const body = new Uint8Array(await r.arrayBuffer());
    let trailer = '';
    for (let i = 0; i < body.length; ) {
      const len = new DataView(body.buffer, i + 1, 4).getUint32(0);
      if (body[i] & 0x80) trailer = new TextDecoder().decode(body.subarray(i + 5, i + 5 + len));
      i += 5 + len;
    }
    out.grpcWeb = { status: r.status, grpcStatus: (/grpc-status:\\s*(\\d+)/i.exec(trailer) || [])[1] || r.headers.get('grpc-status') };
  } catch (e) { out.grpcWeb = { error: String(e.message) }; }
  out.done = true;
  show();
})();
`;

interface Page {
  origin: string;
  close(): Promise<void>;
}

/** Serves one page at / on an ephemeral port: its origin is http://127.0.0.1:PORT. */
async function servePage(body: () => string): Promise<Page> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><body><pre id="out">pending</pre><script>${body()}</script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    origin: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Loads a page in headless Chromium, lets its script run, and returns what it wrote. */
function runInChromium(
  url: string,
): Promise<Record<string, { status?: number; error?: string; tenant?: string; zone?: string; grpcStatus?: string | null } | boolean>> {
  const profile = mkdtempSync(path.join(tmpdir(), 'dnsplane-chromium-'));
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--user-data-dir=${profile}`,
    '--virtual-time-budget=15000',
    '--dump-dom',
    url,
  ];
  return new Promise((resolve, reject) => {
    execFile(CHROMIUM!, args, { timeout: 120_000, maxBuffer: 1 << 20 }, (err, stdout) => {
      rmSync(profile, { recursive: true, force: true });
      const m = /<pre id="out">([^<]*)<\/pre>/.exec(stdout);
      if (!m || m[1] === 'pending') return reject(new Error(`the page did not finish: ${err?.message ?? stdout.slice(0, 500)}`));
      resolve(JSON.parse(m[1]!.replace(/&quot;/g, '"').replace(/&amp;/g, '&')));
    });
  });
}

describe.skipIf(!CHROMIUM)('CORS in headless Chromium (skipped without Debian chromium: apt-get install chromium)', () => {
  let h: Harness;
  let allowed: Page;
  let other: Page;
  let token = '';

  beforeAll(async () => {
    // The pages exist first: the server is told the allowed page's origin (its port is ephemeral).
    allowed = await servePage(() => script(h.server.url, token));
    other = await servePage(() => script(h.server.url, token));
    h = await startHarness({
      zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] },
      env: { DNSPLANE_CORS_ORIGINS: allowed.origin },
    });
    token = await h.tenant('alice', [ZONE]);
  });
  afterAll(async () => {
    await h?.close();
    await allowed?.close();
    await other?.close();
  });

  it('a listed origin calls the API: Connect POST and GET with a token, binary gRPC-Web', async () => {
    const out = await runInChromium(`${allowed.origin}/`);
    expect(out).toEqual({
      post: { status: 200, tenant: 'alice' },
      get: { status: 200, zone: ZONE },
      grpcWeb: { status: 200, grpcStatus: '16' }, // binary gRPC-Web without a token: UNAUTHENTICATED
      done: true,
    });
  }, 150_000);

  it('any other origin is blocked by the browser', async () => {
    const out = await runInChromium(`${other.origin}/`);
    expect(out).toEqual({
      post: { error: 'Failed to fetch' },
      get: { error: 'Failed to fetch' },
      grpcWeb: { error: 'Failed to fetch' },
      done: true,
    });
  }, 150_000);
});
