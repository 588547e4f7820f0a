/**
 * OVH's target syntax for the types beyond addresses and hosts (issue 43), as the simulator stores
 * them and the served OVH API checks what tools send: one string each, BIND's text of the record.
 *
 * | type  | OVH's target                                                        | answered as |
 * |-------|---------------------------------------------------------------------|-------------|
 * | NAPTR | `order preference "flags" "services" "regexp" replacement.`         | stored      |
 * | TLSA  | `usage selector matching-type hex`                                  | stored      |
 * | SSHFP | `algorithm fingerprint-type hex`                                    | stored      |
 * | LOC   | RFC 1876 text, `52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m`  | stored      |
 * | SPF   | `v=spf1 …`, one pair of quotes around it removed                    | quoted, as TXT |
 * | DKIM  | `v=DKIM1;k=rsa;p=…`, raw: quotes refused                            | raw         |
 * | DMARC | `v=DMARC1;p=…`, raw, only under `_dmarc`: quotes refused            | raw         |
 *
 * OVH's messages for these are not published: a refusal is `Invalid <type> target: <target>` as for the
 * other types, `Invalid subfield found in <type>` for quotes or an unknown tag in DKIM and DMARC (the
 * message clients report), `Invalid domain name: DMARC record must be under _dmarc` (assumed). Pure.
 */
import { badRequest } from './errors.js';

/** A host target as OVH takes it (`@`, a name, with or without its final dot, or `.`). */
export const HOST = /^(?:@|[A-Za-z0-9_*-]+(?:\.[A-Za-z0-9_-]+)*\.?|\.)$/;
const QUOTED = '"((?:[^"\\\\]|\\\\.)*)"';
const NAPTR = new RegExp(`^(\\d{1,5})\\s+(\\d{1,5})\\s+${QUOTED}\\s+${QUOTED}\\s+${QUOTED}\\s+(\\S+)$`);
const LOC =
  /^\d{1,2}(?:\s+\d{1,2}(?:\s+\d{1,2}(?:\.\d{1,3})?)?)?\s+[NS]\s+\d{1,3}(?:\s+\d{1,2}(?:\s+\d{1,2}(?:\.\d{1,3})?)?)?\s+[EW]\s+-?\d+(?:\.\d{1,2})?m?(?:\s+\d+(?:\.\d{1,2})?m?){0,3}$/i;

const DKIM_TAGS = ['v', 'g', 'h', 'k', 'n', 'p', 's', 't'];
const DMARC_TAGS = ['v', 'p', 'pct', 'rua', 'sp', 'aspf'];

/** Strips one pair of surrounding double quotes. */
export function stripOneQuotePair(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

function tagsValid(target: string, tags: readonly string[], version: string): boolean {
  const pieces = target.split(';').map((p) => p.trim());
  if (pieces[pieces.length - 1] === '') pieces.pop();
  const seen = new Set<string>();
  for (const [i, piece] of pieces.entries()) {
    const eq = piece.indexOf('=');
    const tag = piece.slice(0, eq).trim();
    if (eq <= 0 || !tags.includes(tag) || seen.has(tag)) return false;
    if (tag === 'v' && (i !== 0 || piece.slice(eq + 1).trim() !== version)) return false;
    seen.add(tag);
  }
  return seen.has('p');
}

/** NAPTR's fields of an OVH target (`order pref "flags" "services" "regexp" replacement`); null when it is not one. */
export function naptrFields(
  target: string,
): { order: number; preference: number; flags: string; services: string; regexp: string; replacement: string } | null {
  const m = NAPTR.exec(target.trim());
  if (!m) return null;
  const text = (s: string | undefined) => (s ?? '').replace(/\\(.)/g, '$1');
  return { order: Number(m[1]), preference: Number(m[2]), flags: text(m[3]), services: text(m[4]), regexp: text(m[5]), replacement: m[6] ?? '.' };
}

/** Checks a target of one of these types as OVH would; returns what OVH stores. */
export function normalizeOtherTarget(raw: string, fieldType: string, subDomain?: string): string {
  const fail = (): never => {
    throw badRequest(`Invalid ${fieldType} target: ${raw}`);
  };
  const t = raw.trim();
  switch (fieldType) {
    case 'NAPTR': {
      const n = naptrFields(t);
      if (!n || n.order > 65535 || n.preference > 65535 || !HOST.test(n.replacement)) fail();
      return t;
    }
    case 'TLSA': {
      const m = /^([0-3])\s+([01])\s+([0-2])\s+([0-9A-Fa-f\s]+)$/.exec(t);
      if (!m || (m[4] ?? '').replace(/\s/g, '').length % 2 !== 0) fail();
      return t;
    }
    case 'SSHFP':
      if (!/^[1-6]\s+[12]\s+[0-9A-Fa-f]+$/.test(t)) fail();
      return t;
    case 'LOC':
      if (!LOC.test(t)) fail();
      return t;
    case 'SPF': {
      const value = stripOneQuotePair(t);
      if (!/^v=spf1(\s|$)/i.test(value)) fail();
      return value;
    }
    case 'DKIM':
    case 'DMARC': {
      const dmarc = fieldType === 'DMARC';
      if (t.includes('"') || !tagsValid(t, dmarc ? DMARC_TAGS : DKIM_TAGS, dmarc ? 'DMARC1' : 'DKIM1')) {
        throw badRequest(`Invalid subfield found in ${fieldType}`);
      }
      if (dmarc && subDomain !== undefined && subDomain.split('.')[0] !== '_dmarc') throw badRequest('Invalid domain name: DMARC record must be under _dmarc');
      return t;
    }
    default:
      return t;
  }
}
