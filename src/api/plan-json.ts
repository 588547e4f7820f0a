/**
 * ZoneService.Plan over Connect's unary JSON protocol (what the CLI, the sidecars and most callers
 * speak), read and answered in slices.
 *
 * Connect reads a request in one go and writes the answer in one go: for a 5,000-endpoint Plan that is
 * ~0.7 MB of JSON in and ~2.5 MB out, two blocks of tens of milliseconds each during which nothing
 * else of the process runs (other tenants, /healthz). This route takes the request shape it fully
 * understands (api/json-route.ts: POST, application/json, no compression, no timeout header, no
 * Origin) and does what Connect and its interceptors do, in slices that yield to the event loop
 * (core/slices.ts):
 * - the body is parsed once (JSON.parse); the request's long lists (desired.endpoints, changes.create,
 *   …) are lifted out, the rest is checked and read as Connect would (api/strict.ts checkJson,
 *   protobuf-es fromJson with unknown fields refused, checkMessage), then each listed endpoint the same
 *   way, with the same field paths in the errors (`desired.endpoints[12].ttl: …`). When a request
 *   has several errors, the first one reported may differ from Connect's.
 * - the answer is protobuf-es's JSON of the same PlanResponse, each long list (a zone's changes,
 *   operations, conflicts) encoded item by item and joined.
 * Authentication (api/auth.ts), the error mapping (api/errors.ts) and the error answer
 * (api/early-answer.ts) are the same as everywhere. Every other protocol (gRPC, gRPC-Web, binary
 * Connect) goes through Connect, with the same results: test/e2e/plan-json.test.ts compares both.
 */
import type http from 'node:http';
import { create, fromJson, fromJsonString, toJson, toJsonString, type DescField, type DescMessage, type JsonValue, type Message } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { plan } from '../core/plan.js';
import { Slicer } from '../core/slices.js';
import { authenticate } from '../core/tenants.js';
import { PlanRequestSchema, PlanResponseSchema, ZoneService, type PlanRequest } from '../gen/dnsplane/v1/zone_pb.js';
import { bearerToken } from './auth.js';
import { planInputFromPb, planToPb } from './convert.js';
import { answerWith, isUnaryJson, readBody, replyJson } from './json-route.js';
import { checkJson, checkMessage } from './strict.js';

export const PLAN_PATH = `/${ZoneService.typeName}/${ZoneService.method.plan.name}`;

/** Lists at least this long are read and written item by item, in slices; shorter ones in one go. */
const LIFT_AT = 64;
/** Levels of the answer written field by field (PlanResponse, Plan, ZonePlan); below, see LIFT_AT. */
const SHALLOW = 3;

/** Whether this route answers the request (otherwise Connect does). */
export function isPlanJson(req: http.IncomingMessage): boolean {
  return isUnaryJson(req, PLAN_PATH);
}

type Json = Record<string, unknown>;
type Msg = Message & Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function invalidArgument(e: unknown): ConnectError {
  return e instanceof ConnectError ? e : ConnectError.from(e, Code.InvalidArgument);
}

/** Reads one JSON value as message `schema`, as Connect and the strict interceptor would. */
function readMessage<T extends Message>(schema: DescMessage, v: JsonValue, path: string): T {
  checkJson(schema, v, path);
  let m: T;
  try {
    m = fromJson(schema, v, { ignoreUnknownFields: false }) as T;
  } catch (e) {
    throw invalidArgument(e);
  }
  checkMessage(schema, m as unknown as Msg, path);
  return m;
}

/** A list of messages lifted out of the request: where it was, its JSON path, its items. */
interface Lifted {
  /** The field of the oneof's message (desired.endpoints, changes.create, …). */
  field: DescField & { fieldKind: 'list'; listKind: 'message' };
  /** The oneof case's local name in PlanRequest (desired, changes). */
  holder: string;
  path: string;
  items: JsonValue[];
}

/**
 * The request, read in slices: its long lists of messages (one level below the `input` oneof) are
 * lifted out, the rest read in one go, then each item of the lists read on its own.
 */
export async function readPlanRequest(text: string, slicer: Slicer): Promise<PlanRequest> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: protobuf-es says so, as under Connect.
    try {
      return fromJsonString(PlanRequestSchema, text, { ignoreUnknownFields: false });
    } catch (e) {
      throw invalidArgument(e);
    }
  }
  const lifted: Lifted[] = [];
  if (isObject(parsed)) {
    for (const key of Object.keys(parsed)) {
      const f = PlanRequestSchema.fields.find((x) => x.name === key || x.jsonName === key);
      const inner = parsed[key];
      if (!f || f.fieldKind !== 'message' || !f.oneof || !isObject(inner)) continue;
      for (const k of Object.keys(inner)) {
        const lf = f.message.fields.find((x) => x.name === k || x.jsonName === k);
        const items = inner[k];
        if (!lf || lf.fieldKind !== 'list' || lf.listKind !== 'message' || !Array.isArray(items) || items.length < LIFT_AT) continue;
        lifted.push({ field: lf, holder: f.localName, path: `${key}.${k}`, items: items as JsonValue[] });
        inner[k] = [];
      }
    }
  }
  const request = readMessage<PlanRequest>(PlanRequestSchema, parsed as JsonValue, '');
  for (const l of lifted) {
    const read = await slicer.map(l.items, (item, i) => readMessage(l.field.message, item, `${l.path}[${i}]`), 32);
    const holder = request.input.case === l.holder ? (request.input.value as unknown as Msg) : undefined;
    if (holder) holder[l.field.localName] = read;
  }
  return request;
}

/**
 * protobuf-es's JSON of `msg`, written in slices: in the top levels (depth < SHALLOW: the response,
 * the plan, each zone) every message and list of messages is written on its own, below them each list
 * of at least LIFT_AT messages item by item; everything else in one go (a change and its operations).
 * Fields in the schema's order.
 */
export async function writeJson(schema: DescMessage, msg: Message, slicer: Slicer, depth = 0): Promise<string> {
  const m = msg as Msg;
  const shallow = depth < SHALLOW;
  const lists = schema.fields.filter((f) => f.fieldKind === 'list' && f.listKind === 'message' && (m[f.localName] as unknown[]).length >= (shallow ? 1 : LIFT_AT));
  const nested = shallow ? schema.fields.filter((f) => f.fieldKind === 'message' && !f.oneof && m[f.localName] !== undefined) : [];
  if (lists.length === 0 && nested.length === 0) return toJsonString(schema, msg);
  const rest = create(schema, { ...m, ...Object.fromEntries(lists.map((f) => [f.localName, []])), ...Object.fromEntries(nested.map((f) => [f.localName, undefined])) } as never);
  const base = toJson(schema, rest) as Json;
  const parts: string[] = [];
  for (const f of schema.fields) {
    const key = JSON.stringify(f.jsonName);
    if (lists.includes(f) && f.fieldKind === 'list' && f.listKind === 'message') {
      const list = m[f.localName] as Message[];
      const items: string[] = [];
      if (depth + 1 < SHALLOW) {
        for (const item of list) items.push(await writeJson(f.message, item, slicer, depth + 1));
      } else {
        // Leaves (a change with its operations): one call each, a slice check every 32.
        for (let i = 0; i < list.length; i++) {
          if (i % 32 === 0) await slicer.check();
          items.push(toJsonString(f.message, list[i]!));
        }
      }
      parts.push(`${key}:[${items.join(',')}]`);
    } else if (nested.includes(f) && f.fieldKind === 'message') {
      parts.push(`${key}:${await writeJson(f.message, m[f.localName] as Message, slicer, depth + 1)}`);
    } else if (f.jsonName in base) {
      parts.push(`${key}:${JSON.stringify(base[f.jsonName])}`);
    }
  }
  return `{${parts.join(',')}}`;
}

/** The route: answers a request isPlanJson accepted, errors included. */
export function planJsonRoute(ctx: CoreContext, log: Logger, readMaxBytes: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) =>
    answerWith(req, res, log, 'Plan', async () => {
      const body = await readBody(req, readMaxBytes);
      const slicer = new Slicer();
      const request = await readPlanRequest(body.toString('utf8'), slicer);
      const tenant = await authenticate(ctx.pool, bearerToken(req.headers.authorization ?? null), ctx.tokens);
      const stored = await plan(ctx, tenant, planInputFromPb(request));
      const response = create(PlanResponseSchema, { plan: await planToPb(stored, slicer) });
      const answer = await writeJson(PlanResponseSchema, response, slicer);
      replyJson(res, answer);
      log.debug({ rpc: 'Plan', tenant: tenant.name, plan: stored.id, requestBytes: body.length, answerBytes: answer.length, yields: slicer.yields }, 'plan answered in slices');
    });
}
