/**
 * DNS names: normalization, validation, IDN, and zone arithmetic. Pure.
 *
 * A normalized name is lowercase ASCII (internationalized labels in punycode, `xn--…`), without the
 * trailing dot, made of LDH labels (letters, digits, hyphen; never starting or ending with a hyphen),
 * with `_` only where the caller allows it and `*` only as the whole leftmost label where the caller
 * allows wildcards. Lengths are counted in octets of that ASCII form: at most 63 per label and 253
 * for the whole name.
 */
import { domainToASCII, domainToUnicode } from 'node:url';
import { InvalidInputError } from './errors.js';

export const MAX_LABEL_LENGTH = 63;
export const MAX_NAME_LENGTH = 253;

export interface NameOptions {
  /** Allow `_` anywhere in a label (SRV/TXT owner names such as `_sip._tcp`, and host targets). */
  allowUnderscore?: boolean;
  /** Allow `*` as the whole leftmost label (`*.example.com`). */
  allowWildcard?: boolean;
}

const NON_ASCII = /[\u0080-\uffff]/;

/** Quotes a label or name for an error message. */
function q(value: string): string {
  return JSON.stringify(value);
}

/**
 * Converts one label to ASCII. ASCII labels are only lowercased (so that names ending in a numeric
 * label, which the WHATWG host parser would treat as IPv4, are left alone); labels with non-ASCII
 * characters go through UTS #46 (`domainToASCII`), which maps and punycode-encodes them.
 */
function labelToAscii(label: string, field: string): string {
  if (!NON_ASCII.test(label)) return label.toLowerCase();
  const ascii = domainToASCII(label);
  if (ascii === '' || ascii.includes('.')) {
    throw new InvalidInputError(field, `label ${q(label)} is not a valid internationalized domain label`);
  }
  return ascii;
}

/**
 * Normalizes and validates a DNS name. Returns lowercase ASCII without the trailing dot.
 * Throws InvalidInputError(field, rule) naming the first broken rule.
 */
export function normalizeName(input: string, field: string, opts: NameOptions = {}): string {
  if (typeof input !== 'string') throw new InvalidInputError(field, 'a name must be a string');
  if (input === '') throw new InvalidInputError(field, 'the name must not be empty');
  if (input === '.') throw new InvalidInputError(field, 'the root name "." is not allowed here');
  // Inputs far over the limit are refused before any per-label work, so that the cost stays bounded.
  if (input.length > 4 * MAX_NAME_LENGTH) {
    throw new InvalidInputError(field, `the name is longer than ${MAX_NAME_LENGTH} octets`);
  }
  const withoutDot = input.endsWith('.') ? input.slice(0, -1) : input;
  // Fast path, the usual case (an ASCII name that is valid as it is, up to case): one pattern test
  // instead of a walk over every character. Anything else takes the walk below, which names the rule.
  if (!NON_ASCII.test(withoutDot)) {
    const lower = withoutDot.toLowerCase();
    if (lower.length <= MAX_NAME_LENGTH && validNamePattern(opts).test(lower)) return lower;
  }
  return normalizeNameByLabels(input, field, opts);
}

/**
 * normalizeName without its fast path: label by label (IDN conversion, every rule checked with its
 * own message). Exported so that a test can hold the fast path to exactly the same answers.
 */
export function normalizeNameByLabels(input: string, field: string, opts: NameOptions = {}): string {
  const withoutDot = input.endsWith('.') ? input.slice(0, -1) : input;
  const rawLabels = withoutDot.split('.');
  const labels: string[] = [];
  for (let i = 0; i < rawLabels.length; i++) {
    const raw = rawLabels[i] as string;
    if (raw === '') {
      throw new InvalidInputError(field, `empty label in ${q(input)} (two dots in a row, or a leading dot)`);
    }
    const label = labelToAscii(raw, field);
    checkLabel(label, i, field, opts);
    labels.push(label);
  }
  const name = labels.join('.');
  if (name.length > MAX_NAME_LENGTH) {
    throw new InvalidInputError(field, `the name is ${name.length} octets long; at most ${MAX_NAME_LENGTH} are allowed`);
  }
  return name;
}

/** Whether `name` is already a normalized name (lowercase ASCII, no trailing dot) under these rules. */
export function isNormalizedName(name: string, opts: NameOptions = {}): boolean {
  return name.length <= MAX_NAME_LENGTH && validNamePattern(opts).test(name);
}

const PATTERNS = new Map<string, RegExp>();

/**
 * A whole normalized name in one pattern: LDH labels of 1-63 octets (with `_` anywhere when allowed),
 * not starting or ending with `-`, and `*` only as the whole leftmost label when allowed. Exactly what
 * checkLabel accepts for lowercase ASCII labels.
 */
function validNamePattern(opts: NameOptions): RegExp {
  const key = `${opts.allowUnderscore ? 'u' : ''}${opts.allowWildcard ? 'w' : ''}`;
  let re = PATTERNS.get(key);
  if (!re) {
    const c = opts.allowUnderscore ? 'a-z0-9_' : 'a-z0-9';
    const label = `[${c}](?:[${c}-]{0,61}[${c}])?`;
    re = new RegExp(`^${opts.allowWildcard ? `(?:\\*|${label})` : label}(?:\\.${label})*$`);
    PATTERNS.set(key, re);
  }
  return re;
}

function checkLabel(label: string, index: number, field: string, opts: NameOptions): void {
  if (label.includes('*')) {
    if (!opts.allowWildcard) {
      throw new InvalidInputError(field, `label ${q(label)} contains "*"; wildcards are not allowed here`);
    }
    if (label !== '*' || index !== 0) {
      throw new InvalidInputError(field, `"*" is only allowed as the whole leftmost label (label ${index + 1} is ${q(label)})`);
    }
    return;
  }
  if (label.length > MAX_LABEL_LENGTH) {
    throw new InvalidInputError(field, `label ${q(label)} is ${label.length} octets long; at most ${MAX_LABEL_LENGTH} are allowed`);
  }
  for (const ch of label) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch === '-') continue;
    if (ch === '_') {
      if (opts.allowUnderscore) continue;
      throw new InvalidInputError(field, `label ${q(label)} contains "_"; underscores are not allowed here`);
    }
    throw new InvalidInputError(field, `label ${q(label)} contains the character ${q(ch)}; only letters, digits and hyphens are allowed`);
  }
  if (label.startsWith('-') || label.endsWith('-')) {
    throw new InvalidInputError(field, `label ${q(label)} must not start or end with a hyphen`);
  }
}

/**
 * The Unicode form of a normalized name, for display: `xn--` labels are decoded, other labels are
 * kept. A label that does not decode is kept as it is.
 */
export function toUnicode(name: string): string {
  if (!name.includes('xn--')) return name;
  return name
    .split('.')
    .map((label) => {
      if (!label.startsWith('xn--')) return label;
      const unicode = domainToUnicode(label);
      return unicode === '' ? label : unicode;
    })
    .join('.');
}

/** Whether a normalized name is the zone apex or below it. */
export function isInZone(name: string, zone: string): boolean {
  return name === zone || name.endsWith(`.${zone}`);
}

/**
 * The name relative to its zone, as OVH's `subDomain`: '' for the apex, `www` for `www.example.com`.
 * Throws a RangeError when the name is not in the zone (a caller bug, not bad input).
 */
export function subDomainOf(name: string, zone: string): string {
  if (name === zone) return '';
  if (!name.endsWith(`.${zone}`)) throw new RangeError(`${q(name)} is not in zone ${q(zone)}`);
  return name.slice(0, name.length - zone.length - 1);
}

/** The absolute name of an OVH `subDomain` in a zone ('' is the apex), lowercase. */
export function absoluteName(subDomain: string, zone: string): string {
  const sub = subDomain.endsWith('.') ? subDomain.slice(0, -1) : subDomain;
  return (sub === '' ? zone : `${sub}.${zone}`).toLowerCase();
}

/** The longest zone that contains the normalized name, or undefined. */
export function findZone(name: string, zones: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const zone of zones) {
    if (isInZone(name, zone) && (best === undefined || zone.length > best.length)) best = zone;
  }
  return best;
}

/**
 * findZone for many names against one list of zones: a lookup that costs the number of labels of the
 * name, whatever the number of zones (the longest zone is the first suffix of the name found).
 */
export function zoneFinder(zones: readonly string[]): (name: string) => string | undefined {
  const set = new Set(zones);
  return (name) => {
    for (let at = 0; at >= 0; ) {
      const suffix = at === 0 ? name : name.slice(at);
      if (set.has(suffix)) return suffix;
      const dot = name.indexOf('.', at);
      at = dot < 0 ? -1 : dot + 1;
    }
    return undefined;
  };
}
