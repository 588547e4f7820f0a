/**
 * The minimal-operations builder (DESIGN.md, "Minimal operations"). Pure.
 *
 * OVH stores one record per target. For one record set (name, type), given the OVH records that hold
 * it now and the targets and TTL it must have:
 *
 * 1. Keep: each desired target already held by a record keeps one such record (when a target is held
 *    twice — duplicates — a record whose TTL already matches is preferred; the other copies count as
 *    records to remove). A kept record whose TTL differs gets one PUT {target, ttl}.
 * 2. Reuse: the records left (removed) and the targets left (added), each sorted, are paired in order;
 *    each pair is one PUT of that record id with the new {target, ttl}.
 * 3. POST what is left to add; DELETE what is left to remove. Never both in one set: no
 *    delete-and-recreate.
 *
 * So a set costs max(|added|, |removed|) + (kept targets whose TTL changes) operations, which is the
 * least possible: every added target needs a POST or a PUT, every surplus record a DELETE or a PUT, one
 * operation serves at most one of each, and a wrong TTL on a kept record needs a write of its own.
 *
 * Operations are ordered DELETE, then PUT, then POST (per set and across a zone), so that a CNAME
 * replacing another type at a name never coexists with it, even in OVH's draft.
 */
import { compareStrings, endpointKey, sortedUnique, subDomainOf, type Change, type Endpoint } from '../dns/index.js';
import { endpointTargetToOvh, ovhRecordKey, ovhTargetToCanonical, ovhTtl, recordsLookup, type OvhTargetOptions, type ZoneRecords } from './mapping.js';
import type { OvhOperation, OvhRecord } from './types.js';

export type OvhPostOperation = Extract<OvhOperation, { method: 'POST' }>;

export type BuildOptions = OvhTargetOptions;

/** `/domain/zone/{zone}/record`, or `/domain/zone/{zone}/record/{id}` with an id. */
export function recordPath(zone: string, id?: string): string {
  return id === undefined ? `/domain/zone/${zone}/record` : `/domain/zone/${zone}/record/${id}`;
}

/** Numeric order of OVH ids (decimal strings, possibly over 2^53); non-numeric ids after, as strings. */
export function compareIds(a: string, b: string): number {
  const na = /^[0-9]+$/.test(a);
  const nb = /^[0-9]+$/.test(b);
  if (na && nb) {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (na !== nb) return na ? -1 : 1;
  return compareStrings(a, b);
}

const METHOD_ORDER: Record<OvhOperation['method'], number> = { DELETE: 0, PUT: 1, POST: 2 };

/** Stable sort of operations into DELETE, PUT, POST order (one pass: three buckets, in order). */
export function orderOperations(ops: readonly OvhOperation[]): OvhOperation[] {
  const buckets: [OvhOperation[], OvhOperation[], OvhOperation[]] = [[], [], []];
  for (const op of ops) buckets[METHOD_ORDER[op.method]].push(op);
  return buckets[0].concat(buckets[1], buckets[2]);
}

/**
 * The OVH operations for one change of one record set. `existing` holds the OVH records of that name
 * and type now (with ids); it may be empty, and it may hold records a create does not expect (then
 * they are reused or removed). A record of another name or type in `existing` is a caller bug
 * (RangeError). The TTL sent is ovhTtl(after.ttl).
 */
export function buildOperations(zone: string, change: Change, existing: readonly OvhRecord[], opts: BuildOptions = {}): OvhOperation[] {
  const set = (change.after ?? change.before) as Endpoint;
  const key = endpointKey(set);
  for (const r of existing) {
    if (ovhRecordKey(r, zone) !== key) {
      throw new RangeError(`record ${r.id} (${ovhRecordKey(r, zone)}) is not part of record set ${key}`);
    }
  }
  const type = set.recordType;
  const subDomain = subDomainOf(set.dnsName, zone);
  const desired = change.after === undefined ? [] : sortedUnique(change.after.targets);
  const ttl = change.after === undefined ? 0 : ovhTtl(change.after.ttl).ttl;
  const deletes: OvhOperation[] = [];
  const puts: OvhOperation[] = [];
  const posts: OvhOperation[] = [];

  // The existing records by canonical target; for each target, a record with the right TTL first.
  // Nothing exists (a create, the common case): one POST per target, nothing to match.
  const pool =
    existing.length === 0
      ? []
      : existing
          .map((record) => ({ record, canonical: ovhTargetToCanonical(type, record.target, zone) ?? record.target, used: false }))
          .sort(
            (a, b) =>
              compareStrings(a.canonical, b.canonical) || Number(a.record.ttl !== ttl) - Number(b.record.ttl !== ttl) || compareIds(a.record.id, b.record.id),
          );

  const added: string[] = [];
  for (const target of desired) {
    const match = pool.find((p) => !p.used && p.canonical === target);
    if (match === undefined) {
      added.push(target);
      continue;
    }
    match.used = true;
    if (match.record.ttl !== ttl) puts.push(putOperation(zone, type, match.record, target, ttl, opts));
  }
  const removed: OvhRecord[] = [];
  for (const p of pool) if (!p.used) removed.push(p.record);

  const pairs = Math.min(added.length, removed.length);
  for (let i = 0; i < pairs; i++) puts.push(putOperation(zone, type, removed[i] as OvhRecord, added[i] as string, ttl, opts));
  for (let i = pairs; i < added.length; i++) {
    posts.push({
      method: 'POST',
      path: recordPath(zone),
      body: { fieldType: type, subDomain, target: endpointTargetToOvh(type, added[i] as string, zone, opts), ttl },
    });
  }
  for (let i = pairs; i < removed.length; i++) {
    const record = removed[i] as OvhRecord;
    deletes.push({ method: 'DELETE', path: recordPath(zone, record.id), id: record.id, before: { ...record } });
  }
  return deletes.length === 0 && puts.length === 0 ? posts : [...deletes, ...puts, ...posts];
}

function putOperation(zone: string, type: Endpoint['recordType'], record: OvhRecord, target: string, ttl: number, opts: BuildOptions): OvhOperation {
  return {
    method: 'PUT',
    path: recordPath(zone, record.id),
    id: record.id,
    body: { target: endpointTargetToOvh(type, target, zone, opts), ttl },
    before: { ...record },
  };
}

/**
 * The operations for all changes of one zone, given all the zone's OVH records (a list, grouped here
 * by ovhRecordKey, or already grouped: RecordMapping.recordsByKey), ordered DELETE, PUT, POST.
 */
export function buildZoneOperations(zone: string, changes: readonly Change[], records: ZoneRecords, opts: BuildOptions = {}): OvhOperation[] {
  const recordsOf = recordsLookup(records, zone);
  const ops: OvhOperation[] = [];
  for (const c of changes) {
    for (const op of buildOperations(zone, c, recordsOf(endpointKey((c.after ?? c.before) as Endpoint)), opts)) ops.push(op);
  }
  return orderOperations(ops);
}

/**
 * The records after the operations succeeded (pure): POST appends a record with the id newIdFor
 * gives, PUT replaces target and TTL (and subDomain when sent), DELETE removes. Throws when a PUT or
 * DELETE names an id that is not there.
 */
export function applyOperationsToRecords(
  records: readonly OvhRecord[],
  ops: readonly OvhOperation[],
  newIdFor: (op: OvhPostOperation, index: number) => string,
): OvhRecord[] {
  // By id, in order: a PUT keeps the record's place, a POST appends, a DELETE removes (each O(1)).
  const out = new Map<string, OvhRecord>(records.map((r) => [r.id, { ...r }]));
  const existing = (id: string): OvhRecord => {
    const r = out.get(id);
    if (r === undefined) throw new Error(`no record ${id}`);
    return r;
  };
  ops.forEach((op, index) => {
    switch (op.method) {
      case 'POST': {
        const zone = /^\/domain\/zone\/([^/]+)\/record$/.exec(op.path)?.[1];
        if (zone === undefined) throw new Error(`not a record creation path: ${op.path}`);
        const id = newIdFor(op, index);
        out.delete(id);
        out.set(id, { id, zone, ...op.body });
        break;
      }
      case 'PUT': {
        const r = existing(op.id);
        out.set(op.id, { ...r, subDomain: op.body.subDomain ?? r.subDomain, target: op.body.target, ttl: op.body.ttl });
        break;
      }
      case 'DELETE':
        existing(op.id);
        out.delete(op.id);
        break;
    }
  });
  return [...out.values()];
}

/** How an operation goes on the wire: method, path (relative to /1.0) and the exact JSON body ('' for none). */
export function describeOperation(op: OvhOperation): { method: OvhOperation['method']; path: string; body: string } {
  switch (op.method) {
    case 'POST': {
      const { fieldType, subDomain, target, ttl } = op.body;
      return { method: op.method, path: op.path, body: JSON.stringify({ fieldType, subDomain, target, ttl }) };
    }
    case 'PUT': {
      const { subDomain, target, ttl } = op.body;
      const body = subDomain === undefined ? { target, ttl } : { subDomain, target, ttl };
      return { method: op.method, path: op.path, body: JSON.stringify(body) };
    }
    case 'DELETE':
      return { method: op.method, path: op.path, body: '' };
  }
}

/** The record set (`name TYPE`, as endpointKey gives it for a change) an operation is about. */
export function operationSetKey(zone: string, op: OvhOperation): string {
  return ovhRecordKey(op.method === 'POST' ? { id: '', zone, ...op.body } : op.before, zone);
}

/**
 * The operations of a zone plan grouped by the record set they are about, in plan order: one pass
 * over the operations, so that showing a plan is linear in its size (each change then finds its
 * operations with one lookup). `as` gives what is grouped (the operation itself, or its wire form).
 */
export function operationsByRecordSet<T = OvhOperation>(
  zone: string,
  operations: readonly OvhOperation[],
  as: (op: OvhOperation, i: number) => T = (op) => op as T,
): Map<string, T[]> {
  const byKey = new Map<string, T[]>();
  operations.forEach((op, i) => {
    const key = operationSetKey(zone, op);
    const list = byKey.get(key);
    if (list) list.push(as(op, i));
    else byKey.set(key, [as(op, i)]);
  });
  return byKey;
}

/** The operations of a zone plan that belong to one change (same name and type), in plan order. */
export function operationsOfChange<T>(c: Change, byRecordSet: ReadonlyMap<string, readonly T[]>): readonly T[] {
  return byRecordSet.get(endpointKey((c.after ?? c.before) as Endpoint)) ?? [];
}
