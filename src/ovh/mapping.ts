/**
 * Endpoint <-> OVH records. Pure.
 *
 * OVH stores one record per target: {subDomain, fieldType, target, ttl}. Reading, records are grouped
 * by (name, type) into Endpoints whose targets are in exactly the canonical form canonicalTarget
 * produces, so that planning the records just read against themselves gives no change. Writing, a
 * canonical target becomes the string OVH expects (endpointTargetToOvh).
 *
 * Rules:
 * - Names: subDomain '' is the apex; name = absoluteName(subDomain, zone), normalized.
 * - Host targets (CNAME, NS, PTR, DNAME, and the host of MX, SRV and NAPTR's replacement): a host ending in '.' is absolute; any other
 *   host is relative to the zone (BIND rule: `www` in example.com is `www.example.com`); `@` is the
 *   apex; `.` (null MX / "no service" SRV) stays `.`. Written absolute with a trailing dot, or, for an
 *   in-zone CNAME target with `cnameRelative`, relative.
 * - TXT: OVH answers `"…"`, or, over 255 characters, `"…" "…"` in pieces of 255, without escaping the
 *   quotes inside. An answer in that exact split shape is the pieces joined as they are
 *   (joinOvhSplitTxt: a quote inside the value must not be taken for a piece boundary); otherwise
 *   decodeTxt: presentation form (any pieces, `\"` and `\\` unescaped) joined, else one surrounding
 *   pair of quotes removed, else the text itself. Written as the plain text (OVH adds the quotes).
 * - SPF: as TXT (OVH answers it quoted). DKIM and DMARC: OVH stores and answers the text raw, unquoted
 *   (it refuses quotes in them), and so it is written. NAPTR, TLSA, SSHFP, LOC: their canonical text.
 * - A record whose target (or name) is not valid for its type — made by hand, or by a newer OVH — is
 *   never dropped: it keeps its raw target (or name) in the endpoint, and a warning says so. Dropping it
 *   would make an unowned record look absent, and dnsplane would then create beside it.
 * - Types dnsplane does not manage (OVH's newer HTTPS, SVCB) are returned apart, untouched.
 * - Duplicates (one target held by several records) give one target, with a warning.
 * - TTL: the records' TTL; when the records of one set differ, the minimum, with a warning.
 *   ovhTtl: 0 is the zone default; 1-59 is raised to 60 (OVH would store 60 silently).
 */
import {
  absoluteName,
  canonicalTarget,
  compareEndpoints,
  isInZone,
  isRecordType,
  normalizeName,
  recordSetKey,
  sortedUnique,
  subDomainOf,
  type Endpoint,
  type RecordSetKey,
  type RecordType,
} from '../dns/index.js';
import { drain, ITEMS_PER_STEP, sortSteps, type Steps } from '../dns/steps.js';
import type { OvhRecord } from './types.js';

/** OVH's minimum TTL; 1-59 is stored as this. */
export const OVH_MIN_TTL = 60;

export interface MappingWarning {
  key: RecordSetKey;
  /** The OVH records concerned. */
  recordIds: string[];
  message: string;
}

export interface RecordMapping {
  /** The record sets of the supported types, sorted by name then type. */
  endpoints: Endpoint[];
  /** Records of types dnsplane does not manage, as they were given. */
  ignored: OvhRecord[];
  /** Mixed TTLs in a set, duplicate records, invalid targets or names kept raw. Sorted by key. */
  warnings: MappingWarning[];
  /** The records of each record set (supported types), by ovhRecordKey: what operations are built on. */
  recordsByKey: Map<RecordSetKey, OvhRecord[]>;
}

export interface OvhTargetOptions {
  /** Send in-zone CNAME targets relative to the zone (`www`) instead of absolute (`www.example.com.`). */
  cnameRelative?: boolean;
}

/** OVH splits TXT answers into pieces of this many characters. */
export const OVH_TXT_PIECE = 255;

/**
 * A TXT answer in the exact shape OVH gives a value over 255 characters — `"` + 255 characters +
 * `" "` + … + the rest + `"`, the quotes inside the value NOT escaped — as the value: the pieces
 * joined as they are. undefined for any other shape (one piece, or pieces of other lengths), which
 * decodeTxt's rules cover. Without this, a long value with quotes inside reads back with the `" "`
 * of the split in it, or without a `" "` of its own, and plans an update on every run.
 */
export function joinOvhSplitTxt(answer: string): string | undefined {
  if (answer.length <= OVH_TXT_PIECE + 2 || !answer.startsWith('"') || !answer.endsWith('"')) return undefined;
  const end = answer.length - 1;
  let text = '';
  let i = 1;
  while (end - i > OVH_TXT_PIECE) {
    text += answer.slice(i, i + OVH_TXT_PIECE);
    i += OVH_TXT_PIECE;
    if (answer.slice(i, i + 3) !== '" "') return undefined;
    i += 3;
  }
  return text + answer.slice(i, end);
}

/** An absolute host in presentation form, for resolving relative OVH hosts. */
function resolveHost(host: string, zone: string): string {
  if (host === '.' || host.endsWith('.')) return host;
  if (host === '@') return `${zone}.`;
  return `${host}.${zone}.`;
}

function hostFirst(target: string, fieldsBeforeHost: number, zone: string): string {
  const parts = target.trim().split(/\s+/);
  if (parts.length !== fieldsBeforeHost + 1) return target; // canonicalTarget will say why
  parts[fieldsBeforeHost] = resolveHost(parts[fieldsBeforeHost] as string, zone);
  return parts.join(' ');
}

/**
 * The canonical form of an OVH record's target, or undefined when it is not valid for the type.
 * The operations builder compares OVH records with desired targets through this function.
 */
export function ovhTargetToCanonical(type: RecordType, target: string, zone: string): string | undefined {
  let input: string;
  switch (type) {
    case 'CNAME':
    case 'NS':
    case 'PTR':
    case 'DNAME':
      input = resolveHost(target.trim(), zone);
      break;
    case 'NAPTR': {
      // The replacement is the last field, never quoted (the regexp before it may hold spaces).
      const t = target.trim();
      const at = t.search(/\S+$/);
      input = at < 0 ? t : `${t.slice(0, at)}${resolveHost(t.slice(at), zone)}`;
      break;
    }
    case 'MX':
      input = hostFirst(target, 1, zone);
      break;
    case 'SRV':
      input = hostFirst(target, 3, zone);
      break;
    case 'TXT':
    case 'SPF':
      input = joinOvhSplitTxt(target) ?? target;
      break;
    default:
      input = target;
  }
  try {
    return canonicalTarget(type, input, 'target');
  } catch {
    return undefined;
  }
}

/** The normalized name of an OVH record, or undefined when the name is not valid. */
export function ovhRecordName(subDomain: string, zone: string): string | undefined {
  try {
    return normalizeName(absoluteName(subDomain, zone), 'subDomain', { allowUnderscore: true, allowWildcard: true });
  } catch {
    return undefined;
  }
}

/** The name a record is grouped under, as recordsToEndpoints names it: normalized, or kept raw when it is not a valid DNS name. */
export function ovhRecordSetName(subDomain: string, zone: string): string {
  return ovhRecordName(subDomain, zone) ?? absoluteName(subDomain, zone);
}

/**
 * The record set key of an OVH record (`${name} ${TYPE}`), computed exactly as recordsToEndpoints groups
 * records, so that callers find a set's records with it.
 */
export function ovhRecordKey(record: OvhRecord, zone: string): RecordSetKey {
  return recordSetKey(ovhRecordSetName(record.subDomain, zone), record.fieldType.toUpperCase());
}

/** A zone's records, or the same grouped by ovhRecordKey (RecordMapping.recordsByKey). */
export type ZoneRecords = readonly OvhRecord[] | ReadonlyMap<RecordSetKey, readonly OvhRecord[]>;

/** Whether `records` is a list of records, not grouped by set (a Map, or a map of another kind: a base's). */
export function isRecordList(records: ZoneRecords): records is readonly OvhRecord[] {
  return Array.isArray(records);
}

/** The records of one record set, looked up in `records` (grouped here, once, on first use when a list). */
export function recordsLookup(records: ZoneRecords, zone: string): (key: RecordSetKey) => readonly OvhRecord[] {
  if (!isRecordList(records)) return (key) => records.get(key) ?? [];
  let byKey: Map<RecordSetKey, OvhRecord[]> | undefined;
  return (key) => {
    if (byKey === undefined) {
      byKey = new Map();
      for (const r of records as readonly OvhRecord[]) {
        const k = ovhRecordKey(r, zone);
        const list = byKey.get(k);
        if (list) list.push(r);
        else byKey.set(k, [r]);
      }
    }
    return byKey.get(key) ?? [];
  };
}

/**
 * Groups OVH records into endpoints; see the module comment for the rules. Returns the endpoints and,
 * apart, the records of unmanaged types and the warnings, so that callers can show them.
 */
export function recordsToEndpoints(records: readonly OvhRecord[], zone: string): RecordMapping {
  return drain(recordsToEndpointsSteps(records, zone));
}

/** recordsToEndpoints with pause points (dns/steps.ts): a zone of 20,000 records is read in slices. */
export function* recordsToEndpointsSteps(records: readonly OvhRecord[], zone: string): Steps<RecordMapping> {
  const ignored: OvhRecord[] = [];
  const warnings: MappingWarning[] = [];
  const groups = new Map<RecordSetKey, { dnsName: string; recordType: RecordType; records: OvhRecord[] }>();
  let n = 0;
  for (const record of records) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    const type = record.fieldType.toUpperCase();
    if (!isRecordType(type)) {
      ignored.push(record);
      continue;
    }
    let dnsName = ovhRecordName(record.subDomain, zone);
    if (dnsName === undefined) {
      dnsName = absoluteName(record.subDomain, zone);
      warnings.push({
        key: recordSetKey(dnsName, type),
        recordIds: [record.id],
        message: `the name ${JSON.stringify(dnsName)} is not a valid DNS name; kept as it is`,
      });
    }
    const key = recordSetKey(dnsName, type);
    const group = groups.get(key);
    if (group) group.records.push(record);
    else groups.set(key, { dnsName, recordType: type, records: [record] });
  }

  const endpoints: Endpoint[] = [];
  const recordsByKey = new Map<RecordSetKey, OvhRecord[]>();
  for (const [key, group] of groups) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    recordsByKey.set(key, group.records);
    endpoints.push(setEndpoint(key, group.dnsName, group.recordType, group.records, zone, warnings));
  }
  yield* sortSteps(endpoints, compareEndpoints);
  warnings.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { endpoints, ignored, warnings, recordsByKey };
}

/**
 * The endpoint of one record set: its records' targets in canonical form (raw when invalid), sorted and
 * de-duplicated, and the minimum of their TTLs; what is odd about them is pushed to `warnings`. The
 * second half of recordsToEndpoints, also used to map again only the sets a change touched
 * (core/reads/base-patch.ts).
 */
export function setEndpoint(
  key: RecordSetKey,
  dnsName: string,
  recordType: RecordType,
  records: readonly OvhRecord[],
  zone: string,
  warnings: MappingWarning[] = [],
): Endpoint {
  const targets: string[] = [];
  const holders = new Map<string, string[]>();
  for (const record of records) {
    const canonical = ovhTargetToCanonical(recordType, record.target, zone);
    if (canonical === undefined) {
      warnings.push({
        key,
        recordIds: [record.id],
        message: `target ${JSON.stringify(record.target)} is not a valid ${recordType} target; kept as it is`,
      });
    }
    const target = canonical ?? record.target;
    targets.push(target);
    const held = holders.get(target);
    if (held) held.push(record.id);
    else holders.set(target, [record.id]);
  }
  for (const [target, recordIds] of holders) {
    if (recordIds.length > 1) {
      warnings.push({
        key,
        recordIds,
        message: `target ${JSON.stringify(target)} is held by ${recordIds.length} records (duplicates); the next change of this set removes the copies`,
      });
    }
  }
  const ttls = [...new Set(records.map((r) => r.ttl))].sort((a, b) => a - b);
  const ttl = ttls[0] ?? 0;
  if (ttls.length > 1) {
    warnings.push({
      key,
      recordIds: records.map((r) => r.id),
      message: `the records have different TTLs (${ttls.join(', ')}); using the minimum, ${ttl}`,
    });
  }
  return { dnsName, recordType, targets: sortedUnique(targets), ttl };
}

function absoluteHost(host: string): string {
  return host === '.' ? '.' : `${host}.`;
}

/** The target string to send to OVH for a canonical target of a record in `zone`. */
export function endpointTargetToOvh(type: RecordType, canonicalTarget: string, zone: string, opts: OvhTargetOptions = {}): string {
  switch (type) {
    case 'CNAME':
      if (opts.cnameRelative && canonicalTarget !== zone && isInZone(canonicalTarget, zone)) {
        return subDomainOf(canonicalTarget, zone);
      }
      return absoluteHost(canonicalTarget);
    case 'NS':
    case 'PTR':
    case 'DNAME':
      return absoluteHost(canonicalTarget);
    case 'MX':
    case 'SRV':
    case 'NAPTR': {
      const parts = canonicalTarget.split(' ');
      const host = parts.pop() as string;
      return [...parts, absoluteHost(host)].join(' ');
    }
    default:
      // A, AAAA, CAA, TLSA, SSHFP, LOC as canonical; TXT and SPF as the plain text (OVH quotes them in
      // its answers); DKIM and DMARC as the plain text (OVH keeps them so).
      return canonicalTarget;
  }
}

/** The TTL OVH will store for a requested TTL, with a warning when it differs. */
export function ovhTtl(ttl: number): { ttl: number; warning?: string } {
  if (!Number.isInteger(ttl) || ttl < 0) throw new RangeError(`invalid TTL ${ttl}`);
  if (ttl > 0 && ttl < OVH_MIN_TTL) {
    return { ttl: OVH_MIN_TTL, warning: `TTL ${ttl} raised to OVH's minimum of ${OVH_MIN_TTL}` };
  }
  return { ttl };
}

/**
 * The endpoint as OVH will hold it (its TTL through ovhTtl), with the warnings to show. Core runs
 * desired endpoints through this before diffing, so that a TTL of 30 does not plan an update on
 * every run once OVH holds 60.
 */
export function adjustEndpointForOvh(e: Endpoint): { endpoint: Endpoint; warnings: string[] } {
  const { ttl, warning } = ovhTtl(e.ttl);
  if (warning === undefined) return { endpoint: e, warnings: [] };
  return { endpoint: { ...e, ttl }, warnings: [`${e.dnsName} ${e.recordType}: ${warning}`] };
}
