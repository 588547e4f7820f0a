/**
 * The zone as its owners see it (issue 30): what OVH holds plus the withdrawn targets
 * (core/withdrawals/withdrawals.ts), each as a record of its own whose id is WITHDRAWN_ID_PREFIX + n. A Plan diffs
 * against it and Records answers from it, so a tenant that still desires a withdrawn target plans
 * nothing; the operations a plan builds on such a record are rewritten (withdrawnOperations): none for
 * what stays or leaves (its ownership and withdrawal rows carry it), a POST for a new target that took
 * its place. The DNS door and the served OVH API's published listing keep the base as OVH holds it.
 */
import { compareEndpoints } from '../../dns/endpoint.js';
import { recordSetKey, type Endpoint, type RecordSetKey } from '../../dns/index.js';
import type { TargetState } from '../../dns/types.js';
import { isRecordList, ovhRecordKey, recordsToEndpoints, type ZoneRecords } from '../../ovh/mapping.js';
import { recordPath } from '../../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import type * as store from '../../store/index.js';

/** The id prefix of a withdrawn target's stand-in record: never an OVH id (those are digits). */
export const WITHDRAWN_ID_PREFIX = 'withdrawn:';

export function isWithdrawnId(id: string): boolean {
  return id.startsWith(WITHDRAWN_ID_PREFIX);
}

interface Source {
  recordsByKey: ZoneRecords;
  endpoints: readonly Endpoint[];
}

/**
 * `source` with each withdrawn target added to its set as a stand-in record (one per target, however
 * many reasons; a shared set's or an exclusive set's alike, so that a desired state naming it plans nothing). Unchanged (the same object) when nothing is withdrawn; otherwise only the sets with a
 * withdrawn target are mapped again.
 */
export function withWithdrawn<T extends Source>(zone: string, source: T, withdrawals: readonly store.WithdrawalRow[]): T {
  if (withdrawals.length === 0) return source;
  const byKey = new Map<RecordSetKey, OvhRecord[]>();
  const seen = new Set<string>();
  let n = 0;
  for (const w of withdrawals) {
    const k = recordSetKey(w.dnsName, w.recordType);
    if (seen.has(`${k} ${w.target}`)) continue;
    seen.add(`${k} ${w.target}`);
    const list = byKey.get(k) ?? [];
    list.push({ id: `${WITHDRAWN_ID_PREFIX}${++n}`, zone, subDomain: w.subDomain, fieldType: w.fieldType, target: w.ovhTarget, ttl: w.ttl });
    byKey.set(k, list);
  }
  const original = source.recordsByKey;
  const grouped = new Map<RecordSetKey, readonly OvhRecord[]>(isRecordList(original) ? groupList(original, zone) : original);
  const endpoints = new Map(source.endpoints.map((e) => [recordSetKey(e.dnsName, e.recordType), e] as const));
  for (const [k, added] of byKey) {
    const records = [...(grouped.get(k) ?? []), ...added];
    grouped.set(k, records);
    const mapped = recordsToEndpoints(records, zone).endpoints[0];
    if (mapped) endpoints.set(k, mapped);
  }
  const sorted = [...endpoints.values()].sort(compareEndpoints);
  return { ...source, recordsByKey: grouped, endpoints: sorted };
}

function groupList(records: readonly OvhRecord[], zone: string): Map<RecordSetKey, OvhRecord[]> {
  const out = new Map<RecordSetKey, OvhRecord[]>();
  for (const r of records) {
    const k = ovhRecordKey(r, zone);
    out.set(k, [...(out.get(k) ?? []), r]);
  }
  return out;
}

/**
 * The operations a plan built over withdrawn stand-ins, as OVH must see them: a DELETE or a PUT of the
 * same target (a TTL) on a stand-in is nothing (the rows carry it); a PUT of a stand-in to another
 * target is a POST of that target.
 */
export function withdrawnOperations(zone: string, ops: readonly OvhOperation[]): OvhOperation[] {
  const out: OvhOperation[] = [];
  for (const op of ops) {
    if (op.method === 'POST' || !isWithdrawnId(op.id)) {
      out.push(op);
      continue;
    }
    if (op.method === 'PUT' && op.body.target !== op.before.target) {
      out.push({
        method: 'POST',
        path: recordPath(zone),
        body: { fieldType: op.before.fieldType, subDomain: op.before.subDomain, target: op.body.target, ttl: op.body.ttl },
      });
    }
  }
  return out;
}

/**
 * `endpoints` (a Records answer: shared sets split per owner, labels.owner) with each owner's withdrawn
 * targets' states (Endpoint.targetStates); the others are the same objects.
 */
export function withTargetStates(endpoints: Endpoint[], withdrawals: readonly store.WithdrawalRow[]): Endpoint[] {
  if (withdrawals.length === 0) return endpoints;
  const states = withdrawnStates(withdrawals);
  return endpoints.map((e) => {
    const mine = states.get(`${e.dnsName} ${e.recordType} ${e.labels?.['owner'] ?? ''}`);
    return mine ? { ...e, targetStates: mine.filter((s) => e.targets.includes(s.target)) } : e;
  });
}

/** The withdrawn targets of each set and owner ("name type owner" -> states). */
function withdrawnStates(withdrawals: readonly store.WithdrawalRow[]): Map<string, TargetState[]> {
  const out = new Map<string, TargetState[]>();
  for (const { set, state } of withdrawnTargets(withdrawals).values()) out.set(set, [...(out.get(set) ?? []), state]);
  return out;
}

/** Each withdrawn target's state ("name type target" -> state; its reasons joined), for Records and ListOwnership. */
export function withdrawnTargetStates(withdrawals: readonly store.WithdrawalRow[]): Map<string, TargetState> {
  return new Map([...withdrawnTargets(withdrawals)].map(([k, v]) => [k, v.state] as const));
}

function withdrawnTargets(withdrawals: readonly store.WithdrawalRow[]): Map<string, { set: string; state: TargetState & { since: Date } }> {
  const byTarget = new Map<string, { set: string; state: TargetState & { since: Date } }>();
  for (const w of withdrawals) {
    const k = `${w.dnsName} ${w.recordType} ${w.target}`;
    const hit = byTarget.get(k);
    const detail = w.detail.detail ?? '';
    if (hit) {
      hit.state.reason = [...hit.state.reason.split(', '), w.reason].sort().join(', ');
      hit.state.detail = [hit.state.detail, detail].filter(Boolean).join('; ');
      if (w.withdrawnAt < hit.state.since) hit.state.since = w.withdrawnAt;
      continue;
    }
    byTarget.set(k, {
      set: `${w.dnsName} ${w.recordType} ${w.tenantName}`,
      state: { target: w.target, status: 'withdrawn', reason: w.reason, since: w.withdrawnAt, detail },
    });
  }
  return byTarget;
}
