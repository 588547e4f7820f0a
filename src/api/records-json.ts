/**
 * ZoneService.Records over Connect's unary JSON protocol (what external-dns sidecars, the CLI and
 * most pollers speak), answered from encoded bytes.
 *
 * The read cache (core/reads/read-cache.ts) hands out the same endpoints array for every caller of a
 * (zone, generation, view) — every includeForeign caller included; encoding that answer to JSON costs
 * more than reading it from Postgres, so here each zone's JSON is encoded once per view and kept by
 * the read cache (ReadCache.encoded: accounted in its byte bound, dropped with the view's
 * generation). Connect itself offers no way to send bytes already encoded, so this route answers the one
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
import { toJson, toJsonString } from '@bufbuild/protobuf';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { notModifiedNow, records, type RecordsQuery, type ZoneRecords } from '../core/records/records.js';
import { readCacheOf, type ReadCache } from '../core/reads/read-cache.js';
import { Slicer } from '../core/slices.js';
import { RecordsRequestSchema, ZoneRecordsSchema, ZoneService, type RecordsRequest } from '../gen/dnsplane/v1/zone_pb.js';
import { checkMessage } from './strict.js';
import { gateTenant, requestTenant } from './gate.js';
import { answerWith, isUnaryJson, parseJsonRequest, readConnectBodyThen, replyJsonBytes } from './json-route.js';
import { endpointObject, textBytes, withListsParts, writeChunks } from './json-write.js';
import { recordsQueryOf, zoneRecordsPb } from './zone-service.js';

const RECORDS_PATH = `/${ZoneService.typeName}/${ZoneService.method.records.name}`;

/*
 * What a request costs here, once warm (bench/api.ts measures it): the HTTP parsing and the gate
 * (limiter, token from the token cache), one share of the fresh read of the zones' generations
 * (core/reads/read-cache.ts), and writing bytes already encoded. Everything else is kept:
 * - each view's answer, encoded once, as the bytes of a whole one-zone RecordsResponse (kept by the
 *   read cache with the view, ReadCache.encoded); a zone's part of a several-zone answer is a slice
 *   of those bytes;
 * - each not-modified answer, by (zone, generation);
 * - each valid request body already read (pollers send the same bytes every time), by its text.
 */

const PREFIX = Buffer.from('{"zones":[');
const SUFFIX = Buffer.from(']}');
const COMMA = Buffer.from(',');

/** The form of the bytes this route keeps in the read cache: a whole one-zone RecordsResponse in Connect JSON. */
const FORM = 'connect-json';
/** The same for not-modified answers, by zone and generation. */
const notModifiedBodies = new Map<string, Buffer>();
const MAX_NOT_MODIFIED = 10_000;
/**
 * Each several-zone not-modified answer's bytes, by the answer: notModifiedNow hands a tenant the same
 * array while the zones' states hold (a poll of twenty zones made twenty keys, views and a copy each time).
 */
const notModifiedAnswers = new WeakMap<readonly ZoneRecords[], Buffer>();

/** Endpoints written per chunk (a zone may hold 20,000 record sets: written in slices). */
const ENDPOINTS_PER_CHUNK = 256;

function encodeHead(z: ZoneRecords): Buffer {
  return Buffer.from(`{"zones":[${toJsonString(ZoneRecordsSchema, zoneRecordsPb(z))}]}`);
}

/** toJsonString of the one-zone RecordsResponse, its endpoints written in slices (api/json-write.ts). */
async function encode(z: ZoneRecords): Promise<Buffer> {
  const slicer = new Slicer();
  const head = toJson(ZoneRecordsSchema, zoneRecordsPb({ ...z, endpoints: [] })) as Record<string, unknown>;
  const endpoints = await writeChunks(z.endpoints, endpointObject, slicer, ENDPOINTS_PER_CHUNK);
  // Made bytes a chunk at a time: 6 MB joined into one string, then encoded, is one block of tens of ms.
  return textBytes(['{"zones":[', ...withListsParts(ZoneRecordsSchema, head, { endpoints }), ']}'], slicer);
}

/** The bytes of a RecordsResponse holding only z. */
function oneZoneBody(cache: ReadCache, z: ZoneRecords): Buffer | Promise<Buffer> {
  if (z.notModified) {
    const key = `${z.zone}\u0000${z.generation}`;
    let body = notModifiedBodies.get(key);
    if (body === undefined) {
      if (notModifiedBodies.size >= MAX_NOT_MODIFIED) notModifiedBodies.clear();
      notModifiedBodies.set(key, (body = encodeHead(z)));
    }
    return body;
  }
  if (z.endpoints.length === 0) return encodeHead(z); // an empty array is no view's own: nothing to key on
  // Callers that miss together share one encoding.
  return cache.encoded(z.endpoints, FORM, () => encode(z)) as Promise<Buffer>;
}

/**
 * The answer's bytes: one zone's cached body as is, or the zones' parts in the order they are written
 * (views of the cached bodies, not copied); without a promise when none was modified (the heads of
 * not-modified zones, small, joined).
 */
function responseBody(cache: ReadCache, zones: readonly ZoneRecords[]): Buffer | readonly Buffer[] | Promise<Buffer | readonly Buffer[]> {
  if (zones.length === 1) return oneZoneBody(cache, zones[0]!);
  if (zones.every((z) => z.notModified)) {
    let body = notModifiedAnswers.get(zones);
    if (body === undefined) notModifiedAnswers.set(zones, (body = Buffer.concat(joined(zones.map((z) => oneZoneBody(cache, z) as Buffer)))));
    return body;
  }
  return joinedBody(cache, zones);
}

async function joinedBody(cache: ReadCache, zones: readonly ZoneRecords[]): Promise<readonly Buffer[]> {
  const ones: Buffer[] = [];
  for (const z of zones) ones.push(await oneZoneBody(cache, z));
  return joined(ones);
}

/** One-zone RecordsResponse bodies made the parts of one RecordsResponse of every zone. */
function joined(ones: Buffer[]): Buffer[] {
  const parts: Buffer[] = [PREFIX];
  for (const [i, one] of ones.entries()) {
    if (i > 0) parts.push(COMMA);
    parts.push(one.subarray(PREFIX.length, one.length - SUFFIX.length));
  }
  parts.push(SUFFIX);
  return parts;
}

/** Whether this route answers the request (otherwise Connect does). */
export function isRecordsJson(req: http.IncomingMessage): boolean {
  return isUnaryJson(req, RECORDS_PATH);
}

/** As Connect reads it with strictJsonOptions: unknown keys and enum names refused, naming the field. */
function parseRequest(text: string): RecordsRequest {
  return parseJsonRequest(RecordsRequestSchema, text);
}

/**
 * Request bodies already read and found valid (parsed and checkMessage'd), by their text, with the
 * query core/records/records.ts reads: a poller sends the same bytes every time. Neither is ever changed
 * after it is made (records() only reads the query). Bounded in count and in body size; cleared when full.
 */
const validRequests = new Map<string, RecordsQuery>();
const MAX_VALID_REQUESTS = 1_000;
const MAX_CACHED_BODY = 4 * 1024;

/** The route: answers a request isRecordsJson accepted, errors included. */
export function recordsJsonRoute(ctx: CoreContext, log: Logger, readMaxBytes: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) =>
    readConnectBodyThen(req, readMaxBytes, (err, body) => {
      if (err === undefined && answeredNow(ctx, req, res, body!)) return;
      answerWith(req, res, log, 'Records', async () => {
        if (err !== undefined) throw err;
        // The same order as under Connect: the body is parsed (errors first), then the caller is
        // authenticated, then the request checked.
        const text = body!.toString('utf8');
        let query = validRequests.get(text);
        const request = query ? undefined : parseRequest(text);
        const found = requestTenant(ctx, req);
        const tenant = found instanceof Promise ? await found : found;
        if (request) {
          checkMessage(RecordsRequestSchema, request as unknown as Parameters<typeof checkMessage>[1], '');
          query = recordsQueryOf(request);
          if (text.length <= MAX_CACHED_BODY) {
            if (validRequests.size >= MAX_VALID_REQUESTS) validRequests.clear();
            validRequests.set(text, query);
          }
        }
        const q = query!; // known, or made above
        const zones = notModifiedNow(ctx, tenant, q) ?? (await records(ctx, tenant, q));
        const bytes = responseBody(readCacheOf(ctx), zones);
        replyJsonBytes(res, bytes instanceof Promise ? await bytes : bytes);
      });
    });
}

/**
 * A cluster's poll (a body already seen, the tenant from the token cache, the current generations)
 * answered in the turn its body arrived in, without a promise: a poll is thousands a second, and
 * while an OVH call is under way async_hooks are on (ovh/client/diagnostics.ts) and cost every
 * promise. False: answer it the long way (which also answers every error of it, as before).
 */
function answeredNow(ctx: CoreContext, req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): boolean {
  const query = validRequests.get(body.toString('utf8'));
  if (query === undefined) return false;
  const tenant = gateTenant(req);
  if (tenant === undefined) return false;
  let zones: readonly ZoneRecords[] | undefined;
  try {
    zones = notModifiedNow(ctx, tenant, query);
  } catch {
    return false;
  }
  if (zones === undefined) return false;
  // Not modified: the bytes are at hand (responseBody makes no promise for these).
  replyJsonBytes(res, responseBody(readCacheOf(ctx), zones) as Buffer);
  return true;
}
