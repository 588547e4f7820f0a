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
 *   protobuf-es fromJson with unknown fields refused, checkMessage), then each listed endpoint: in its
 *   plain form (plainEndpoint) directly, in any other form the same way as Connect, with the same
 *   field paths in the errors (`desired.endpoints[12].ttl: …`). When a request has several errors,
 *   the first one reported may differ from Connect's.
 * - the answer is protobuf-es's JSON of the PlanResponse planToPb gives, written without building
 *   it: the small heads through protobuf-es, each change and operation by hand (below), in slices.
 * Authentication (api/auth.ts), the error mapping (api/errors.ts) and the error answer
 * (api/early-answer.ts) are the same as everywhere. Every other protocol (gRPC, gRPC-Web, binary
 * Connect) goes through Connect, with the same results: test/e2e/plan-json.test.ts compares both.
 */
import type http from 'node:http';
import { fromJson, fromJsonString, toJson, type DescField, type DescMessage, type JsonValue, type Message } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { plan } from '../core/plan/stored.js';
import { Slicer } from '../core/slices.js';
import {
  ChangeActionSchema,
  EndpointSchema,
  PlanRequestSchema,
  PlanSchema,
  ZonePlanSchema,
  ZoneService,
  type Endpoint as PbEndpoint,
  type PlanRequest,
} from '../gen/dnsplane/v1/zone_pb.js';
import { unstorable } from '../dns/endpoint.js';
import type { Change } from '../dns/types.js';
import { describeOperation, operationsByRecordSet, operationsOfChange } from '../ovh/ops.js';
import type { StoredPlan, ZonePlan } from '../core/plan/plan.js';
import { actionToPb, planHeadPb, planInputFromPb, refreshOperation, zonePlanHeadPb } from './convert.js';
import { answerWith, isUnaryJson, readConnectBody, replyJson } from './json-route.js';
import { endpointObject, withLists, writeChunks, type JsonEndpoint } from './json-write.js';
import { checkJson, checkMessage } from './strict.js';
import { requestTenant } from './gate.js';

const PLAN_PATH = `/${ZoneService.typeName}/${ZoneService.method.plan.name}`;

/** Lists at least this long are read item by item, in slices; shorter ones in one go. */
const LIFT_AT = 64;

/** Whether this route answers the request (otherwise Connect does). */
export function isPlanJson(req: http.IncomingMessage): boolean {
  return isUnaryJson(req, PLAN_PATH);
}

type Json = Record<string, unknown>;
type Msg = Message & Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads one JSON value as message `schema`, as Connect and the strict interceptor would. */
function readMessage<T extends Message>(schema: DescMessage, v: JsonValue, path: string): T {
  checkJson(schema, v, path);
  let m: T;
  try {
    m = fromJson(schema, v, { ignoreUnknownFields: false }) as T;
  } catch (e) {
    throw ConnectError.from(e, Code.InvalidArgument); // a ConnectError as it is
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

const isText = (v: unknown): v is string => typeof v === 'string' && unstorable(v) === undefined;

/**
 * An endpoint in its plain JSON form (camelCase keys only, strings, a whole int32 TTL, a map of
 * strings, no value Postgres cannot store), read without protobuf-es's reflection: the message
 * fromJson would give. Anything else (null, another form, a wrong type): undefined, and readMessage
 * reads it as Connect does, errors included.
 */
function plainEndpoint(v: unknown): PbEndpoint | undefined {
  if (!isObject(v)) return undefined;
  const e: PbEndpoint = {
    $typeName: EndpointSchema.typeName,
    dnsName: '',
    recordType: '',
    targets: [],
    ttl: 0,
    setIdentifier: '',
    labels: {},
    targetStates: [],
  };
  for (const key in v) {
    const x = v[key];
    switch (key) {
      case 'dnsName':
      case 'recordType':
      case 'setIdentifier':
        if (!isText(x)) return undefined;
        e[key] = x;
        break;
      case 'targets':
        if (!Array.isArray(x) || !x.every(isText)) return undefined;
        e.targets = x as string[];
        break;
      case 'ttl':
        if (typeof x !== 'number' || !Number.isInteger(x) || x < -2147483648 || x > 2147483647) return undefined;
        e.ttl = x;
        break;
      case 'labels':
        if (!isObject(x)) return undefined;
        for (const k in x) if (!isText(k) || !isText(x[k])) return undefined;
        e.labels = x as Record<string, string>;
        break;
      default:
        return undefined;
    }
  }
  return e;
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
      throw ConnectError.from(e, Code.InvalidArgument); // a ConnectError as it is
    }
  }
  const lifted: Lifted[] = [];
  if (isObject(parsed)) {
    for (const key of Object.keys(parsed)) {
      const f = PlanRequestSchema.fields.find((x) => x.name === key || x.jsonName === key);
      const inner = parsed[key];
      if (f?.fieldKind !== 'message' || !f.oneof || !isObject(inner)) continue;
      for (const k of Object.keys(inner)) {
        const lf = f.message.fields.find((x) => x.name === k || x.jsonName === k);
        const items = inner[k];
        if (lf?.fieldKind !== 'list' || lf.listKind !== 'message' || !Array.isArray(items) || items.length < LIFT_AT) continue;
        lifted.push({ field: lf, holder: f.localName, path: `${key}.${k}`, items: items as JsonValue[] });
        inner[k] = [];
      }
    }
  }
  const request = readMessage<PlanRequest>(PlanRequestSchema, parsed as JsonValue, '');
  for (const l of lifted) {
    const plain = l.field.message.typeName === EndpointSchema.typeName;
    const read = await slicer.map(l.items, (item, i) => (plain ? plainEndpoint(item) : undefined) ?? readMessage(l.field.message, item, `${l.path}[${i}]`), 32);
    const holder = request.input.case === l.holder ? (request.input.value as unknown as Msg) : undefined;
    if (holder) holder[l.field.localName] = read;
  }
  return request;
}

// --- the answer ---
//
// protobuf-es's JSON of the PlanResponse planToPb would give, written without building it: the heads
// (plan and zone plans without their lists, small) go through protobuf-es; each change and operation,
// tens of thousands in a large plan, is written here, in proto3 JSON as protobuf-es writes it —
// fields in field-number order under their JSON names, default values (empty strings and lists, 0,
// empty maps, absent messages) left out, enums by name. test/e2e/plan-json.test.ts compares both.

const actionNames = new Map(ChangeActionSchema.values.map((v) => [v.number, v.name]));

type JsonOperation = { method?: string; path?: string; body?: string };

/** An OVH call as describeOperation gives it, as its JSON object (OvhOperation). */
function operationObject(d: { method: string; path: string; body: string }): JsonOperation {
  const o: JsonOperation = {};
  if (d.method !== '') o.method = d.method;
  if (d.path !== '') o.path = d.path;
  if (d.body !== '') o.body = d.body;
  return o;
}

/** A change with its operations, as changeToPb shows it (PlannedChange), as its JSON object. */
function changeObject(c: Change, operations: readonly JsonOperation[]): object {
  const o: { action: string; before?: JsonEndpoint; after?: JsonEndpoint; warnings?: string[]; operations?: readonly JsonOperation[] } = {
    action: actionNames.get(actionToPb(c.action))!,
  };
  if (c.before) o.before = endpointObject(c.before);
  if (c.after) o.after = endpointObject(c.after);
  if (c.warnings && c.warnings.length > 0) o.warnings = c.warnings;
  if (operations.length > 0) o.operations = operations;
  return o;
}

/** One zone plan in JSON, its changes and operations written in slices. */
async function zonePlanJson(z: ZonePlan, slicer: Slicer): Promise<string> {
  const ops = await slicer.map(z.operations, (op) => operationObject(describeOperation(op)), 128);
  const byRecordSet = operationsByRecordSet(z.zone, z.operations, (_op, i) => ops[i]!);
  const changes = await writeChunks(z.changes, (c) => changeObject(c, operationsOfChange(c, byRecordSet)), slicer, 64);
  const operations = ops.length > 0 ? await writeChunks([...ops, operationObject(refreshOperation(z.zone))], (o) => o, slicer, 512) : [];
  const head = toJson(ZonePlanSchema, await zonePlanHeadPb(z, slicer)) as Json;
  return withLists(ZonePlanSchema, head, { changes, operations });
}

/** The PlanResponse of a stored plan in JSON: what toJsonString(PlanResponseSchema, { plan: planToPb(p) }) gives. */
export async function planResponseJson(p: StoredPlan, slicer: Slicer): Promise<string> {
  const zones: string[] = [];
  for (const z of p.zones) zones.push(await zonePlanJson(z, slicer));
  return `{"plan":${withLists(PlanSchema, toJson(PlanSchema, planHeadPb(p)) as Json, { zones })}}`;
}

/** The route: answers a request isPlanJson accepted, errors included. */
export function planJsonRoute(ctx: CoreContext, log: Logger, readMaxBytes: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) =>
    answerWith(req, res, log, 'Plan', async () => {
      const body = await readConnectBody(req, readMaxBytes);
      const slicer = new Slicer();
      const request = await readPlanRequest(body.toString('utf8'), slicer);
      const tenant = await requestTenant(ctx, req);
      const stored = await plan(ctx, tenant, planInputFromPb(request));
      const answer = await planResponseJson(stored, slicer);
      replyJson(res, answer);
      log.debug(
        { rpc: 'Plan', tenant: tenant.name, plan: stored.id, requestBytes: body.length, answerBytes: answer.length, yields: slicer.yields },
        'plan answered in slices',
      );
    });
}
