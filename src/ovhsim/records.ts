/**
 * What the simulator adds to OVH's record rules (ovhwire/records.ts): zone names made by hand, the
 * types OVH publishes as TXT, owner and target names made absolute, the DNS character strings of a
 * TXT value, and the BIND text of a zone (export).
 */
import { stripOneQuotePair, txtForAnswer, type RecordData } from '../ovhwire/records.js';
import type { SimSoaSettings } from './types.js';

/** OVH publishes these field types as TXT records. */
export const TXT_LIKE: ReadonlySet<string> = new Set(['TXT', 'SPF', 'DKIM', 'DMARC']);

/** Validates a zone name (lowercase it first). Throws a plain Error: zones are made by hand, not by the API. */
export function assertZoneName(zone: string): void {
  if (zone.length === 0 || zone.length > 253 || !/^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(zone)) {
    throw new Error(`invalid zone name ${JSON.stringify(zone)}`);
  }
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
  const lines = [`$TTL ${defaultTtl}`, `@\tIN SOA ${mname} ${rname} (${serial} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.nxDomainTtl})`];
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

// --- the types beyond addresses and hosts, on the wire ---

/** TLSA's and SSHFP's numbers and hex of an OVH target; null when it is not one. */
export function numbersAndHex(target: string, numbers: number): { values: number[]; hex: string } | null {
  const parts = target.trim().split(/\s+/);
  if (parts.length <= numbers || !parts.slice(0, numbers).every((p) => /^\d{1,3}$/.test(p))) return null;
  const hex = parts.slice(numbers).join('');
  return /^([0-9a-fA-F]{2})+$/.test(hex) ? { values: parts.slice(0, numbers).map(Number), hex: hex.toLowerCase() } : null;
}
