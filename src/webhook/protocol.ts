/**
 * The external-dns webhook protocol's messages (REFERENCE.md section 4; external-dns v0.22
 * `provider/webhook`). Pure: decoding what external-dns sends, encoding what it reads.
 *
 * Endpoint JSON, as Go's `endpoint.Endpoint` marshals it (every field `omitempty`, in this order):
 *   {"dnsName","targets":[…],"recordType","setIdentifier","recordTTL","labels":{…},
 *    "providerSpecific":[{"name","value"}]}
 * Changes: {"create","updateOld","updateNew","delete"}, each a list of endpoints, each omitted when empty.
 * Keys are matched the way Go does (json.ts `field`): exact, else case-insensitive, last one wins.
 *
 * Decoding refuses (WireFormatError) only what Go's decoder would refuse, which external-dns cannot send;
 * endpoints that decode but break a DNS rule are judged later, one by one (normalize.ts).
 */
import { drain, type Steps } from '../dns/steps.js';
import { describe, field, goJson, isNumber, isObject, type JsonObject, type JsonValue } from './json.js';

/** The media type, byte for byte; external-dns compares the negotiation answer's Content-Type with it. */
export const MEDIA_TYPE = 'application/external.dns.webhook+json;version=1';

export interface ProviderSpecificProperty {
  name: string;
  value: string;
}

/** An endpoint as external-dns sends it, decoded but not validated. Absent fields are Go's zero values. */
export interface WireEndpoint {
  dnsName: string;
  targets: string[];
  recordType: string;
  setIdentifier: string;
  recordTTL: number;
  labels: Record<string, string>;
  providerSpecific: ProviderSpecificProperty[];
}

/** One entry of a change set: what was sent at `list[index]`. */
export interface WireEntry {
  list: ChangeList;
  index: number;
  endpoint: WireEndpoint;
}

export const CHANGE_LISTS = ['create', 'updateOld', 'updateNew', 'delete'] as const;
export type ChangeList = (typeof CHANGE_LISTS)[number];

export type WireChanges = Record<ChangeList, WireEntry[]>;

/**
 * A body Go's encoding/json would refuse to decode into external-dns's types (not JSON, a list where an
 * object belongs, a string for recordTTL, `300.5` for an integer, a null endpoint): external-dns, whose
 * encoder writes typed Go values, cannot have sent it. `path` names the place (`create[2].recordTTL`).
 */
export class WireFormatError extends Error {
  override readonly name = 'WireFormatError';
  constructor(
    readonly path: string,
    readonly rule: string,
  ) {
    super(path ? `${path}: ${rule}` : rule);
  }
}

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

function at(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function str(v: JsonValue | undefined, path: string): string {
  // Go leaves a field at its zero value for null or an absent key.
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  throw new WireFormatError(path, `must be a string, got ${describe(v)}`);
}

/** Go's int64 from a JSON number: an integer literal within range; `300.0` and `3e2` are refused. */
function int64(v: JsonValue | undefined, path: string): number {
  if (v === undefined || v === null) return 0;
  if (!isNumber(v) || !/^-?\d+$/.test(v.text)) throw new WireFormatError(path, `must be a whole number, got ${describe(v)}`);
  const big = BigInt(v.text);
  if (big > INT64_MAX || big < INT64_MIN) throw new WireFormatError(path, `${v.text} does not fit in a 64-bit integer`);
  const n = Number(big);
  // Beyond 2^53 the value is not exact; a TTL that large is refused by validation anyway.
  return Number.isSafeInteger(n) ? n : Math.sign(n) * Number.MAX_SAFE_INTEGER;
}

function stringList(v: JsonValue | undefined, path: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new WireFormatError(path, `must be a list of strings, got ${describe(v)}`);
  return v.map((x, i) => str(x, `${path}[${i}]`));
}

function labels(v: JsonValue | undefined, path: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw new WireFormatError(path, `must be an object of strings, got ${describe(v)}`);
  const out: Record<string, string> = {};
  for (const [k, val] of v.entries) out[k] = str(val, `${path}[${JSON.stringify(k)}]`);
  return out;
}

function providerSpecific(v: JsonValue | undefined, path: string): ProviderSpecificProperty[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new WireFormatError(path, `must be a list, got ${describe(v)}`);
  return v.map((p, i) => {
    if (p === null) return { name: '', value: '' };
    if (!isObject(p)) throw new WireFormatError(`${path}[${i}]`, `must be an object, got ${describe(p)}`);
    return { name: str(field(p, 'name'), `${path}[${i}].name`), value: str(field(p, 'value'), `${path}[${i}].value`) };
  });
}

/** Decodes one endpoint; WireFormatError naming the field when Go could not have decoded it. */
export function decodeEndpoint(v: JsonValue, path: string): WireEndpoint {
  if (!isObject(v)) throw new WireFormatError(path, `an endpoint must be an object, got ${describe(v)}`);
  const o: JsonObject = v;
  return {
    dnsName: str(field(o, 'dnsName'), at(path, 'dnsName')),
    targets: stringList(field(o, 'targets'), at(path, 'targets')),
    recordType: str(field(o, 'recordType'), at(path, 'recordType')),
    setIdentifier: str(field(o, 'setIdentifier'), at(path, 'setIdentifier')),
    recordTTL: int64(field(o, 'recordTTL'), at(path, 'recordTTL')),
    labels: labels(field(o, 'labels'), at(path, 'labels')),
    providerSpecific: providerSpecific(field(o, 'providerSpecific'), at(path, 'providerSpecific')),
  };
}

/** Endpoints decoded between two pause points of the *Steps decoders. */
const ENDPOINTS_PER_STEP = 64;

/** POST /adjustendpoints: a list of endpoints (null is an empty list, as in Go). */
export function decodeEndpointList(body: JsonValue): WireEndpoint[] {
  return drain(decodeEndpointListSteps(body));
}

/** decodeEndpointList with pause points (core/slices.ts). */
export function* decodeEndpointListSteps(body: JsonValue): Steps<WireEndpoint[]> {
  if (body === null) return [];
  if (!Array.isArray(body)) throw new WireFormatError('', `the body must be a list of endpoints, got ${describe(body)}`);
  const out = new Array<WireEndpoint>(body.length);
  for (let i = 0; i < body.length; i++) {
    if (i % ENDPOINTS_PER_STEP === 0 && i > 0) yield;
    out[i] = decodeEndpoint(body[i]!, `[${i}]`);
  }
  return out;
}

/** POST /records: the change set; null or absent lists are empty. */
export function decodeChanges(body: JsonValue): WireChanges {
  return drain(decodeChangesSteps(body));
}

/** decodeChanges with pause points (core/slices.ts). */
export function* decodeChangesSteps(body: JsonValue): Steps<WireChanges> {
  const out: WireChanges = { create: [], updateOld: [], updateNew: [], delete: [] };
  if (body === null) return out;
  if (!isObject(body)) throw new WireFormatError('', `the body must be an object {"create","updateOld","updateNew","delete"}, got ${describe(body)}`);
  for (const list of CHANGE_LISTS) {
    const v = field(body, list);
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) throw new WireFormatError(list, `must be a list of endpoints, got ${describe(v)}`);
    const entries = new Array<WireEntry>(v.length);
    for (let index = 0; index < v.length; index++) {
      if (index % ENDPOINTS_PER_STEP === 0 && index > 0) yield;
      entries[index] = { list, index, endpoint: decodeEndpoint(v[index]!, `${list}[${index}]`) };
    }
    out[list] = entries;
  }
  return out;
}

/** Go's marshalling of one endpoint: fields in struct order, zero values left out. */
export function encodeEndpoint(e: WireEndpoint): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (e.dnsName !== '') out.dnsName = e.dnsName;
  if (e.targets.length > 0) out.targets = e.targets;
  if (e.recordType !== '') out.recordType = e.recordType;
  if (e.setIdentifier !== '') out.setIdentifier = e.setIdentifier;
  if (e.recordTTL !== 0) out.recordTTL = e.recordTTL;
  // Go marshals a map with its keys sorted.
  if (Object.keys(e.labels).length > 0) out.labels = Object.fromEntries(Object.entries(e.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  if (e.providerSpecific.length > 0) {
    out.providerSpecific = e.providerSpecific.map((p) => {
      const o: Record<string, string> = {};
      if (p.name !== '') o.name = p.name;
      if (p.value !== '') o.value = p.value;
      return o;
    });
  }
  return out;
}

/** One endpoint's JSON, as an element of encodeEndpointList's list. */
export function encodeEndpointJson(e: WireEndpoint): string {
  return goJson(encodeEndpoint(e));
}

/** The list from its elements' JSON (encodeEndpointJson, possibly kept from an earlier answer). */
export function joinEndpointList(elements: readonly string[]): string {
  return `[${elements.join(',')}]\n`;
}

/**
 * A JSON list of endpoints as json.NewEncoder(w).Encode writes it (with its trailing newline): one
 * way of writing it, so that a list joined from kept elements (webhook/handler.ts) has the same bytes.
 */
export function encodeEndpointList(endpoints: readonly WireEndpoint[]): string {
  return joinEndpointList(endpoints.map(encodeEndpointJson));
}

/** The negotiation answer: `{"include":[…]}` (never the regex form), `{}` for no filter. */
export function encodeDomainFilter(include: readonly string[], exclude: readonly string[] = []): string {
  const out: Record<string, string[]> = {};
  if (include.length > 0) out.include = [...include].sort();
  if (exclude.length > 0) out.exclude = [...exclude].sort();
  return `${goJson(out)}\n`;
}

/** An endpoint with Go's zero values, for building answers. */
export function wireEndpoint(e: Partial<WireEndpoint> & Pick<WireEndpoint, 'dnsName' | 'recordType' | 'targets'>): WireEndpoint {
  return { setIdentifier: '', recordTTL: 0, labels: {}, providerSpecific: [], ...e };
}
