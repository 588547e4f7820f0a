/**
 * ZoneService.Records over Connect's unary JSON protocol (what external-dns sidecars, the CLI and
 * most pollers speak), answered from encoded bytes.
 *
 * The read cache (core/read-cache.ts) hands out the same endpoints array for every caller of a
 * (zone, generation, view); encoding that answer to JSON costs more than reading it from Postgres, so
 * here each zone's JSON is encoded once per view and kept beside it (a WeakMap: it goes when the view
 * goes). Connect itself offers no way to send bytes already encoded, so this route answers the one
 * request shape it fully understands and leaves every other one to Connect:
 *   POST /dnsplane.v1.ZoneService/Records, Content-Type application/json (utf-8), no request
 *   compression, no Connect timeout header, no Origin (browsers get Connect's CORS handling).
 * It does what Connect and its interceptors do for it, in the same order: the same read limit, the
 * same strict reading of the JSON (api/strict.ts), the same authentication (api/auth.ts), the same
 * error mapping (api/errors.ts) and error answer (api/early-answer.ts, as Connect writes it).
 * Answers are not compressed (identity is always allowed). gRPC, gRPC-Web, binary Connect and GET
 * requests go through Connect as before.
 */
import type http from 'node:http';
import { fromJsonString, toJsonString } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import type { ZoneRecords } from '../core/records.js';
import { authenticate } from '../core/tenants.js';
import { RecordsRequestSchema, ZoneRecordsSchema, ZoneService, type RecordsRequest } from '../gen/dnsplane/v1/zone_pb.js';
import { checkJson, checkMessage } from './strict.js';
import { bearerToken } from './auth.js';
import { answerError } from './early-answer.js';
import { toConnectError } from './errors.js';
import { recordsOf, zoneRecordsPb } from './zone-service.js';

export const RECORDS_PATH = `/${ZoneService.typeName}/${ZoneService.method.records.name}`;

/** Each view's ZoneRecords JSON, by the view's endpoints array (shared by the read cache). */
const encoded = new WeakMap<readonly object[], string>();

function zoneJson(z: ZoneRecords): string {
  if (z.notModified || z.endpoints.length === 0) return toJsonString(ZoneRecordsSchema, zoneRecordsPb(z));
  let json = encoded.get(z.endpoints);
  if (json === undefined) encoded.set(z.endpoints, (json = toJsonString(ZoneRecordsSchema, zoneRecordsPb(z))));
  return json;
}

/** Whether this route answers the request (otherwise Connect does). */
export function isRecordsJson(req: http.IncomingMessage): boolean {
  if (req.method !== 'POST' || req.url !== RECORDS_PATH) return false;
  const type = (req.headers['content-type'] ?? '').toLowerCase().replace(/\s+/g, '');
  if (type !== 'application/json' && type !== 'application/json;charset=utf-8') return false;
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return false;
  return req.headers['connect-timeout-ms'] === undefined && req.headers.origin === undefined;
}

function readBody(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        reject(new ConnectError(`message size is larger than configured readMaxBytes ${maxBytes}`, Code.ResourceExhausted));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** As Connect reads it with strictJsonOptions: unknown keys and enum names refused, naming the field. */
function parseRequest(body: Buffer): RecordsRequest {
  const text = body.toString('utf8');
  let parsed: unknown;
  let json = true;
  try {
    parsed = JSON.parse(text);
  } catch {
    json = false; // not JSON: protobuf-es says so, as under Connect
  }
  if (json) checkJson(RecordsRequestSchema, parsed, '');
  try {
    return fromJsonString(RecordsRequestSchema, text, { ignoreUnknownFields: false });
  } catch (e) {
    throw ConnectError.from(e, Code.InvalidArgument);
  }
}

function reply(res: http.ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The route: answers a request isRecordsJson accepted, errors included. */
export function recordsJsonRoute(ctx: CoreContext, log: Logger, readMaxBytes: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    void (async () => {
      try {
        const request = parseRequest(await readBody(req, readMaxBytes));
        const tenant = await authenticate(ctx.pool, bearerToken(req.headers.authorization ?? null), ctx.tokens);
        checkMessage(RecordsRequestSchema, request as unknown as Parameters<typeof checkMessage>[1], '');
        const zones = await recordsOf(ctx, tenant, request);
        reply(res, `{"zones":[${zones.map(zoneJson).join(',')}]}`);
      } catch (e) {
        const ce = toConnectError(e);
        if (ce.code === Code.Internal) log.error({ err: e, rpc: 'Records' }, 'rpc failed');
        else log.debug({ rpc: 'Records', code: ce.code, msg: ce.rawMessage }, 'rpc rejected');
        if (!res.headersSent) answerError(req, res, ce);
        else res.destroy();
      }
    })();
  };
}
