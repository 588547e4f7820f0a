/**
 * The DNS model shared by every room. Pure data: no I/O, nothing OVH-specific.
 */

/**
 * The record types dnsplane reads and writes: every type of OVH's domain.zone.RecordTypeEnum (issue 43).
 * Apex NS is read, never written.
 */
export const RECORD_TYPES = [
  'A',
  'AAAA',
  'CNAME',
  'TXT',
  'MX',
  'SRV',
  'CAA',
  'NS',
  'PTR',
  'NAPTR',
  'TLSA',
  'SSHFP',
  'LOC',
  'DNAME',
  'SPF',
  'DKIM',
  'DMARC',
] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

const RECORD_TYPE_SET: ReadonlySet<string> = new Set(RECORD_TYPES);

export function isRecordType(value: string): value is RecordType {
  return RECORD_TYPE_SET.has(value);
}

/**
 * OVH's own field types for mail policies: records of their own in OVH's API, TXT records on the wire
 * (OVH publishes them as TXT). At one name, the TXT record set resolvers see is the union of the TXT,
 * SPF, DKIM and DMARC records there: the doors that speak DNS types (the DNS door, the webhook) see
 * and write that union as one TXT set (dns/txt-family.ts).
 */
export const TXT_FAMILY: readonly RecordType[] = ['TXT', 'SPF', 'DKIM', 'DMARC'];
const TXT_FAMILY_SET: ReadonlySet<string> = new Set(TXT_FAMILY);

/** Whether records of this type are TXT records on the wire. */
export function isTxtFamily(type: string): boolean {
  return TXT_FAMILY_SET.has(type);
}

/** The type resolvers see records of this type as: TXT for SPF, DKIM and DMARC; the type itself else. */
export function publishedType(type: RecordType): RecordType {
  return TXT_FAMILY_SET.has(type) ? 'TXT' : type;
}

/**
 * A record set: one name, one type, its targets. The same shape as external-dns's endpoint.
 * In a normalized Endpoint (see normalizeEndpoint):
 * - dnsName is lowercase ASCII (punycode), no trailing dot;
 * - targets are in canonical form for their type (canonicalTarget), de-duplicated and sorted;
 * - ttl is an integer >= 0, 0 meaning the zone default.
 */
export interface Endpoint {
  dnsName: string;
  recordType: RecordType;
  targets: string[];
  ttl: number;
  setIdentifier?: string;
  labels?: Record<string, string>;
  /** Records answers only: the state of the targets that have one (withdrawn, health). Never diffed, never sent to OVH. */
  targetStates?: readonly TargetState[];
}

/** A target's state as Records shows it (issue 30: core/withdrawals/withdrawals.ts, health checks). */
export interface TargetState {
  target: string;
  status: 'unchecked' | 'healthy' | 'failing' | 'withdrawn';
  /** 'silent', 'health', 'drained', or several joined by ', '. */
  reason: string;
  since?: Date;
  detail: string;
}

/** The key of a record set: `${dnsName} ${recordType}`. */
export type RecordSetKey = string;

export function recordSetKey(dnsName: string, recordType: string): RecordSetKey {
  return `${dnsName} ${recordType}`;
}

export type Policy = 'sync' | 'upsert-only' | 'create-only';

export type ChangeAction = 'create' | 'update' | 'delete';

/** One change of one record set. */
export interface Change {
  action: ChangeAction;
  /** The record set as it is now; absent for a create. */
  before?: Endpoint;
  /** The record set as it will be; absent for a delete. */
  after?: Endpoint;
  warnings?: string[];
}

/** A change the tenant asked for and may not make. */
export interface Conflict {
  action: ChangeAction;
  endpoint: Endpoint;
  /** The owning tenant's name; '' when the records exist without an owner. */
  owner: string;
  reason: string;
}

/** The external-dns change set. */
export interface ChangeSet {
  create: Endpoint[];
  updateOld: Endpoint[];
  updateNew: Endpoint[];
  delete: Endpoint[];
}
