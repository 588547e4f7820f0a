/**
 * OVH's answers read into our types: an answer of the wrong shape is an OvhError (status 200, kind
 * unknown), never a record with holes.
 */
import { OvhError } from '../errors.js';
import type { OvhRecord } from '../types.js';

export function asArray(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new OvhError('GET', what, 200, 'unknown', `expected an array, got ${typeof v}`);
  return v;
}

export function asObject(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object') throw new OvhError('GET', what, 200, 'unknown', `expected an object, got ${typeof v}`);
  return v as Record<string, unknown>;
}

export function toRecord(v: unknown, zone: string): OvhRecord {
  const r = asObject(v, 'record');
  return {
    id: String(r['id'] ?? '0'),
    zone,
    subDomain: String(r['subDomain'] ?? '').toLowerCase(),
    fieldType: String(r['fieldType'] ?? ''),
    target: String(r['target'] ?? ''),
    ttl: Number(r['ttl'] ?? 0),
  };
}

/** A record listing's filter (OVH matches subDomain case-insensitively). */
export interface RecordFilter {
  fieldType?: string;
  subDomain?: string;
}

/** The filter as query parameters, only the fields given. */
export function filterParams(filter: RecordFilter): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  if (filter.fieldType !== undefined) params['fieldType'] = filter.fieldType;
  if (filter.subDomain !== undefined) params['subDomain'] = filter.subDomain;
  return params;
}
