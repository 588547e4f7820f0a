/**
 * OVH's record model and the operations dnsplane sends. See REFERENCE.md section 1.
 */

/** One OVH record as GET /domain/zone/{z}/record/{id} returns it. Ids exceed 2^32: kept as strings. */
export interface OvhRecord {
  id: string;
  zone: string;
  /** Relative to the zone; '' is the apex. Lowercase. */
  subDomain: string;
  fieldType: string;
  /** As OVH stores it (TXT without the quotes OVH adds in its answers). */
  target: string;
  ttl: number;
}

/**
 * A row of the records cache as an OvhRecord of `zone`. Written out, never `{ ...row, zone }`: V8 makes
 * an object spread followed by more properties a dictionary-mode object, about 350 bytes where this
 * literal takes 80 — at 50,000 records a zone, the difference is most of what a zone's base weighs.
 */
export function recordOf(zone: string, r: { id: string; subDomain: string; fieldType: string; target: string; ttl: number }): OvhRecord {
  return { id: r.id, zone, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
}

export interface OvhRecordBody {
  fieldType: string;
  subDomain: string;
  target: string;
  ttl: number;
}

/**
 * One record operation of an apply. `path` is relative to /1.0 (e.g. `/domain/zone/example.com/record/5000000001`).
 * PUT carries the record id it updates and the record as it was (to undo); DELETE the record it removes.
 */
export type OvhOperation =
  | { method: 'POST'; path: string; body: OvhRecordBody }
  | { method: 'PUT'; path: string; id: string; body: { subDomain?: string; target: string; ttl: number }; before: OvhRecord }
  | { method: 'DELETE'; path: string; id: string; before: OvhRecord };

export function refreshPath(zone: string): string {
  return `/domain/zone/${zone}/refresh`;
}
