/**
 * Ownership rules (DESIGN.md "Ownership"): who owns what as the diff sees it, what an apply records,
 * the OVH operations of a tenant's slice of a shared set, what Records shows. The admin's listing and
 * assignment are core/admin/assign.ts. The rows themselves are read and written by
 * src/store/ownership.ts.
 *
 * A record set is owned exclusively (one row, target '') or shared (one row per target, each owned by
 * the tenant that published it; OVH holds the union). Shared sets exist for A, AAAA, TXT, MX and SRV
 * (SHAREABLE_TYPES), never CNAME. A set becomes shared when
 *   - its creator sends the label `dnsplane/shared=true` (SHARED_LABEL) on a set that is absent and
 *     owned by nobody, or
 *   - an admin says so (AssignOwnership with shared=true, which also converts an exclusive set: its
 *     owner keeps the targets it has).
 * Any tenant allowed the name may then add its own targets; each tenant's delete removes its targets
 * only; the set disappears with the last target. A set without any row is unowned and never touched
 * by a tenant until an admin assigns it.
 *
 * A name's TXT family — its TXT, SPF, DKIM and DMARC sets, one TXT record set on the wire
 * (dns/types.ts TXT_FAMILY) — has one writer: a member nobody owns a row of is, for a tenant, another
 * tenant's when another member at the name is (never two writers of one RRset).
 *
 * Ownership is part of what Records serves (the owner label), so every ownership change made outside
 * an apply bumps the zone generation, under the zone lock, like a change of records.
 */
import {
  endpointKey,
  withLabels,
  isSharedChange,
  recordSetKey,
  SHAREABLE_TYPES,
  SHARED_LABEL,
  type Change,
  type Endpoint,
  type OwnerOf,
  type OwnerView,
  type RecordSetKey,
  type RecordType,
} from '../../dns/index.js';
import { isTxtFamily, TXT_FAMILY } from '../../dns/types.js';
import { InvalidInputError } from '../../dns/errors.js';
import { HEALTH_CHECK_LABEL } from '../../dns/health-check.js';
import { drain, ITEMS_PER_STEP, type Steps } from '../../dns/steps.js';
import { ovhTargetToCanonical, ovhTtl, recordsLookup, type ZoneRecords } from '../../ovh/mapping.js';
import { buildOperations, buildZoneOperations, orderOperations, type BuildOptions } from '../../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { Tenant } from '../tenants/tenants.js';

export { SHARED_LABEL, SHAREABLE_TYPES };

/** The canonical target of an OVH record (its raw target when it is not valid for its type). */
export function canonicalOf(r: OvhRecord, type: RecordType, zone: string): string {
  return ovhTargetToCanonical(type, r.target, zone) ?? r.target;
}

/** The lowest TTL of the set's records holding `target` (canonical), if one does. */
function targetTtl(zone: string, key: RecordSetKey, records: readonly OvhRecord[], target: string): number | undefined {
  const type = key.slice(key.lastIndexOf(' ') + 1) as RecordType;
  let ttl: number | undefined;
  for (const r of records) if (canonicalOf(r, type, zone) === target) ttl = Math.min(ttl ?? Number.MAX_SAFE_INTEGER, r.ttl);
  return ttl;
}

function groupRows(rows: readonly store.OwnershipRow[]): Map<RecordSetKey, store.OwnershipRow[]> {
  return drain(groupRowsSteps(rows));
}

/** groupRows with pause points: a zone's 50,000 ownership rows are grouped in slices, not in one go. */
export function* groupRowsSteps(rows: readonly store.OwnershipRow[]): Steps<Map<RecordSetKey, store.OwnershipRow[]>> {
  const byKey = new Map<RecordSetKey, store.OwnershipRow[]>();
  let n = 0;
  for (const r of rows) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    const k = recordSetKey(r.dnsName, r.recordType);
    const list = byKey.get(k);
    if (list) list.push(r);
    else byKey.set(k, [r]);
  }
  return byKey;
}

/**
 * Who owns each record set of a zone, as `tenant` sees it: self, other, none, or, for a shared set,
 * the targets it owns (with the TTL of its records in `records`) and those of the others.
 */
export function ownerViewOf(tenant: Tenant, zone: string, rows: readonly store.OwnershipRow[], records: ZoneRecords = []): OwnerOf {
  const byKey = groupRows(rows);
  // The records are read only for shared sets (their TTLs): most zones have none, and a zone of
  // 20,000 records is not walked for nothing.
  const recordsOf = recordsLookup(records, zone);
  return (key): OwnerView => {
    const owners = byKey.get(key);
    if (!owners || owners.length === 0) return familyOwner(tenant, key, byKey);
    if (owners.some((o) => o.shared)) {
      const mine = owners.filter((o) => o.tenantId === tenant.id).map((o) => o.target);
      const others = new Map(owners.filter((o) => o.tenantId !== tenant.id).map((o) => [o.target, o.tenantName] as const));
      const recs = recordsOf(key);
      const mineTtls = mine.map((t) => targetTtl(zone, key, recs, t)).filter((t): t is number => t !== undefined);
      return { kind: 'shared', mine, others, ...(mineTtls.length > 0 ? { ttl: Math.min(...mineTtls) } : {}) };
    }
    if (owners.some((o) => o.tenantId === tenant.id)) return { kind: 'self' };
    return { kind: 'other', owner: owners[0]!.tenantName };
  };
}

/** A TXT-family set without rows of its own: another tenant's when another member at its name is. */
function familyOwner(tenant: Tenant, key: RecordSetKey, byKey: ReadonlyMap<RecordSetKey, readonly store.OwnershipRow[]>): OwnerView {
  const space = key.lastIndexOf(' ');
  const type = key.slice(space + 1);
  if (!isTxtFamily(type)) return { kind: 'none' };
  const name = key.slice(0, space);
  for (const member of TXT_FAMILY) {
    if (member === type) continue;
    const other = byKey.get(recordSetKey(name, member))?.find((o) => o.tenantId !== tenant.id);
    if (other) return { kind: 'other', owner: other.tenantName };
  }
  return { kind: 'none' };
}

/**
 * The OVH operations for a zone's changes: exclusive sets over all their records, a shared set's
 * slice over the tenant's own records only (so another tenant's record is never reused, changed or
 * removed). Ordered DELETE, PUT, POST.
 */
export function buildPlanOperations(zone: string, changes: readonly Change[], records: ZoneRecords, opts: BuildOptions = {}): OvhOperation[] {
  const exclusive = changes.filter((c) => !isSharedChange(c));
  const shared = changes.filter(isSharedChange);
  const ops = buildZoneOperations(zone, exclusive, records, opts);
  if (shared.length === 0) return ops;
  const recordsOf = recordsLookup(records, zone);
  for (const c of shared) {
    const e = (c.after ?? c.before) as Endpoint;
    const mine = new Set(c.before?.targets ?? []);
    const own = recordsOf(endpointKey(e)).filter((r) => mine.has(canonicalOf(r, e.recordType, zone)));
    ops.push(...buildOperations(zone, c, own, opts));
  }
  return orderOperations(ops);
}

/**
 * Records what an apply changed, in its transaction: an exclusive create makes the tenant the owner,
 * an exclusive delete frees the name; for a shared set the tenant's rows become exactly its targets
 * after the change (none after a delete), the other tenants' rows untouched.
 */
export async function recordOwnership(tx: store.Queryable, zone: string, tenant: Tenant, changes: readonly Change[]): Promise<void> {
  let mineByKey: Map<RecordSetKey, store.OwnershipRow[]> | undefined;
  for (const c of changes) {
    const e = (c.after ?? c.before) as Endpoint;
    if (isSharedChange(c)) {
      mineByKey ??= groupRows(await store.listOwnershipForTenant(tx, tenant.id, zone));
      const keep = new Set(c.after?.targets ?? []);
      const held = (mineByKey.get(endpointKey(e)) ?? []).map((r) => r.target);
      for (const target of held) {
        if (!keep.has(target)) await store.removeOwner(tx, { zone, dnsName: e.dnsName, recordType: e.recordType, target, tenantId: tenant.id });
      }
      for (const target of keep) {
        if (!held.includes(target)) await store.setOwner(tx, { zone, dnsName: e.dnsName, recordType: e.recordType, tenantId: tenant.id, target, shared: true });
      }
      // Its withdrawn targets (core/withdrawals/withdrawals.ts) take the set's TTL as it is now: posted so on restore.
      if (c.after)
        await store.setWithdrawnTtl(tx, zone, { dnsName: e.dnsName, recordType: e.recordType, tenantId: tenant.id }, [...keep], ovhTtl(c.after.ttl).ttl);
    } else if (c.action === 'update' && c.after) {
      // An exclusive set's withdrawn targets (for health, core/withdrawals/withdrawals.ts) hang on its one row:
      // the ones it no longer desires go now, the others take its TTL (posted so on restore).
      const set = { dnsName: e.dnsName, recordType: e.recordType };
      await store.keepExclusiveWithdrawals(tx, zone, set, c.after.targets);
      await store.setWithdrawnTtl(tx, zone, { ...set, tenantId: tenant.id }, c.after.targets, ovhTtl(c.after.ttl).ttl);
    } else if (c.action === 'create') {
      await store.setOwner(tx, { zone, dnsName: e.dnsName, recordType: e.recordType, tenantId: tenant.id });
    } else if (c.action === 'delete') {
      await store.removeOwner(tx, { zone, dnsName: e.dnsName, recordType: e.recordType });
    }
  }
}

/**
 * The record sets of a zone as the tenant named may see them, each with labels.owner (the owning tenant, ''
 * for nobody): its own sets always, the others' and the unowned only with includeForeign. A shared
 * set is shown as one endpoint per owner (labels.owner, SHARED_LABEL=true) holding that owner's
 * targets, with the TTL of its records: a tenant sees its own slice, exactly what it wrote.
 */
export function* visibleRecordSetsSteps(
  tenantName: string,
  zone: string,
  endpoints: readonly Endpoint[],
  rows: readonly store.OwnershipRow[],
  records: ZoneRecords,
  includeForeign: boolean,
): Steps<Endpoint[]> {
  const byKey = yield* groupRowsSteps(rows);
  const recordsOf = recordsLookup(records, zone);
  const out: Endpoint[] = [];
  let n = 0;
  for (const e of endpoints) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    const key = endpointKey(e);
    const owners = byKey.get(key) ?? [];
    if (!owners.some((o) => o.shared)) {
      const owner = owners[0]?.tenantName ?? '';
      if (includeForeign || owner === tenantName) out.push(withLabels(e, labelsOf(e, owner, owners[0]?.healthCheck, false)));
      continue;
    }
    const ownerOf = new Map(owners.map((o) => [o.target, o.tenantName] as const));
    const checkOf = new Map(owners.filter((o) => o.healthCheck).map((o) => [o.tenantName, o.healthCheck] as const));
    const slices = new Map<string, string[]>();
    for (const t of e.targets) {
      const owner = ownerOf.get(t) ?? '';
      slices.set(owner, [...(slices.get(owner) ?? []), t]);
    }
    for (const owner of [...slices.keys()].sort()) {
      if (!includeForeign && owner !== tenantName) continue;
      const targets = slices.get(owner)!;
      const recs = recordsOf(key);
      const ttl = Math.min(...targets.map((t) => targetTtl(zone, key, recs, t) ?? e.ttl));
      out.push(withLabels(e, labelsOf(e, owner, checkOf.get(owner), true), targets, ttl));
    }
  }
  return out;
}

/**
 * The labels a visible set carries: its owner, the shared mark, the owner's health check. One object
 * per (owner, shared, check), frozen and shared by every set that has them (a zone's answers carry
 * 50,000 of them, one object per tenant instead); merged afresh only onto labels of the set's own.
 */
const sharedLabels = new Map<string, Readonly<Record<string, string>>>();
const MAX_SHARED_LABELS = 100_000;

function labelsOf(e: Endpoint, owner: string, check: string | undefined, shared: boolean): Readonly<Record<string, string>> {
  const own = { owner, ...(shared ? { [SHARED_LABEL]: 'true' } : {}), ...checkLabel(check) };
  if (e.labels !== undefined && Object.keys(e.labels).length > 0) return { ...e.labels, ...own };
  const key = `${owner}\u0000${shared ? 1 : 0}\u0000${check ?? ''}`;
  let labels = sharedLabels.get(key);
  if (labels === undefined) {
    if (sharedLabels.size >= MAX_SHARED_LABELS) sharedLabels.clear();
    labels = Object.freeze(own);
    sharedLabels.set(key, labels);
  }
  return labels;
}

/** The owner's health check as a label (dns/health-check.ts), echoed so that its clients plan no update of it. */
function checkLabel(check: string | undefined): Record<string, string> {
  return check ? { [HEALTH_CHECK_LABEL]: check } : {};
}

/**
 * Checks the shared flag of an endpoint a tenant sends: the label's value is "true" or "false", and
 * "true" only on a type that can be shared.
 */
export function checkSharedLabel(e: Pick<Endpoint, 'recordType' | 'labels'>, field: string): void {
  const value = e.labels?.[SHARED_LABEL];
  if (value === undefined) return;
  const where = `${field}.labels["${SHARED_LABEL}"]`;
  if (value !== 'true' && value !== 'false') throw new InvalidInputError(where, `must be "true" or "false", got ${JSON.stringify(value)}`);
  if (value === 'true' && !SHAREABLE_TYPES.includes(e.recordType)) {
    throw new InvalidInputError(where, `a ${e.recordType} record set cannot be shared (shared sets: ${SHAREABLE_TYPES.join(', ')})`);
  }
}
