/**
 * Record targets: parsing and canonical form per record type. Pure.
 *
 * Two targets are the same record when their canonical forms are equal strings; everything that
 * compares targets (the diff, the OVH mapping, the operations builder) goes through canonicalTarget.
 * The canonical form is idempotent: canonicalTarget(t, canonicalTarget(t, x)) === canonicalTarget(t, x).
 *
 * | type  | canonical form                                                                   |
 * |-------|----------------------------------------------------------------------------------|
 * | A     | dotted quad, no leading zeros (`192.0.2.1`)                                      |
 * | AAAA  | RFC 5952: lowercase, longest zero run compressed; IPv4-mapped as `::ffff:a.b.c.d` |
 * | CNAME | host name as normalizeName gives it (underscores allowed), no trailing dot       |
 * | NS    | same as CNAME                                                                    |
 * | MX    | `<preference> <host>`, preference 0-65535; host may be `.` (null MX, RFC 7505)   |
 * | SRV   | `<priority> <weight> <port> <host>`, each 0-65535; host may be `.` (no service)  |
 * | TXT   | the text itself, unquoted (see below)                                            |
 * | CAA   | `<flags> <tag> "<value>"`, flags 0-255, tag issue/issuewild/iodef lowercase      |
 * | PTR   | same as CNAME (in any zone, not only reverse ones)                               |
 * | DNAME | same as CNAME                                                                    |
 * | NAPTR, TLSA, SSHFP | see targets-services.ts                                             |
 * | LOC   | BIND's text of RFC 1876 (`52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m`), loc.ts |
 * | SPF, DKIM, DMARC | the text, as TXT, checked by what OVH's record of the type holds (mail-policy.ts) |
 *
 * Except for TXT, surrounding whitespace is ignored and fields may be separated by any run of
 * whitespace; numbers may carry leading zeros (`010` is `10`) except in IPv4 addresses, where a
 * leading zero is rejected as ambiguous (octal).
 *
 * TXT: the target is the text (decodeTxt). A target entirely in presentation form — `"…"` or several
 * quoted strings `"…" "…"`, with `\"` and `\\` escapes — is decoded (the strings joined); else a
 * target wrapped in one pair of double quotes loses that pair; anything else is taken literally,
 * quotes included. So `"v=spf1 -all"` and `v=spf1 -all` are the same value, and a caller cannot
 * write a TXT value that starts and ends with a double quote. A text that would decode again (for
 * example the input `"\"x\""`, whose text `"x"` is itself quoted) is rejected as ambiguous, so that
 * a canonical TXT value reads the same after OVH quotes it in its answers.
 * Rejected: empty text, more than 4000 characters, control characters.
 */
import { isIP } from 'node:net';
import { InvalidInputError } from './errors.js';
import { canonicalLoc } from './loc.js';
import { checkMailPolicy } from './mail-policy.js';
import { CONTROL, canonicalHost, parseUint, tokens, type TargetContext } from './target-parts.js';
import { canonicalNaptr, canonicalSshfp, canonicalTlsa } from './targets-services.js';
import { decodeTxt } from './txt.js';
import type { RecordType } from './types.js';

export type { TargetContext };

export const MAX_TXT_LENGTH = 4000;
export const CAA_TAGS = ['issue', 'issuewild', 'iodef'] as const;

/** Returns the canonical form of a target, or throws InvalidInputError(field, rule). */
export function canonicalTarget(type: RecordType, target: string, field: string, ctx: TargetContext = {}): string {
  if (typeof target !== 'string') throw new InvalidInputError(field, 'a target must be a string');
  switch (type) {
    case 'A':
      return canonicalIpv4(target.trim(), field);
    case 'AAAA':
      return canonicalIpv6(target.trim(), field);
    case 'CNAME':
    case 'NS':
    case 'PTR':
    case 'DNAME':
      return canonicalHost(target.trim(), field, ctx, false, type);
    case 'MX':
      return canonicalMx(target, field, ctx);
    case 'SRV':
      return canonicalSrv(target, field, ctx);
    case 'TXT':
      return canonicalTxt(target, field);
    case 'CAA':
      return canonicalCaa(target, field);
    case 'NAPTR':
      return canonicalNaptr(target, field, ctx);
    case 'TLSA':
      return canonicalTlsa(target, field);
    case 'SSHFP':
      return canonicalSshfp(target, field);
    case 'LOC':
      return canonicalLoc(target, field);
    case 'SPF':
    case 'DKIM':
    case 'DMARC':
      return checkMailPolicy(type, canonicalTxt(target, field, type), field);
  }
}

/** Whether two targets of a type are the same record. An invalid target equals nothing. */
export function targetsEqual(type: RecordType, a: string, b: string, ctx: TargetContext = {}): boolean {
  try {
    return canonicalTarget(type, a, 'a', ctx) === canonicalTarget(type, b, 'b', ctx);
  } catch (err) {
    if (err instanceof InvalidInputError) return false;
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Addresses

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const IPV4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);

function canonicalIpv4(value: string, field: string): string {
  if (!IPV4.test(value)) {
    throw new InvalidInputError(field, `${JSON.stringify(value)} is not an IPv4 address (four decimal numbers 0-255 without leading zeros, e.g. 192.0.2.1)`);
  }
  return value;
}

/** Parses an IPv6 address (no zone id, no brackets) into its eight 16-bit groups. */
export function parseIpv6(value: string): number[] | undefined {
  if (value.includes('%') || isIP(value) !== 6) return undefined;
  const parseSide = (side: string): number[] => {
    if (side === '') return [];
    const groups: number[] = [];
    for (const part of side.split(':')) {
      if (part.includes('.')) {
        const bytes = part.split('.').map(Number);
        groups.push(((bytes[0] as number) << 8) | (bytes[1] as number), ((bytes[2] as number) << 8) | (bytes[3] as number));
      } else {
        groups.push(parseInt(part, 16));
      }
    }
    return groups;
  };
  const halves = value.split('::');
  if (halves.length === 1) return parseSide(value);
  const head = parseSide(halves[0] as string);
  const tail = parseSide(halves[1] as string);
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** RFC 5952 text form of eight groups. */
export function formatIpv6(groups: number[]): string {
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi, lo] = [groups[6] as number, groups[7] as number];
    return `::ffff:${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  // The longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

function canonicalIpv6(value: string, field: string): string {
  const groups = parseIpv6(value);
  if (groups === undefined) {
    throw new InvalidInputError(field, `${JSON.stringify(value)} is not an IPv6 address (e.g. 2001:db8::1)`);
  }
  return formatIpv6(groups);
}

// ---------------------------------------------------------------------------------------------
// Host names and the types built on them

function canonicalMx(value: string, field: string, ctx: TargetContext): string {
  const parts = tokens(value);
  if (parts.length !== 2) {
    throw new InvalidInputError(field, 'an MX target is "<preference> <host>" (e.g. "10 mx.example.com")');
  }
  const preference = parseUint(parts[0] as string, 65535, 'the MX preference', field);
  return `${preference} ${canonicalHost(parts[1] as string, field, ctx, true, 'MX')}`;
}

function canonicalSrv(value: string, field: string, ctx: TargetContext): string {
  const parts = tokens(value);
  if (parts.length !== 4) {
    throw new InvalidInputError(field, 'an SRV target is "<priority> <weight> <port> <host>" (e.g. "0 100 5002 registry.example.com")');
  }
  const priority = parseUint(parts[0] as string, 65535, 'the SRV priority', field);
  const weight = parseUint(parts[1] as string, 65535, 'the SRV weight', field);
  const port = parseUint(parts[2] as string, 65535, 'the SRV port', field);
  return `${priority} ${weight} ${port} ${canonicalHost(parts[3] as string, field, ctx, true, 'SRV')}`;
}

// ---------------------------------------------------------------------------------------------
// TXT and CAA

function canonicalTxt(value: string, field: string, type: RecordType = 'TXT'): string {
  const text = decodeTxt(value);
  if (decodeTxt(text) !== text) {
    throw new InvalidInputError(field, `ambiguous ${type} value: after removing one level of quotes it is still quoted`);
  }
  if (text === '') throw new InvalidInputError(field, `a ${type} value must not be empty`);
  const length = Array.from(text).length;
  if (length > MAX_TXT_LENGTH) {
    throw new InvalidInputError(field, `a ${type} value is at most ${MAX_TXT_LENGTH} characters (got ${length})`);
  }
  if (CONTROL.test(text)) throw new InvalidInputError(field, `a ${type} value must not contain control characters`);
  return text;
}

/** Parses one quoted string that must end the value: `"…"` with `\"` and `\\` escapes. */
function parseQuoted(value: string): string | undefined {
  if (!value.startsWith('"')) return undefined;
  let text = '';
  for (let i = 1; i < value.length; i++) {
    const ch = value[i] as string;
    const next = value[i + 1];
    if (ch === '\\' && (next === '"' || next === '\\')) {
      text += next;
      i++;
    } else if (ch === '"') {
      return i === value.length - 1 ? text : undefined;
    } else {
      text += ch;
    }
  }
  return undefined;
}

function canonicalCaa(value: string, field: string): string {
  const match = /^(\S+)\s+(\S+)\s+(\S[\s\S]*)$/.exec(value.trim());
  if (match === null) {
    throw new InvalidInputError(field, 'a CAA target is \'<flags> <tag> "<value>"\' (e.g. \'0 issue "letsencrypt.org"\')');
  }
  const flags = parseUint(match[1] as string, 255, 'the CAA flags', field);
  const tag = (match[2] as string).toLowerCase();
  if (!(CAA_TAGS as readonly string[]).includes(tag)) {
    throw new InvalidInputError(field, `unsupported CAA tag ${JSON.stringify(match[2])} (supported: ${CAA_TAGS.join(', ')})`);
  }
  const raw = match[3] as string;
  let caaValue: string;
  if (raw.startsWith('"')) {
    const parsed = parseQuoted(raw);
    if (parsed === undefined) {
      throw new InvalidInputError(field, 'the CAA value must be one double-quoted string (escape " as \\")');
    }
    caaValue = parsed;
  } else {
    if (/[\s"]/.test(raw)) {
      throw new InvalidInputError(field, 'an unquoted CAA value must not contain spaces or quotes; quote it');
    }
    caaValue = raw;
  }
  if (CONTROL.test(caaValue)) throw new InvalidInputError(field, 'the CAA value must not contain control characters');
  if (tag === 'iodef' && !/^(mailto:|https?:\/\/)\S+$/i.test(caaValue)) {
    throw new InvalidInputError(field, 'a CAA iodef value must be a mailto:, http:// or https:// URL');
  }
  return `${flags} ${tag} "${caaValue.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
