/**
 * OVH's record rules, as its API applies them: which field types exist, how a record's subDomain,
 * target and ttl are validated and stored (with OVH's error messages), and how a record is answered
 * (TXT targets quoted, split in 255-character pieces). The simulator stores records by these rules
 * and the OVH API dnsplane serves (ovhapi/) validates what tools send by them.
 */
import net from 'node:net';
import { badRequest } from './errors.js';
import { HOST, normalizeOtherTarget, stripOneQuotePair } from './record-targets.js';

export { stripOneQuotePair };

export const FIELD_TYPES = [
  'A',
  'AAAA',
  'CAA',
  'CNAME',
  'DKIM',
  'DMARC',
  'DNAME',
  'LOC',
  'MX',
  'NAPTR',
  'NS',
  'PTR',
  'SPF',
  'SRV',
  'SSHFP',
  'TLSA',
  'TXT',
  'HTTPS',
  'SVCB',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** The field types of OVH's published schema (domain.zone.RecordTypeEnum): all but HTTPS and SVCB, which its API has since. */
export const SCHEMA_FIELD_TYPES: readonly FieldType[] = FIELD_TYPES.filter((t) => t !== 'HTTPS' && t !== 'SVCB');

/** fieldType as the published schema reads it (the served OVH API): one of its 17, else OVH's 400. */
export function schemaFieldType(raw: unknown): FieldType {
  const type = normalizeFieldType(raw);
  if (!SCHEMA_FIELD_TYPES.includes(type)) {
    throw badRequest(`[fieldType] Given data (${type}) does not belong to the NamedResolutionFieldTypeEnum enumeration`);
  }
  return type;
}

export function isFieldType(value: unknown): value is FieldType {
  return typeof value === 'string' && (FIELD_TYPES as readonly string[]).includes(value);
}

/** Host names of these types may not carry an underscore. */
const NO_UNDERSCORE: ReadonlySet<string> = new Set(['A', 'AAAA', 'CNAME']);
/** Types whose target is one host name. */
const HOST_TARGET: ReadonlySet<string> = new Set(['CNAME', 'NS', 'PTR', 'DNAME']);

/** A record's content as stored (no id, no zone). */
export interface RecordData {
  subDomain: string;
  fieldType: FieldType;
  target: string;
  ttl: number;
}

const LABEL = /^(?:\*|[a-z0-9_-]+)$/;

export function normalizeFieldType(raw: unknown): FieldType {
  if (raw === undefined) throw badRequest('[fieldType] Property is mandatory');
  if (!isFieldType(raw)) {
    throw badRequest(`[fieldType] Given data (${String(raw)}) does not belong to the NamedResolutionFieldTypeEnum enumeration`);
  }
  return raw;
}

/**
 * subDomain: lowercase, labels of [a-z0-9_-] or a leading `*`, no underscore for A/AAAA/CNAME. Absent
 * or null (the schema declares it nullable) is the apex.
 */
export function normalizeSubDomain(raw: unknown, fieldType: FieldType, zone: string): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw !== 'string') throw badRequest(`[subDomain] Given data (${String(raw)}) is not valid for type string`);
  const sub = raw.toLowerCase();
  if (sub === '') return '';
  const labels = sub.split('.');
  const valid = labels.every((l, i) => l.length > 0 && l.length <= 63 && LABEL.test(l) && (l !== '*' || i === 0)) && sub.length + 1 + zone.length <= 253;
  if (!valid) throw badRequest(`Invalid domain name: ${raw}`);
  if (NO_UNDERSCORE.has(fieldType) && sub.includes('_')) {
    throw badRequest('Invalid domain name, underscore not allowed');
  }
  return sub;
}

/**
 * ttl: an integer >= 0; 1..59 is stored as 60; 0 means the zone default. Absent is the zone default;
 * so is null where the schema declares it nullable (`nullable`: PUT …/record/{id}, domain.zone.RecordUpdate).
 */
export function normalizeTtl(raw: unknown, nullable = false): number {
  if (raw === undefined || (nullable && raw === null)) return 0;
  if (typeof raw !== 'number' || !Number.isInteger(raw)) {
    throw badRequest(`[ttl] Given data (${String(raw)}) is not valid for type long`);
  }
  if (raw < 0) throw badRequest(`Invalid TTL: ${raw} (must be 0 or more)`);
  if (raw > 0 && raw < 60) return 60;
  return raw;
}

/**
 * target: validated per type; TXT (and SPF) loses one pair of surrounding quotes; the types of
 * record-targets.ts by its rules (`subDomain`, when known, for DMARC's name).
 */
export function normalizeTarget(raw: unknown, fieldType: FieldType, subDomain?: string): string {
  if (raw === undefined) throw badRequest('[target] Property is mandatory');
  if (typeof raw !== 'string') throw badRequest(`[target] Given data (${String(raw)}) is not valid for type string`);
  if (/[\r\n\0]/.test(raw)) throw badRequest(`Invalid ${fieldType} target: control characters are not allowed`);
  if (fieldType === 'TXT') {
    const value = stripOneQuotePair(raw);
    if (value === '') throw badRequest('Invalid TXT target: empty value');
    return value;
  }
  if (raw.trim() === '') throw badRequest(`Invalid ${fieldType} target: empty value`);
  const fail = (): never => {
    throw badRequest(`Invalid ${fieldType} target: ${raw}`);
  };
  switch (fieldType) {
    case 'A':
      if (!net.isIPv4(raw)) throw badRequest(`Invalid IPv4 address: ${raw}`);
      break;
    case 'AAAA':
      if (!net.isIPv6(raw)) throw badRequest(`Invalid IPv6 address: ${raw}`);
      break;
    case 'MX':
      if (!parseMx(raw)) fail();
      break;
    case 'SRV':
      if (!parseSrv(raw)) fail();
      break;
    case 'CAA':
      if (!parseCaa(raw)) fail();
      break;
    case 'NAPTR':
    case 'TLSA':
    case 'SSHFP':
    case 'LOC':
    case 'SPF':
    case 'DKIM':
    case 'DMARC':
      return normalizeOtherTarget(raw, fieldType, subDomain);
    default:
      if (HOST_TARGET.has(fieldType) && !HOST.test(raw)) fail();
  }
  return raw;
}

/** A call's JSON body as an object, or OVH's 400 (`bodyInvalid`: a body was sent and is not JSON). */
export function bodyObject(body: unknown, bodyInvalid: boolean): Record<string, unknown> {
  if (bodyInvalid) throw badRequest('Invalid JSON received');
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Invalid body: a JSON object is expected');
  return body as Record<string, unknown>;
}

/** OVH's 400 for a read-only property (PUT cannot change fieldType), and, with `reject`, for an unknown one. */
export function checkProperties(body: Record<string, unknown>, writable: readonly string[], readOnly: readonly string[], reject: boolean): void {
  const keys = Object.keys(body);
  const ro = keys.filter((k) => readOnly.includes(k));
  if (ro.length > 0) throw badRequest(`Try to alter read-only properties: ${ro.join(', ')}`);
  const unknown = keys.filter((k) => !writable.includes(k));
  if (reject && unknown.length > 0) throw badRequest(`Unknown properties: ${unknown.join(', ')}`);
}

/** The properties POST …/record takes, and those it refuses as read-only. */
export const CREATE_PROPERTIES = { writable: ['fieldType', 'subDomain', 'target', 'ttl'], readOnly: ['id', 'zone'] } as const;
/** The properties PUT …/record/{id} takes, and those it refuses as read-only. */
export const UPDATE_PROPERTIES = { writable: ['subDomain', 'target', 'ttl'], readOnly: ['fieldType', 'id', 'zone'] } as const;

/** A PUT's changes validated by the record's type, as OVH validates them; what is absent stays absent. */
export function normalizePatch(
  patch: { subDomain?: unknown; target?: unknown; ttl?: unknown },
  fieldType: FieldType,
  zone: string,
): { subDomain?: string; target?: string; ttl?: number } {
  return {
    ...(patch.subDomain !== undefined ? { subDomain: normalizeSubDomain(patch.subDomain, fieldType, zone) } : {}),
    ...(patch.target !== undefined
      ? { target: normalizeTarget(patch.target, fieldType, typeof patch.subDomain === 'string' ? patch.subDomain : undefined) }
      : {}),
    ...(patch.ttl !== undefined ? { ttl: normalizeTtl(patch.ttl, true) } : {}),
  };
}

/** Validates a whole record body (POST, or direct edits). */
export function normalizeRecord(input: { fieldType?: unknown; subDomain?: unknown; target?: unknown; ttl?: unknown }, zone: string): RecordData {
  const fieldType = normalizeFieldType(input.fieldType);
  const subDomain = normalizeSubDomain(input.subDomain, fieldType, zone);
  return { fieldType, subDomain, target: normalizeTarget(input.target, fieldType, subDomain), ttl: normalizeTtl(input.ttl) };
}

// --- targets ---

const U16 = (s: string): number | null => {
  if (!/^\d{1,5}$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
};

export function parseMx(target: string): { preference: number; exchange: string } | null {
  const m = /^(\d+)\s+(\S+)$/.exec(target.trim());
  if (!m?.[1] || !m[2]) return null;
  const preference = U16(m[1]);
  if (preference === null || !HOST.test(m[2])) return null;
  return { preference, exchange: m[2] };
}

export function parseSrv(target: string): { priority: number; weight: number; port: number; target: string } | null {
  const m = /^(\d+)\s+(\d+)\s+(\d+)\s+(\S+)$/.exec(target.trim());
  if (!m?.[1] || !m[2] || !m[3] || !m[4]) return null;
  const priority = U16(m[1]);
  const weight = U16(m[2]);
  const port = U16(m[3]);
  if (priority === null || weight === null || port === null || !HOST.test(m[4])) return null;
  return { priority, weight, port, target: m[4] };
}

export function parseCaa(target: string): { flags: number; tag: string; value: string } | null {
  const m = /^(\d{1,3})\s+([A-Za-z0-9]+)\s+(.+)$/.exec(target.trim());
  if (!m?.[1] || !m[2] || m[3] === undefined) return null;
  const flags = Number(m[1]);
  if (flags > 255) return null;
  return { flags, tag: m[2].toLowerCase(), value: stripOneQuotePair(m[3]) };
}

// --- TXT ---

/** How the API shows a stored TXT target: quoted, split in 255-character chunks when longer. */
export function txtForAnswer(stored: string): string {
  if (stored.length <= 255) return `"${stored}"`;
  const chunks: string[] = [];
  for (let i = 0; i < stored.length; i += 255) chunks.push(`"${stored.slice(i, i + 255)}"`);
  return chunks.join(' ');
}

/** A record as the API shows it (GET …/record/{id}, a POST's answer, an expanded list's items). */
export function recordAnswer(
  zone: string,
  r: { id: number | string; subDomain: string; fieldType: string; target: string; ttl: number },
  quoteTxt = true,
): Record<string, unknown> {
  const target = (r.fieldType === 'TXT' || r.fieldType === 'SPF') && quoteTxt ? txtForAnswer(r.target) : r.target;
  return { fieldType: r.fieldType, id: typeof r.id === 'string' ? Number(r.id) : r.id, subDomain: r.subDomain, target, ttl: r.ttl, zone };
}
