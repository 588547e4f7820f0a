/**
 * A body over the limit gets a readable refusal, never a reset (issue 22), on both HTTP ports:
 * - the API (readMaxBytes 8 MiB): resource_exhausted naming the limit, as Connect answers it (HTTP 429
 *   for Connect, grpc-status 8 for gRPC), over HTTP/1.1 with and without `Expect: 100-continue`, with
 *   and without Content-Length (chunked), on the JSON routes beside Connect and on Connect itself, and
 *   over h2c with and without content-length;
 * - the webhook (16 MiB): 413 naming the limit.
 * With its length announced the refusal comes before the body is sent (no `100 Continue`); otherwise
 * it comes as soon as the limit is passed, and what the client still sends is drained (the lingering
 * close) so that the client reads it. The clients here are careless: they send their whole body
 * whatever the server answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/server.js';
import { h2Upload, upload, type Upload } from '../helpers/raw-http.js';

const ZONE = 'example.com';
const API_LIMIT = 8 * 1024 * 1024;
const WEBHOOK_LIMIT = 16 * 1024 * 1024;
const TEN_MB = 10_000_000;
const TWENTY_MB = 20_000_000;

let h: Harness;
let alice: string;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  alice = await h.tenant('alice', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

const portOf = (url: string) => Number(new URL(url).port);
const variants = [
  { framing: 'content-length', expectContinue: true },
  { framing: 'content-length', expectContinue: false },
  { framing: 'chunked', expectContinue: true },
  { framing: 'chunked', expectContinue: false },
] as const;

describe.each([
  ['the Plan JSON route', 'application/json'],
  ['Connect (proto)', 'application/proto'],
])('API, HTTP/1.1, %s', (_name, type) => {
  it.each(variants)('10 MB, %o: 429 resource_exhausted naming readMaxBytes, read by the client', async (v) => {
    const head = `POST /dnsplane.v1.ZoneService/Plan HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: ${type}`;
    const r = await upload(portOf(h.server.url), { head, bytes: TEN_MB, ...v } satisfies Upload);
    expect(r.error).toBeUndefined();
    expect(r.got).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/);
    expect(r.got).toContain('"code":"resource_exhausted"');
    expect(r.got).toContain(`larger than configured readMaxBytes ${API_LIMIT}`);
    if (v.framing === 'content-length') {
      // Refused on its announced length: the message names it, the connection closes after it, and
      // with Expect nothing was sent.
      expect(r.got).toContain(`message size ${TEN_MB} is larger`);
      expect(r.got).toMatch(/\r\nconnection: close\r\n/i);
      if (v.expectContinue) expect({ continued: r.continued, sent: r.sent }).toEqual({ continued: false, sent: 0 });
    } else if (v.expectContinue) expect(r.continued).toBe(true);
  });
});

describe('API, h2c', () => {
  it.each([true, false])('10 MB in Connect JSON, content-length announced: %s: 429 resource_exhausted naming readMaxBytes', async (announce) => {
    const r = await h2Upload(
      h.server.url,
      { ':path': '/dnsplane.v1.ZoneService/Plan', authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      TEN_MB,
      announce,
    );
    expect(r.headers[':status']).toBe(429);
    expect(JSON.parse(r.body)).toMatchObject({
      code: 'resource_exhausted',
      message: expect.stringContaining(`larger than configured readMaxBytes ${API_LIMIT}`),
    });
    expect(r.error).toBeUndefined();
  });

  it.each([true, false])('10 MB in gRPC, content-length announced: %s: grpc-status 8 (RESOURCE_EXHAUSTED) naming readMaxBytes', async (announce) => {
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(TEN_MB - 5, 1);
    const r = await h2Upload(
      h.server.url,
      { ':path': '/dnsplane.v1.ZoneService/Plan', authorization: `Bearer ${alice}`, 'content-type': 'application/grpc', te: 'trailers' },
      TEN_MB,
      announce,
      prefix,
    );
    const status = { ...r.headers, ...r.trailers };
    expect(r.headers[':status']).toBe(200);
    expect(status['grpc-status']).toBe('8');
    expect(decodeURIComponent(String(status['grpc-message']))).toContain(`larger than configured readMaxBytes ${API_LIMIT}`);
  });
});

describe('webhook, HTTP/1.1', () => {
  it.each(variants)('20 MB, %o: 413 naming the limit, read by the client', async (v) => {
    const head = `POST /records HTTP/1.1\r\nHost: x\r\nAuthorization: Basic ${Buffer.from(`alice:${alice}`).toString('base64')}\r\nContent-Type: application/external.dns.webhook+json;version=1`;
    const r = await upload(portOf(h.webhookUrl), { head, bytes: TWENTY_MB, ...v } satisfies Upload);
    expect(r.error).toBeUndefined();
    expect(r.got).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
    expect(r.got).toContain(`the body is over ${WEBHOOK_LIMIT} bytes`);
    if (v.framing === 'content-length' && v.expectContinue) expect({ continued: r.continued, sent: r.sent }).toEqual({ continued: false, sent: 0 });
  });
});
