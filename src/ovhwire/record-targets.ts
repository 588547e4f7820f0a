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

const HOST = /^(?:@|[A-Za-z0-9_*-]+(?:\.[A-Za-z0-9_-]+)*\.?|\.)$/;
const QUOTED = '"(?:[^"\\\\]|\\\\.)*"';
const NAPTR = new RegExp(`^(\\d{1,5})\\s+(\\d{1,5})\\s+${QUOTED}\\s+${QUOTED}\\s+${QUOTED}\\s+(\\S+)$`);
const LOC =
  /^\d{1,2}(?:\s+\d{1,2}(?:\s+\d{1,2}(?:\.\d{1,3})?)?)?\s+[NS]\s+\d{1,3}(?:\s+\d{1,2}(?:\s+\d{1,2}(?:\.\d{1,3})?)?)?\s+[EW]\s+-?\d+(?:\.\d{1,2})?m?(?:\s+\d+(?:\.\d{1,2})?m?){0,3}$/i;

const DKIM_TAGS = ['v', 'g', 'h', 'k', 'n', 'p', 's', 't'];
const DMARC_TAGS = ['v', 'p', 'pct', 'rua', 'sp', 'aspf'];

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

/** Checks a target of one of these types as OVH would; returns what OVH stores. */
export function normalizeOtherTarget(raw: string, fieldType: string, subDomain?: string): string {
  const fail = (): never => {
    throw badRequest(`Invalid ${fieldType} target: ${raw}`);
  };
  const t = raw.trim();
  switch (fieldType) {
    case 'NAPTR': {
      const m = NAPTR.exec(t);
      if (!m || Number(m[1]) > 65535 || Number(m[2]) > 65535 || !HOST.test(m[3] ?? '')) fail();
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
      const value = t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
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
