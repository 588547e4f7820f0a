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
import { answerWith, isUnaryJson, readBody, replyJson } from './json-route.js';
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
  return isUnaryJson(req, RECORDS_PATH);
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

/** The route: answers a request isRecordsJson accepted, errors included. */
export function recordsJsonRoute(ctx: CoreContext, log: Logger, readMaxBytes: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) =>
    answerWith(req, res, log, 'Records', async () => {
      const request = parseRequest(await readBody(req, readMaxBytes));
      const tenant = await authenticate(ctx.pool, bearerToken(req.headers.authorization ?? null), ctx.tokens);
      checkMessage(RecordsRequestSchema, request as unknown as Parameters<typeof checkMessage>[1], '');
      const zones = await recordsOf(ctx, tenant, request);
      replyJson(res, `{"zones":[${zones.map(zoneJson).join(',')}]}`);
    });
}
