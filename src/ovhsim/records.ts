/**
 * OVH's record rules: which field types exist, how subDomain, target and ttl are validated and stored,
 * how TXT targets are shown in answers, and the BIND text of a zone (export).
 */
import net from 'node:net';
import { badRequest } from './errors.js';
import type { SimSoaSettings } from './types.js';

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

export function isFieldType(value: unknown): value is FieldType {
  return typeof value === 'string' && (FIELD_TYPES as readonly string[]).includes(value);
}

/** Host names of these types may not carry an underscore. */
const NO_UNDERSCORE: ReadonlySet<string> = new Set(['A', 'AAAA', 'CNAME']);
/** OVH publishes these field types as TXT records. */
export const TXT_LIKE: ReadonlySet<string> = new Set(['TXT', 'SPF', 'DKIM', 'DMARC']);
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
const HOST = /^(?:@|[A-Za-z0-9_*-]+(?:\.[A-Za-z0-9_-]+)*\.?|\.)$/;

/** Validates a zone name (lowercase it first). Throws a plain Error: zones are made by hand, not by the API. */
export function assertZoneName(zone: string): void {
  if (zone.length === 0 || zone.length > 253 || !/^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(zone)) {
    throw new Error(`invalid zone name ${JSON.stringify(zone)}`);
  }
}

export function normalizeFieldType(raw: unknown): FieldType {
  if (raw === undefined) throw badRequest('[fieldType] Property is mandatory');
  if (!isFieldType(raw)) {
    throw badRequest(`[fieldType] Given data (${String(raw)}) does not belong to the NamedResolutionFieldTypeEnum enumeration`);
  }
  return raw;
}

/** subDomain: lowercase, labels of [a-z0-9_-] or a leading `*`, no underscore for A/AAAA/CNAME. */
export function normalizeSubDomain(raw: unknown, fieldType: FieldType, zone: string): string {
  if (raw === undefined) return '';
  if (typeof raw !== 'string') throw badRequest(`[subDomain] Given data (${String(raw)}) is not valid for type string`);
  const sub = raw.toLowerCase();
  if (sub === '') return '';
  const labels = sub.split('.');
  const valid =
    labels.every((l, i) => l.length > 0 && l.length <= 63 && LABEL.test(l) && (l !== '*' || i === 0)) &&
    sub.length + 1 + zone.length <= 253;
  if (!valid) throw badRequest(`Invalid domain name: ${raw}`);
  if (NO_UNDERSCORE.has(fieldType) && sub.includes('_')) {
    throw badRequest('Invalid domain name, underscore not allowed');
  }
  return sub;
}

/** ttl: an integer >= 0; 1..59 is stored as 60; 0 means the zone default. */
export function normalizeTtl(raw: unknown): number {
  if (raw === undefined) return 0;
  if (typeof raw !== 'number' || !Number.isInteger(raw)) {
    throw badRequest(`[ttl] Given data (${String(raw)}) is not valid for type long`);
  }
  if (raw < 0) throw badRequest(`Invalid TTL: ${raw} (must be 0 or more)`);
  if (raw > 0 && raw < 60) return 60;
  return raw;
}

/** Strips one pair of surrounding double quotes. */
export function stripOneQuotePair(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

/** target: validated per type; TXT loses one pair of surrounding quotes. */
export function normalizeTarget(raw: unknown, fieldType: FieldType): string {
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
    default:
      if (HOST_TARGET.has(fieldType) && !HOST.test(raw)) fail();
  }
  return raw;
}

/** Validates a whole record body (POST, or direct edits). */
export function normalizeRecord(
  input: { fieldType?: unknown; subDomain?: unknown; target?: unknown; ttl?: unknown },
  zone: string,
): RecordData {
  const fieldType = normalizeFieldType(input.fieldType);
  return {
    fieldType,
    subDomain: normalizeSubDomain(input.subDomain, fieldType, zone),
    target: normalizeTarget(input.target, fieldType),
    ttl: normalizeTtl(input.ttl),
  };
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

/**
 * A host name of a target made absolute, lowercase, without the trailing dot (BIND rule: a name
 * without a trailing dot is relative to the zone; `@` is the zone itself).
 */
export function absoluteName(host: string, zone: string): string {
  const h = host.toLowerCase();
  if (h === '@') return zone;
  if (h === '.') return '';
  if (h.endsWith('.')) return h.slice(0, -1);
  return `${h}.${zone}`;
}

/** The owner name of a record. */
export function ownerName(subDomain: string, zone: string): string {
  return subDomain === '' ? zone : `${subDomain}.${zone}`;
}

// --- TXT ---

/** How the API shows a stored TXT target: quoted, split in 255-character chunks when longer. */
export function txtForAnswer(stored: string): string {
  if (stored.length <= 255) return `"${stored}"`;
  const chunks: string[] = [];
  for (let i = 0; i < stored.length; i += 255) chunks.push(`"${stored.slice(i, i + 255)}"`);
  return chunks.join(' ');
}

/**
 * Parses zone-file character strings (`"a" "b\"c"`); null when the text is not a sequence of quoted strings.
 */
function parseQuotedStrings(text: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === '\t') i++;
    if (i >= text.length) break;
    if (text[i] !== '"') return null;
    i++;
    let cur = '';
    for (;;) {
      if (i >= text.length) return null;
      const c = text[i];
      if (c === '\\' && i + 1 < text.length) {
        cur += text[i + 1];
        i += 2;
      } else if (c === '"') {
        i++;
        break;
      } else {
        cur += c;
        i++;
      }
    }
    out.push(cur);
    if (i < text.length && text[i] !== ' ' && text[i] !== '\t') return null;
  }
  return out.length > 0 ? out : null;
}

/**
 * The DNS character strings of a stored TXT value, as the zone file OVH generates (`"<stored>"`) would give
 * them: a stored `a" "b` is two strings; each string longer than 255 bytes is split in 255-byte pieces.
 */
export function txtWireStrings(stored: string): Buffer[] {
  const strings = parseQuotedStrings(`"${stored}"`) ?? [stored];
  const out: Buffer[] = [];
  for (const s of strings) {
    const bytes = Buffer.from(s, 'utf8');
    if (bytes.length === 0) out.push(bytes);
    for (let i = 0; i < bytes.length; i += 255) out.push(bytes.subarray(i, i + 255));
  }
  return out;
}

// --- export ---

/** The zone file of a set of records, as GET …/export answers it (no ids). */
export function bindZoneFile(
  zone: string,
  records: readonly RecordData[],
  serial: number,
  soa: SimSoaSettings,
  nameServers: readonly string[],
  defaultTtl: number,
): string {
  const dot = (h: string): string => (h.endsWith('.') ? h : `${h}.`);
  const mname = dot(nameServers[0] ?? `ns.${zone}`);
  const rname = dot(soa.email.replace('@', '.'));
  const lines = [
    `$TTL ${defaultTtl}`,
    `@\tIN SOA ${mname} ${rname} (${serial} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.nxDomainTtl})`,
  ];
  const width = Math.max(8, ...records.map((r) => (r.subDomain || '@').length));
  for (const r of records) {
    const name = (r.subDomain || '@').padEnd(width);
    const ttl = r.ttl > 0 ? `${r.ttl} ` : '';
    const type = TXT_LIKE.has(r.fieldType) ? 'TXT' : r.fieldType;
    const target = TXT_LIKE.has(r.fieldType) ? txtForAnswer(stripOneQuotePair(r.target)) : r.target;
    lines.push(`${name} ${ttl}IN ${type.padEnd(6)} ${target}`);
  }
  return `${lines.join('\n')}\n`;
}
