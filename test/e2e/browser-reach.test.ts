/**
 * Reaching the API from a browser and from what sits in front of it: CORS for the origins of
 * DNSPLANE_CORS_ORIGINS only (preflight answered, the Connect/gRPC-Web headers exposed),
 * application/grpc-web-text (frames made here by hand from the gRPC-Web spec, base64 as Google's
 * grpc-web client sends them), Connect GET for the read-only RPCs (and only those), and 404/405/415
 * answers whose text says what is expected.
 */
import diagnostics from 'node:diagnostics_channel';
import { fromBinary, toBinary, create, type DescService } from '@bufbuild/protobuf';
import { MethodOptions_IdempotencyLevel } from '@bufbuild/protobuf/wkt';
import { createClient, createConnectRouter } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, parseCorsOrigins } from '../../src/config/config.js';
import {
  ListZonesRequestSchema,
  ListZonesResponseSchema,
  RecordsRequestSchema,
  RecordsResponseSchema,
  ZoneService,
} from '../../src/gen/dnsplane/v1/zone_pb.js';
import { HealthCheckRequestSchema, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js';
import { registerServices } from '../../src/api/services.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { bearer } from '../helpers/sim-server.js';

const ZONE = 'example.com';
const CONSOLE = 'https://console.example.com';
const READ_ONLY = [
  'dnsplane.v1.ZoneService/ListZones',
  'dnsplane.v1.ZoneService/Records',
  'dnsplane.v1.ZoneService/GetApply',
  'dnsplane.v1.AdminService/ListPlans',
  'dnsplane.v1.AdminService/GetPlan',
  'dnsplane.v1.AdminService/ListTenants',
  'dnsplane.v1.AdminService/ListOwnership',
  'dnsplane.v1.AdminService/ListJournal',
  'dnsplane.v1.AdminService/ListTsigKeys',
  'dnsplane.v1.AdminService/ListOvhKeys',
  'dnsplane.v1.AdminService/ListOvhDrafts',
  'dnsplane.v1.AdminService/ExportZone',
  'dnsplane.v1.AdminService/ListProtectedNames',
  'dnsplane.v1.AdminService/ListTrustedSubjects',
  'dnsplane.v1.AdminService/ListOvhAccounts',
  'dnsplane.v1.AdminService/ListOrphans',
];

let h: Harness;
let alice: string;
let admin: string;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] },
    env: { DNSPLANE_CORS_ORIGINS: `${CONSOLE}, http://localhost:5173` },
  });
  alice = await h.tenant('alice', [ZONE]);
  admin = await h.tenant('root', [], { admin: true });
});
afterAll(async () => {
  await h?.close();
});

const url = (path: string) => `${h.server.url}${path}`;

describe('CORS', () => {
  const preflight = (origin: string, method = 'POST') =>
    fetch(url('/dnsplane.v1.ZoneService/ListZones'), {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type,connect-protocol-version' },
    });

  it('answers the preflight of a listed origin with the methods and headers Connect and gRPC-Web send', async () => {
    const res = await preflight(CONSOLE);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    expect(res.headers.get('access-control-allow-methods')?.split(/,\s*/)).toEqual(expect.arrayContaining(['POST', 'GET']));
    const allowed = res.headers.get('access-control-allow-headers')?.toLowerCase().split(/,\s*/) ?? [];
    for (const name of ['authorization', 'content-type', 'connect-protocol-version', 'connect-timeout-ms', 'x-grpc-web', 'x-user-agent', 'grpc-timeout']) {
      expect(allowed).toContain(name);
    }
    expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(res.headers.get('vary')).toMatch(/origin/i);
    expect((await preflight('http://localhost:5173', 'GET')).headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
  });

  it('refuses the preflight of any other origin, saying how to allow it', async () => {
    const res = await preflight('https://evil.example.net');
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(await res.text()).toMatch(/https:\/\/evil\.example\.net.*DNSPLANE_CORS_ORIGINS/);
  });

  it('exposes the gRPC-Web and Connect headers on the answer to a listed origin only', async () => {
    const call = (origin: string) =>
      fetch(url('/dnsplane.v1.ZoneService/ListZones'), {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json', authorization: `Bearer ${alice}` },
        body: '{}',
      });
    const ok = await call(CONSOLE);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    const exposed = ok.headers.get('access-control-expose-headers')?.toLowerCase().split(/,\s*/) ?? [];
    expect(exposed).toEqual(expect.arrayContaining(['grpc-status', 'grpc-message', 'grpc-status-details-bin']));
    expect(((await ok.json()) as { tenant: string }).tenant).toBe('alice');

    const other = await call('https://evil.example.net');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('access-control-expose-headers')).toBeNull();
  });

  it('is off by default: no origin is allowed', async () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
  });

  it('DNSPLANE_CORS_ORIGINS: origins are normalized; a path, a bare host or * mixed with others is refused naming the field', () => {
    expect(parseCorsOrigins('https://Console.Example.com:443, http://localhost:5173/')).toEqual(['https://console.example.com', 'http://localhost:5173']);
    expect(parseCorsOrigins('*')).toEqual(['*']);
    expect(() => parseCorsOrigins('https://a.example.com/ui')).toThrow(/DNSPLANE_CORS_ORIGINS\[0\].*no path/);
    expect(() => parseCorsOrigins('https://a.example.com,console.example.com')).toThrow(/DNSPLANE_CORS_ORIGINS\[1\].*origin like/);
    expect(() => parseCorsOrigins('ftp://a.example.com')).toThrow(/DNSPLANE_CORS_ORIGINS\[0\]/);
    expect(() => parseCorsOrigins('*,https://a.example.com')).toThrow(/DNSPLANE_CORS_ORIGINS.*cannot be combined/);
  });
});

describe('CORS off (the default)', () => {
  let plain: Harness;
  beforeAll(async () => {
    plain = await startHarness({ zones: { [ZONE]: [] } });
  });
  afterAll(async () => {
    await plain?.close();
  });

  it('refuses every preflight and adds no CORS header', async () => {
    const res = await fetch(`${plain.server.url}/dnsplane.v1.ZoneService/ListZones`, {
      method: 'OPTIONS',
      headers: { origin: CONSOLE, 'access-control-request-method': 'POST' },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const call = await fetch(`${plain.server.url}/dnsplane.v1.ZoneService/ListZones`, {
      method: 'POST',
      headers: { origin: CONSOLE, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(call.status).toBe(401);
    expect(call.headers.get('access-control-allow-origin')).toBeNull();
  });
});

// --- gRPC-Web text ------------------------------------------------------------------------------

/** One gRPC-Web frame: flags byte, big-endian length, payload. */
function frame(flags: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

/** Splits a decoded gRPC-Web body into its messages and its trailers. */
function unframe(body: Uint8Array): { messages: Uint8Array[]; trailers: Record<string, string> } {
  const messages: Uint8Array[] = [];
  const trailers: Record<string, string> = {};
  for (let i = 0; i < body.length; ) {
    const flags = body[i]!;
    const len = new DataView(body.buffer, body.byteOffset + i + 1, 4).getUint32(0);
    const payload = body.subarray(i + 5, i + 5 + len);
    if (flags & 0x80) {
      for (const line of new TextDecoder().decode(payload).split('\r\n')) {
        const at = line.indexOf(':');
        if (at > 0) trailers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
    } else messages.push(payload);
    i += 5 + len;
  }
  return { messages, trailers };
}

/** Base64 without a decoder that stops at padding: each padded piece on its own, as clients send them. */
function decodePieces(text: string): Uint8Array {
  return Buffer.concat((text.match(/[^=]*=*/g) ?? []).filter((s) => s !== '').map((s) => Buffer.from(s, 'base64')));
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

async function grpcWebText(path: string, body: string, token?: string) {
  const res = await fetch(url(path), {
    method: 'POST',
    headers: {
      'content-type': 'application/grpc-web-text',
      accept: 'application/grpc-web-text',
      'x-grpc-web': '1',
      'x-user-agent': 'grpc-web-javascript/0.1',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body,
  });
  return { res, text: await res.text() };
}

describe('application/grpc-web-text', () => {
  it('answers ListZones in base64 frames that decode to what the Connect API answers', async () => {
    const req = frame(0, toBinary(ListZonesRequestSchema, create(ListZonesRequestSchema, {})));
    const { res, text } = await grpcWebText('/dnsplane.v1.ZoneService/ListZones', b64(req), alice);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/grpc-web-text/);
    expect(text).toMatch(/^[A-Za-z0-9+/=]+$/);
    const { messages, trailers } = unframe(decodePieces(text));
    expect(trailers['grpc-status']).toBe('0');
    expect(messages).toHaveLength(1);
    const got = fromBinary(ListZonesResponseSchema, messages[0]!);
    const want = await h.zoneClient(alice).listZones({});
    expect(got.tenant).toBe('alice');
    expect(got.zones.map((z) => [z.name, z.generation])).toEqual(want.zones.map((z) => [z.name, z.generation]));
  });

  it('accepts a body sent as separately padded base64 pieces (frame header and message apart)', async () => {
    const msg = toBinary(RecordsRequestSchema, create(RecordsRequestSchema, { zones: [ZONE], includeForeign: true }));
    const whole = frame(0, msg);
    const body = b64(whole.subarray(0, 5)) + b64(whole.subarray(5)); // "AAAAAA4=" + "...=="
    expect(body.slice(0, -2)).toContain('=');
    const { res, text } = await grpcWebText('/dnsplane.v1.ZoneService/Records', body, alice);
    expect(res.status).toBe(200);
    const { messages, trailers } = unframe(decodePieces(text));
    expect(trailers['grpc-status']).toBe('0');
    const records = fromBinary(RecordsResponseSchema, messages[0]!);
    expect(records.zones[0]!.endpoints.map((e) => `${e.dnsName} ${e.recordType} ${e.targets.join(',')}`)).toContain(`www.${ZONE} A 192.0.2.1`);
  });

  it('streams: Health/Watch answers its first message at once, as a base64 piece of its own', async () => {
    const abort = new AbortController();
    const res = await fetch(url('/grpc.health.v1.Health/Watch'), {
      method: 'POST',
      headers: { 'content-type': 'application/grpc-web-text', 'x-grpc-web': '1' },
      body: b64(frame(0, toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, {})))),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/grpc-web-text/);
    // The stream stays open (Watch sends changes until cancelled): read until one whole message came.
    const reader = res.body!.getReader();
    let text = '';
    let messages: Uint8Array[] = [];
    while (messages.length === 0) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += new TextDecoder().decode(value);
      if (text.length % 4 === 0) messages = unframe(decodePieces(text)).messages;
    }
    abort.abort();
    await reader.cancel().catch(() => undefined);
    expect(fromBinary(HealthCheckResponseSchema, messages[0]!).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it('carries errors as gRPC-Web status (no token: UNAUTHENTICATED, 16)', async () => {
    const { res, text } = await grpcWebText('/dnsplane.v1.ZoneService/ListZones', b64(frame(0, new Uint8Array())));
    expect(res.status).toBe(200);
    const status = res.headers.get('grpc-status') ?? unframe(decodePieces(text)).trailers['grpc-status'];
    expect(status).toBe('16');
  });

  it('refuses a body that is not base64 as INVALID_ARGUMENT', async () => {
    const { res, text } = await grpcWebText('/dnsplane.v1.ZoneService/ListZones', '%%%%-not-base64', alice);
    const status = res.headers.get('grpc-status') ?? unframe(decodePieces(text)).trailers['grpc-status'];
    expect(status).toBe('3');
    expect(decodeURIComponent(res.headers.get('grpc-message') ?? unframe(decodePieces(text)).trailers['grpc-message'] ?? '')).toMatch(/grpc-web-text.*base64/);
  });
});

// --- Connect GET --------------------------------------------------------------------------------

describe('Connect GET for read-only RPCs', () => {
  it('marks exactly the read-only RPCs NO_SIDE_EFFECTS', () => {
    const router = registerServices(createConnectRouter(), h.server.ctx);
    const marked = router.handlers.filter((x) => x.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS).map((x) => x.requestPath.slice(1));
    expect(marked.sort()).toEqual([...READ_ONLY].sort());
  });

  const get = (path: string, message: unknown, token: string) =>
    fetch(url(`${path}?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify(message))}`), { headers: { authorization: `Bearer ${token}` } });

  it('serves ListZones and Records over GET, as a Connect client with useHttpGet calls them', async () => {
    const zones = await get('/dnsplane.v1.ZoneService/ListZones', {}, alice);
    expect(zones.status).toBe(200);
    expect(((await zones.json()) as { tenant: string }).tenant).toBe('alice');

    const records = await get('/dnsplane.v1.ZoneService/Records', { zones: [ZONE], includeForeign: true }, alice);
    expect(records.status).toBe(200);
    const body = (await records.json()) as { zones: Array<{ zone: string; endpoints: Array<{ dnsName: string }> }> };
    expect(body.zones[0]!.endpoints.map((e) => e.dnsName)).toContain(`www.${ZONE}`);

    // The method the client really sent, as Node's HTTP client reports it.
    const seen: string[] = [];
    const onRequest = (m: unknown) => {
      const r = (m as { request: { method: string; path: string } }).request;
      if (r.path.startsWith('/dnsplane.v1.ZoneService/Records')) seen.push(r.method);
    };
    diagnostics.subscribe('http.client.request.start', onRequest);
    try {
      const client = createClient(
        ZoneService,
        createConnectTransport({
          baseUrl: h.server.url,
          httpVersion: '1.1',
          useHttpGet: true,
          interceptors: [bearer(alice)],
        }),
      );
      expect((await client.records({ zones: [ZONE] })).zones[0]!.zone).toBe(ZONE);
    } finally {
      diagnostics.unsubscribe('http.client.request.start', onRequest);
    }
    expect(seen.length).toBeGreaterThan(0);
    expect([...new Set(seen)]).toEqual(['GET']);
  });

  it('serves the admin reads over GET', async () => {
    for (const [path, message] of [
      ['/dnsplane.v1.AdminService/ListTenants', {}],
      ['/dnsplane.v1.AdminService/ListJournal', {}],
      ['/dnsplane.v1.AdminService/ListPlans', {}],
      ['/dnsplane.v1.AdminService/ListOwnership', { zone: ZONE }],
    ] as const) {
      const res = await get(path, message, admin);
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    }
  });

  it('refuses GET for an RPC with side effects with 405, naming POST and the RPCs GET works for', async () => {
    const res = await get('/dnsplane.v1.ZoneService/Plan', {}, alice);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    const text = await res.text();
    expect(text).toMatch(/use POST/);
    for (const rpc of READ_ONLY) expect(text).toContain(rpc);
  });
});

// --- text bodies ---------------------------------------------------------------------------------

describe('404 and 415 say what is expected', () => {
  const services = (): DescService[] => {
    const router = registerServices(createConnectRouter(), h.server.ctx);
    return [...new Set(router.handlers.map((x) => x.service))];
  };

  it('an unknown path: 404 naming the services and the form of an RPC path', async () => {
    const res = await fetch(url('/v1/zones'), { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('/<service>/<method>');
    for (const s of services()) expect(text).toContain(s.typeName);
  });

  it('an unknown method of a known service: 404 listing its methods', async () => {
    const res = await fetch(url('/dnsplane.v1.ZoneService/ListRecords'), { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(404);
    expect(await res.text()).toMatch(/ZoneService has no method "ListRecords"; its methods: ListZones, Records, Plan, Apply/);
  });

  it('an unsupported content-type: 415 listing the ones that work', async () => {
    const res = await fetch(url('/dnsplane.v1.ZoneService/ListZones'), {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${alice}` },
    });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('accept-post')).toContain('application/json');
    const text = await res.text();
    expect(text).toContain('"text/plain"');
    for (const t of ['application/json', 'application/proto', 'application/grpc', 'application/grpc-web+proto', 'application/grpc-web-text'])
      expect(text).toContain(t);
  });
});
