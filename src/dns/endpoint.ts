/**
 * Endpoints (record sets): normalization of one endpoint and validation of a whole desired state.
 * Pure. See types.ts for what a normalized Endpoint is.
 */
import { InvalidInputError } from './errors.js';
import { checkDmarcName } from './mail-policy.js';
import { findZone, isInZone, normalizeName } from './names.js';
import { canonicalTarget } from './targets.js';
import { isRecordType, RECORD_TYPES, recordSetKey, type Endpoint, type RecordType } from './types.js';

/** At most this many targets in one record set. */
export const MAX_TARGETS = 64;
/** The largest TTL (2^31 - 1 seconds, RFC 2181). */
export const MAX_TTL = 2147483647;

/** An endpoint as it arrives (webhook JSON, protobuf, CLI): not yet normalized. */
export interface EndpointInput {
  dnsName: string;
  /** Case-insensitive. */
  recordType: string;
  targets: readonly string[];
  /** Seconds; absent means 0, the zone default. */
  ttl?: number;
  setIdentifier?: string;
  labels?: Readonly<Record<string, string>>;
}

export interface NormalizeEndpointOptions {
  /**
   * The zone the endpoint belongs to. When known, the name must be in it, and the apex rules apply:
   * no CNAME at the apex, no writing of apex NS. Without a zone (and without `zones`) those two rules
   * cannot be checked; core always passes the zone.
   */
  zone?: string;
  /** Alternatively, the zones in scope: the endpoint's zone is the longest one containing its name. */
  zones?: readonly string[];
}

/**
 * `e` with these labels (and other targets or TTL), written out field by field. Never `{ ...e, labels }`
 * for what is kept per record set: V8 makes an object spread followed by more properties a
 * dictionary-mode object, about five times the size of this literal (a zone's answers hold one per set).
 */
export function withLabels(e: Endpoint, labels: Readonly<Record<string, string>>, targets: string[] = e.targets, ttl: number = e.ttl): Endpoint {
  // The labels in the literal: a property added after it goes to a property array of its own (~40 B
  // more for each of a zone's 50,000 answers, bench:kept-forms).
  const out: Endpoint = { dnsName: e.dnsName, recordType: e.recordType, targets, ttl, labels: labels as Record<string, string> };
  if (e.setIdentifier !== undefined) out.setIdentifier = e.setIdentifier;
  if (e.targetStates !== undefined) out.targetStates = e.targetStates;
  return out;
}

/** Strict string order (code units), so that sorting never depends on the locale. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Order of record sets: by name, then by type. */
export function compareEndpoints(a: Pick<Endpoint, 'dnsName' | 'recordType'>, b: Pick<Endpoint, 'dnsName' | 'recordType'>): number {
  return compareStrings(a.dnsName, b.dnsName) || compareStrings(a.recordType, b.recordType);
}

/** The record set key of an endpoint. */
export function endpointKey(e: Pick<Endpoint, 'dnsName' | 'recordType'>): string {
  return recordSetKey(e.dnsName, e.recordType);
}

/** Sorted, de-duplicated copy of a list of strings. */
export function sortedUnique(values: readonly string[]): string[] {
  // Usually already so (normalized targets are): checking costs one pass and no set.
  let sorted = true;
  for (let i = 1; i < values.length && sorted; i++) sorted = (values[i - 1] as string) < (values[i] as string);
  return sorted ? values.slice() : [...new Set(values)].sort(compareStrings);
}

/**
 * Whether two normalized endpoints hold the same records: same name, type, TTL and targets.
 * setIdentifier and labels are metadata and do not count.
 */
export function endpointsEqual(a: Endpoint, b: Endpoint): boolean {
  return a.dnsName === b.dnsName && a.recordType === b.recordType && sameRecords(a, b);
}

/** Same TTL and same set of targets (the name and type are not compared). */
export function sameRecords(a: Pick<Endpoint, 'targets' | 'ttl'>, b: Pick<Endpoint, 'targets' | 'ttl'>): boolean {
  if (a.ttl !== b.ttl) return false;
  const x = sortedUnique(a.targets);
  const y = sortedUnique(b.targets);
  return x.length === y.length && x.every((t, i) => t === y[i]);
}

/** Validates a TTL in seconds; undefined means 0 (the zone default). */
export function normalizeTtl(ttl: number | undefined, field: string): number {
  if (ttl === undefined) return 0;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl)) {
    throw new InvalidInputError(field, `the TTL must be a whole number of seconds (got ${String(ttl)})`);
  }
  if (ttl < 0) throw new InvalidInputError(field, `the TTL must not be negative (got ${ttl})`);
  if (ttl > MAX_TTL) throw new InvalidInputError(field, `the TTL must be at most ${MAX_TTL} (got ${ttl})`);
  return ttl;
}

/** The types whose names may carry an underscore (service labels: `_443._tcp`, `_dmarc`, `sel._domainkey`). */
const UNDERSCORE_TYPES: ReadonlySet<string> = new Set(['TXT', 'SRV', 'TLSA', 'SPF', 'DKIM', 'DMARC']);
/** The types whose set holds exactly one target (RFC 1034 §3.6.2, RFC 6672 §2.4). */
const SINGLETON_TYPES: ReadonlySet<string> = new Set(['CNAME', 'DNAME']);

/** Parses a record type, case-insensitively. */
export function parseRecordType(value: string, field: string): RecordType {
  const type = typeof value === 'string' ? value.toUpperCase() : '';
  if (!isRecordType(type)) {
    throw new InvalidInputError(field, `unsupported record type ${JSON.stringify(value)} (supported: ${RECORD_TYPES.join(', ')})`);
  }
  return type;
}

/** A character Postgres may refuse: NUL or a UTF-16 surrogate (unstorable() then decides). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding NUL is this pattern's purpose.
const SUSPECT = /[\u0000\ud800-\udfff]/;

/** Why Postgres could not store this string (text and jsonb refuse U+0000; lone surrogates are not UTF-8). */
export function unstorable(s: string): string | undefined {
  if (!SUSPECT.test(s)) return undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return `contains the NUL character (U+0000) at offset ${i}, which cannot be stored`;
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = s.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
      return `contains a lone UTF-16 surrogate at offset ${i}, which is not text`;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return `contains a lone UTF-16 surrogate at offset ${i}, which is not text`;
  }
  return undefined;
}

/** Throws naming `${field}.${member}` (`member[index]` for a list item) when `v` is a string Postgres could not store. */
function checkStorableValue(v: unknown, field: string, member: string, index?: number | string): void {
  if (typeof v !== 'string') return;
  const why = unstorable(v);
  if (why) throw new InvalidInputError(`${field}.${member}${index === undefined ? '' : `[${typeof index === 'number' ? index : JSON.stringify(index)}]`}`, why);
}

/** Every string of an endpoint as sent must be storable (api/ checks requests too; this covers the webhook and NSM). */
function checkStorable(e: EndpointInput, field: string): void {
  checkStorableValue(e.dnsName, field, 'dnsName');
  checkStorableValue(e.recordType, field, 'recordType');
  if (Array.isArray(e.targets)) for (let i = 0; i < e.targets.length; i++) checkStorableValue(e.targets[i], field, 'targets', i);
  checkStorableValue(e.setIdentifier, field, 'setIdentifier');
  if (e.labels && typeof e.labels === 'object') {
    for (const [k, v] of Object.entries(e.labels)) {
      const why = unstorable(k);
      if (why) throw new InvalidInputError(`${field}.labels key ${JSON.stringify(k)}`, why);
      checkStorableValue(v, field, 'labels', k);
    }
  }
}

/**
 * Normalizes one endpoint or throws InvalidInputError naming the field (`${field}.dnsName`,
 * `${field}.targets[2]`, …) and the rule. The result has a lowercase ASCII name, canonical targets
 * (sorted, de-duplicated), an integer TTL; setIdentifier and labels are kept when non-empty.
 *
 * Rules: a supported record type; a valid name, where `_` is allowed only for TXT and SRV and a
 * wildcard `*` leftmost label for every type but NS; 1 to MAX_TARGETS targets (counted as given),
 * each valid for the type; TTL an integer 0..MAX_TTL; a CNAME has exactly one target (after
 * de-duplication) and is never at the zone apex; apex NS records are not writable.
 */
export function normalizeEndpoint(e: EndpointInput, field: string, opts: NormalizeEndpointOptions = {}): Endpoint {
  if (typeof e !== 'object' || e === null) throw new InvalidInputError(field, 'an endpoint must be an object');
  checkStorable(e, field);
  const recordType = parseRecordType(e.recordType, `${field}.recordType`);

  const nameField = `${field}.dnsName`;
  const dnsName = normalizeName(e.dnsName, nameField, { allowUnderscore: true, allowWildcard: true });
  if (dnsName.includes('_') && !UNDERSCORE_TYPES.has(recordType)) {
    throw new InvalidInputError(
      nameField,
      `underscores are only allowed in ${[...UNDERSCORE_TYPES].join(', ')} names (got ${recordType} record ${JSON.stringify(dnsName)})`,
    );
  }
  if (recordType === 'DMARC') checkDmarcName(dnsName, nameField);
  if (recordType === 'NS' && dnsName.split('.')[0] === '*') {
    throw new InvalidInputError(nameField, 'a wildcard name is not allowed for NS records');
  }

  let zone = opts.zone;
  if (zone === undefined && opts.zones !== undefined) {
    zone = findZone(dnsName, opts.zones);
    if (zone === undefined) {
      throw new InvalidInputError(nameField, `${JSON.stringify(dnsName)} is in none of the zones in scope (${opts.zones.join(', ') || 'none'})`);
    }
  }
  if (zone !== undefined && !isInZone(dnsName, zone)) {
    throw new InvalidInputError(nameField, `${JSON.stringify(dnsName)} is not in zone ${JSON.stringify(zone)}`);
  }

  const targetsField = `${field}.targets`;
  if (!Array.isArray(e.targets)) throw new InvalidInputError(targetsField, 'targets must be a list of strings');
  if (e.targets.length === 0) throw new InvalidInputError(targetsField, 'at least one target is required');
  if (e.targets.length > MAX_TARGETS) {
    throw new InvalidInputError(targetsField, `a record set has at most ${MAX_TARGETS} targets (got ${e.targets.length})`);
  }
  const ctx = zone === undefined ? {} : { zone };
  const targets = sortedUnique(e.targets.map((t: string, i: number) => canonicalTarget(recordType, t, `${targetsField}[${i}]`, ctx)));

  const ttl = normalizeTtl(e.ttl, `${field}.ttl`);

  if (SINGLETON_TYPES.has(recordType) && targets.length !== 1) {
    throw new InvalidInputError(targetsField, `a ${recordType} record set has exactly one target (got ${targets.length})`);
  }
  if (recordType === 'CNAME') {
    if (zone !== undefined && dnsName === zone) {
      throw new InvalidInputError(nameField, `a CNAME cannot be at the zone apex (${zone})`);
    }
  }
  if (recordType === 'NS' && zone !== undefined && dnsName === zone) {
    throw new InvalidInputError(nameField, `apex NS records are managed by OVH and cannot be written (${zone})`);
  }

  const out: Endpoint = { dnsName, recordType, targets, ttl };
  if (typeof e.setIdentifier === 'string' && e.setIdentifier !== '') out.setIdentifier = e.setIdentifier;
  if (e.labels !== undefined && e.labels !== null && Object.keys(e.labels).length > 0) out.labels = { ...e.labels };
  return out;
}

/**
 * Checks a whole desired state of normalized endpoints (field names the list, e.g. `endpoints`):
 * no two endpoints with the same name and type, no CNAME beside any other type at one name, and no
 * name below a DNAME (RFC 6672 §2.3: a DNAME's owner has no descendants).
 * Throws InvalidInputError at `${field}[i]` naming the other index.
 */
export function validateEndpointSet(endpoints: readonly Endpoint[], field: string): void {
  checkBelowDname(endpoints, field);
  const indexByKey = new Map<string, number>();
  const byName = new Map<string, { type: RecordType; index: number }[]>();
  endpoints.forEach((e, i) => {
    const key = endpointKey(e);
    const seen = indexByKey.get(key);
    if (seen !== undefined) {
      throw new InvalidInputError(`${field}[${i}]`, `duplicate record set ${e.dnsName} ${e.recordType}: ${field}[${seen}] has the same name and type`);
    }
    indexByKey.set(key, i);
    const atName = byName.get(e.dnsName) ?? [];
    const clash = atName.find((other) => other.type === 'CNAME' || e.recordType === 'CNAME');
    if (clash !== undefined) {
      const [cname, other] = e.recordType === 'CNAME' ? [i, clash.index] : [clash.index, i];
      const otherType = e.recordType === 'CNAME' ? clash.type : e.recordType;
      throw new InvalidInputError(
        `${field}[${i}]`,
        `${e.dnsName} has a CNAME (${field}[${cname}]) and a ${otherType} record set (${field}[${other}]); a CNAME cannot coexist with other record types`,
      );
    }
    atName.push({ type: e.recordType, index: i });
    byName.set(e.dnsName, atName);
  });
}

/** Normalizes a list of endpoints (`${field}[i]`) and validates them as one desired state. */
export function normalizeEndpoints(inputs: readonly EndpointInput[], field: string, opts: NormalizeEndpointOptions = {}): Endpoint[] {
  const endpoints = inputs.map((e, i) => normalizeEndpoint(e, `${field}[${i}]`, opts));
  validateEndpointSet(endpoints, field);
  return endpoints;
}

/** RFC 6672 §2.3: no record below a DNAME's owner, within one request. */
function checkBelowDname(endpoints: readonly Endpoint[], field: string): void {
  const dnames = new Map<string, number>();
  endpoints.forEach((e, i) => {
    if (e.recordType === 'DNAME') dnames.set(e.dnsName, i);
  });
  if (dnames.size === 0) return;
  endpoints.forEach((e, i) => {
    for (let name = e.dnsName, dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.')) {
      name = name.slice(dot + 1);
      const at = dnames.get(name);
      if (at !== undefined) {
        throw new InvalidInputError(
          `${field}[${i}]`,
          `${e.dnsName} is below the DNAME of ${name} (${field}[${at}]); a DNAME's owner has no names below it (RFC 6672 §2.3)`,
        );
      }
    }
  });
}
