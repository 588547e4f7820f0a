/**
 * The zone file GET /domain/zone/{z}/export answers (BIND text, no record ids), read back into records,
 * and compared with records as the API shows them. Pure. Used by the drift check (core/drift/drift.ts) to find
 * records edited in place — same id, new target or TTL — with one call instead of one GET per record.
 *
 * Reading: `;` comments, `( … )` spanning lines, `$ORIGIN`, `$TTL`, `@`, relative and absolute owner
 * names, an owner left blank (the previous one), TTL and class in either order. A record without a TTL
 * is read with ttl 0 (OVH writes none for a record at the zone default, which the API shows as 0).
 * SOA lines are skipped. The TXT-like types OVH has (SPF, DKIM, DMARC) are exported as TXT.
 *
 * Comparing: per owner name, the multiset of (type, ttl, target) — TXT targets decoded (OVH quotes
 * them in answers and in the export), others with whitespace collapsed and lowercased. An owner whose
 * multisets differ is "suspect": the caller GETs its records. A difference of form only (a format this
 * reader does not foresee) costs GETs, never a missed change.
 */
import { decodeTxt } from '../dns/index.js';
import { formatTxtPresentation } from '../dns/txt.js';
import { isTxtFamily, type RecordType } from '../dns/types.js';
import { ovhTargetToCanonical } from './mapping.js';

/** OVH's zone default TTL: a record stored with TTL 0 is served with it. */
export const OVH_DEFAULT_TTL = 3600;

export interface ZoneFileRecord {
  /** Relative to the zone, '' for the apex, lowercase. */
  subDomain: string;
  /** As exported: TXT for every TXT-like type. */
  type: string;
  ttl: number;
  /** The rest of the line after the type, trimmed. */
  target: string;
}

/** Types OVH exports as TXT. */
const TXT_LIKE = new Set(['TXT', 'SPF', 'DKIM', 'DMARC']);

const TOKEN = /"(?:[^"\\]|\\.)*"|[^\s"]+/g;

/** Strips a `;` comment outside quotes; counts parentheses outside quotes. */
function scan(line: string): { text: string; open: number } {
  let quoted = false;
  let open = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && quoted) {
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === ';') return { text: line.slice(0, i), open };
    else if (!quoted && c === '(') open++;
    else if (!quoted && c === ')') open--;
  }
  return { text: line, open };
}

/** The text with the parentheses outside quotes replaced by spaces. */
function unparen(text: string): string {
  let quoted = false;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && quoted) {
      out += c + (text[i + 1] ?? '');
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    out += !quoted && (c === '(' || c === ')') ? ' ' : c;
  }
  return out;
}

/** The records of a zone file. Throws an Error naming the line when a line cannot be read. */
export function parseZoneFile(text: string, zone: string): ZoneFileRecord[] {
  return parseZoneFileLines(text, zone).map(({ line: _line, type, ...r }) => ({ ...r, type: TXT_LIKE.has(type) ? 'TXT' : type }));
}

/** A record of a zone file, with the line it starts on and its type as written (uppercase). */
export interface ZoneFileLine extends ZoneFileRecord {
  line: number;
}

/**
 * The records of a zone file with the line each starts on, types as written (SPF stays SPF): what an
 * import needs to name the line of a record it cannot take. SOA lines are skipped, as in parseZoneFile.
 */
export function parseZoneFileLines(text: string, zone: string): ZoneFileLine[] {
  const zoneAbs = `${zone.toLowerCase()}.`;
  let origin = zoneAbs;
  let previousOwner: string | undefined;
  const out: ZoneFileLine[] = [];

  // Logical lines: parentheses join physical lines.
  const logical: Array<{ text: string; lineNo: number }> = [];
  let pending = '';
  let depth = 0;
  let startNo = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    const { text: t, open } = scan(raw);
    if (depth === 0) {
      pending = t;
      startNo = i + 1;
    } else {
      pending += ` ${t}`;
    }
    depth += open;
    if (depth <= 0) {
      depth = 0;
      logical.push({ text: unparen(pending), lineNo: startNo });
      pending = '';
    }
  });
  if (depth > 0) throw new Error(`zone file line ${startNo}: unclosed parenthesis`);

  const absolute = (name: string): string => {
    const n = name.toLowerCase();
    if (n === '@') return origin;
    return n.endsWith('.') ? n : `${n}.${origin}`;
  };

  for (const { text: line, lineNo } of logical) {
    if (line.trim() === '') continue;
    const tokens = [...line.matchAll(TOKEN)];
    const first = tokens[0];
    if (!first) continue;
    if (first[0].startsWith('$')) {
      const directive = first[0].toUpperCase();
      if (directive === '$ORIGIN' && tokens[1]) origin = absolute(tokens[1][0]);
      continue; // $TTL: records without a TTL are read as 0 (see the module comment); $INCLUDE: not used by OVH
    }
    let i = 0;
    let owner: string;
    if (/^\s/.test(line)) {
      if (previousOwner === undefined) throw new Error(`zone file line ${lineNo}: a record without an owner name comes first`);
      owner = previousOwner;
    } else {
      owner = absolute(first[0]);
      i = 1;
    }
    previousOwner = owner;
    let ttl = 0;
    for (let k = 0; k < 2; k++) {
      const t = tokens[i]?.[0];
      if (t === undefined) break;
      if (/^\d+$/.test(t)) {
        ttl = Number(t);
        i++;
      } else if (/^(IN|CH|HS|CS)$/i.test(t)) {
        i++;
      }
    }
    const typeToken = tokens[i];
    if (!typeToken || !/^[A-Za-z][A-Za-z0-9]*$/.test(typeToken[0])) throw new Error(`zone file line ${lineNo}: no record type`);
    const type = typeToken[0].toUpperCase();
    if (type === 'SOA') continue;
    const target = line.slice((typeToken.index ?? 0) + typeToken[0].length).trim();
    let subDomain: string;
    if (owner === zoneAbs) subDomain = '';
    else if (owner.endsWith(`.${zoneAbs}`)) subDomain = owner.slice(0, -(zoneAbs.length + 1));
    else throw new Error(`zone file line ${lineNo}: owner ${owner} is outside the zone ${zoneAbs}`);
    out.push({ subDomain, type, ttl, target, line: lineNo });
  }
  return out;
}

function comparable(type: string, target: string): string {
  if (TXT_LIKE.has(type)) return decodeTxt(target.trim());
  return target.trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * The owner names (subDomains) whose records in the zone file differ from `records` (as the API shows
 * them): a record changed in place, or added or removed, under that name.
 */
export function differingOwners(
  exported: readonly ZoneFileRecord[],
  records: ReadonlyArray<{ subDomain: string; fieldType: string; target: string; ttl: number }>,
): Set<string> {
  const index = (entries: Array<[string, string]>): Map<string, string[]> => {
    const m = new Map<string, string[]>();
    for (const [owner, key] of entries) m.set(owner, [...(m.get(owner) ?? []), key]);
    for (const list of m.values()) list.sort();
    return m;
  };
  const a = index(exported.map((r) => [r.subDomain, `${r.type} ${r.ttl} ${comparable(r.type, r.target)}`]));
  const b = index(
    records.map((r) => {
      const type = TXT_LIKE.has(r.fieldType.toUpperCase()) ? 'TXT' : r.fieldType.toUpperCase();
      return [r.subDomain.toLowerCase(), `${type} ${r.ttl} ${comparable(type, r.target)}`];
    }),
  );
  const out = new Set<string>();
  for (const owner of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(owner) ?? [];
    const y = b.get(owner) ?? [];
    if (x.length !== y.length || x.some((k, i) => k !== y[i])) out.add(owner);
  }
  return out;
}

/** A record as a zone file writes it: as OVH stores it (TXT quoted), with an optional comment. */
export interface ZoneFileEntry {
  subDomain: string;
  fieldType: string;
  ttl: number;
  target: string;
  /** Written after the record as `; comment` (one line; newlines become spaces). */
  comment?: string;
}

/**
 * A record's target as a zone file writes it: as OVH stores it, but TXT, SPF, DKIM and DMARC in RFC
 * 1035's presentation form, quoted (OVH keeps the quotes inside a TXT value unescaped: `"say "hi""`,
 * which a zone file reader splits; DKIM and DMARC it keeps raw, where `;` would start a comment). A
 * value of those types dnsplane cannot read (one made elsewhere that fails its checks) is quoted as
 * stored: unquoted, a `;` in it would start a comment and cut the value when the file is read back.
 */
export function zoneFileTarget(fieldType: string, target: string, zone: string): string {
  const type = fieldType.toUpperCase();
  if (!isTxtFamily(type)) return target;
  const text = ovhTargetToCanonical(type as RecordType, target, zone);
  if (text !== undefined) return formatTxtPresentation(text);
  return formatTxtPresentation(target);
}

export interface ZoneFileHeader {
  /** Comment lines written first (each prefixed with `; `). */
  comments: readonly string[];
  /** The SOA written after $TTL, or none. */
  soa?: { mname: string; rname: string; serial: number; refresh: number; retry: number; expire: number; minimum: number; ttl: number };
}

/**
 * A zone file (RFC 1035 master file) of records as OVH stores them: `$ORIGIN`, `$TTL` (OVH's
 * default: a record with TTL 0 is written without one, and parseZoneFile reads it back as 0), the
 * SOA when given, then one line per record — names relative to the origin (`@` for the apex), sorted by
 * name (apex first), type and target, so that two exports of one zone compare line by line. Pure.
 */
export function formatZoneFile(zone: string, records: readonly ZoneFileEntry[], header: ZoneFileHeader): string {
  const lines = header.comments.map((c) => `; ${c.replace(/\s+/g, ' ')}`.trimEnd());
  lines.push(`$ORIGIN ${zone.toLowerCase()}.`, `$TTL ${OVH_DEFAULT_TTL}`);
  const { soa } = header;
  if (soa)
    lines.push(
      `@\t${soa.ttl}\tIN\tSOA\t${absoluteHost(soa.mname)} ${absoluteHost(soa.rname)} ${soa.serial} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.minimum}`,
    );
  const sorted = [...records].sort(
    (a, b) => compareNames(a.subDomain, b.subDomain) || cmp(a.fieldType.toUpperCase(), b.fieldType.toUpperCase()) || cmp(a.target, b.target) || a.ttl - b.ttl,
  );
  for (const r of sorted) {
    const owner = r.subDomain === '' ? '@' : r.subDomain.toLowerCase();
    const ttl = r.ttl > 0 ? String(r.ttl) : '';
    const comment = r.comment ? `\t; ${r.comment.replace(/\s+/g, ' ')}` : '';
    lines.push(`${owner}\t${ttl}\tIN\t${r.fieldType.toUpperCase()}\t${r.target.replace(/[\r\n]+/g, ' ')}${comment}`);
  }
  return `${lines.join('\n')}\n`;
}

function absoluteHost(name: string): string {
  return name.endsWith('.') ? name : `${name}.`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The apex first, then names by their labels from the right (a.b after b, so a zone file reads as a tree). */
function compareNames(a: string, b: string): number {
  if (a === b) return 0;
  if (a === '') return -1;
  if (b === '') return 1;
  const x = a.toLowerCase().split('.').reverse();
  const y = b.toLowerCase().split('.').reverse();
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const c = cmp(x[i]!, y[i]!);
    if (c !== 0) return c;
  }
  return x.length - y.length;
}
