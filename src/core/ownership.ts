/**
 * Ownership rules (DESIGN.md "Ownership"): who owns what as the diff sees it, what an apply records,
 * the OVH operations of a tenant's slice of a shared set, what Records shows, and the admin's
 * assignment. The rows themselves are read and written by src/store/ownership.ts.
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
 * Ownership is part of what Records serves (the owner label), so every ownership change made outside
 * an apply bumps the zone generation, under the zone lock, like a change of records.
 */
import {
  canonicalTarget,
  endpointKey,
  findZone,
  isSharedChange,
  MAX_TARGETS,
  normalizeName,
  parseRecordType,
  recordSetKey,
  SHAREABLE_TYPES,
  SHARED_LABEL,
  sortedUnique,
  type Change,
  type Endpoint,
  type OwnerOf,
  type OwnerView,
  type RecordSetKey,
  type RecordType,
} from '../dns/index.js';
import { InvalidInputError } from '../dns/errors.js';
import { ovhRecordKey, ovhTargetToCanonical, recordsToEndpoints } from '../ovh/mapping.js';
import { buildOperations, buildZoneOperations, orderOperations, type BuildOptions } from '../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../ovh/types.js';
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import { NotFoundError } from './errors.js';
import { checkNameAllowed, type Tenant } from './tenants.js';
import { ensureSynced, toOvhRecord } from './zones.js';

export { SHARED_LABEL, SHAREABLE_TYPES };

/** The canonical target of an OVH record (its raw target when it is not valid for its type). */
function canonicalOf(r: OvhRecord, type: RecordType, zone: string): string {
  return ovhTargetToCanonical(type, r.target, zone) ?? r.target;
}

/** Per record set, per canonical target: the lowest TTL of the records holding it. */
function targetTtls(zone: string, records: readonly OvhRecord[]): Map<RecordSetKey, Map<string, number>> {
  const out = new Map<RecordSetKey, Map<string, number>>();
  for (const r of records) {
    const key = ovhRecordKey(r, zone);
    const type = key.slice(key.lastIndexOf(' ') + 1) as RecordType;
    const t = canonicalOf(r, type, zone);
    const byTarget = out.get(key) ?? new Map<string, number>();
    byTarget.set(t, Math.min(byTarget.get(t) ?? Number.MAX_SAFE_INTEGER, r.ttl));
    out.set(key, byTarget);
  }
  return out;
}

function groupRows(rows: readonly store.OwnershipRow[]): Map<RecordSetKey, store.OwnershipRow[]> {
  const byKey = new Map<RecordSetKey, store.OwnershipRow[]>();
  for (const r of rows) {
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
export function ownerViewOf(tenant: Tenant, zone: string, rows: readonly store.OwnershipRow[], records: readonly OvhRecord[] = []): OwnerOf {
  const byKey = groupRows(rows);
  const ttls = targetTtls(zone, records);
  return (key): OwnerView => {
    const owners = byKey.get(key);
    if (!owners || owners.length === 0) return { kind: 'none' };
    if (owners.some((o) => o.shared)) {
      const mine = owners.filter((o) => o.tenantId === tenant.id).map((o) => o.target);
      const others = new Map(owners.filter((o) => o.tenantId !== tenant.id).map((o) => [o.target, o.tenantName] as const));
      const mineTtls = mine.map((t) => ttls.get(key)?.get(t)).filter((t): t is number => t !== undefined);
      return { kind: 'shared', mine, others, ...(mineTtls.length > 0 ? { ttl: Math.min(...mineTtls) } : {}) };
    }
    if (owners.some((o) => o.tenantId === tenant.id)) return { kind: 'self' };
    return { kind: 'other', owner: owners[0]!.tenantName };
  };
}

/**
 * The OVH operations for a zone's changes: exclusive sets over all their records, a shared set's
 * slice over the tenant's own records only (so another tenant's record is never reused, changed or
 * removed). Ordered DELETE, PUT, POST.
 */
export function buildPlanOperations(zone: string, changes: readonly Change[], records: readonly OvhRecord[], opts: BuildOptions = {}): OvhOperation[] {
  const exclusive = changes.filter((c) => !isSharedChange(c));
  const shared = changes.filter(isSharedChange);
  const ops = buildZoneOperations(zone, exclusive, records, opts);
  if (shared.length === 0) return ops;
  // The records of the shared sets changed, by set: one pass over the zone's records.
  const sharedKeys = new Set(shared.map((c) => endpointKey((c.after ?? c.before) as Endpoint)));
  const bySet = new Map<RecordSetKey, OvhRecord[]>();
  for (const r of records) {
    const key = ovhRecordKey(r, zone);
    if (!sharedKeys.has(key)) continue;
    const list = bySet.get(key);
    if (list) list.push(r);
    else bySet.set(key, [r]);
  }
  for (const c of shared) {
    const e = (c.after ?? c.before) as Endpoint;
    const mine = new Set(c.before?.targets ?? []);
    const own = (bySet.get(endpointKey(e)) ?? []).filter((r) => mine.has(canonicalOf(r, e.recordType, zone)));
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
export function visibleRecordSets(
  tenantName: string,
  zone: string,
  endpoints: readonly Endpoint[],
  rows: readonly store.OwnershipRow[],
  records: readonly OvhRecord[],
  includeForeign: boolean,
): Endpoint[] {
  const byKey = groupRows(rows);
  const ttls = targetTtls(zone, records);
  const out: Endpoint[] = [];
  for (const e of endpoints) {
    const key = endpointKey(e);
    const owners = byKey.get(key) ?? [];
    if (!owners.some((o) => o.shared)) {
      const owner = owners[0]?.tenantName ?? '';
      if (includeForeign || owner === tenantName) out.push({ ...e, labels: { ...e.labels, owner } });
      continue;
    }
    const ownerOf = new Map(owners.map((o) => [o.target, o.tenantName] as const));
    const slices = new Map<string, string[]>();
    for (const t of e.targets) {
      const owner = ownerOf.get(t) ?? '';
      slices.set(owner, [...(slices.get(owner) ?? []), t]);
    }
    for (const owner of [...slices.keys()].sort()) {
      if (!includeForeign && owner !== tenantName) continue;
      const targets = slices.get(owner)!;
      const ttl = Math.min(...targets.map((t) => ttls.get(key)?.get(t) ?? e.ttl));
      out.push({ ...e, targets, ttl, labels: { ...e.labels, owner, [SHARED_LABEL]: 'true' } });
    }
  }
  return out;
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

// ---------------------------------------------------------------------------------------------
// Admin: list and assign.
// ---------------------------------------------------------------------------------------------

export interface OwnershipListing {
  rows: store.OwnershipRow[];
  /** Record sets (or, for a shared set, targets) that exist in OVH without an owner. */
  unowned: Endpoint[];
}

/** Ownership rows of the zones named (all when none), optionally of one tenant, with the unowned sets. */
export async function listOwnership(
  ctx: CoreContext,
  opts: { zones: string[]; tenantId?: string; includeUnowned: boolean },
): Promise<OwnershipListing> {
  const rows: store.OwnershipRow[] = [];
  const unowned: Endpoint[] = [];
  for (const zone of opts.zones) {
    const zoneRows = await store.listOwnership(ctx.pool, zone);
    rows.push(...zoneRows.filter((r) => opts.tenantId === undefined || r.tenantId === opts.tenantId));
    if (!opts.includeUnowned) continue;
    const z = await store.getZone(ctx.pool, zone);
    if (!z || z.state !== 'synced') continue; // never synced: nothing is known of it yet
    const records = (await store.listRecords(ctx.pool, zone)).map((r) => toOvhRecord(zone, r));
    const { endpoints } = recordsToEndpoints(records, zone);
    for (const e of visibleRecordSets('', zone, endpoints, zoneRows, records, true)) {
      if (e.labels?.['owner'] === '') unowned.push(e);
    }
  }
  return { rows, unowned };
}

export interface AssignInput {
  dnsName: string;
  recordType: string;
  /** The new owner; '' releases (the set, or the targets named, become unowned). */
  tenant: string;
  /** Own the set as a shared set (per target) instead of exclusively. */
  shared: boolean;
  /** With shared: the targets to assign; empty: every target of the set that has no owner. */
  targets: string[];
}

export interface AssignResult {
  zone: string;
  /** The set's ownership rows after the change. */
  rows: store.OwnershipRow[];
  generation: bigint;
  /** What was done, for the audit log. */
  summary: string;
}

/**
 * Assigns (or releases) the ownership of one record set: adopt an unowned set, move it to another
 * tenant, make it shared, give targets of a shared set to a tenant. The new owner must be allowed the
 * name (zones and suffixes). Runs under the zone lock; bumps the generation; `audit` writes the
 * journal row in the same transaction.
 */
export async function assignOwnership(
  ctx: CoreContext,
  input: AssignInput,
  audit: (tx: store.Queryable, zone: string, summary: string, rows: store.OwnershipRow[]) => Promise<void>,
): Promise<AssignResult> {
  const dnsName = normalizeName(input.dnsName, 'dnsName', { allowUnderscore: true, allowWildcard: true });
  const recordType = parseRecordType(input.recordType, 'recordType');
  const zones = await store.listZoneNames(ctx.pool);
  const zone = findZone(dnsName, zones);
  if (!zone) throw new InvalidInputError('dnsName', `"${dnsName}" is not in any zone dnsplane manages (${zones.join(', ') || 'none'})`);
  let owner: Tenant | undefined;
  if (input.tenant !== '') {
    owner = await store.getTenantByName(ctx.pool, input.tenant);
    if (!owner) throw new NotFoundError(`tenant "${input.tenant}" does not exist`);
    checkNameAllowed(owner, zone, dnsName, 'dnsName');
  }
  if (!input.shared && input.targets.length > 0) {
    throw new InvalidInputError('targets', 'targets are assigned one by one only in a shared set; set shared, or leave targets empty to assign the whole set');
  }
  if (input.shared && !SHAREABLE_TYPES.includes(recordType)) {
    throw new InvalidInputError('shared', `a ${recordType} record set cannot be shared (shared sets: ${SHAREABLE_TYPES.join(', ')})`);
  }
  if (input.shared && input.tenant === '' && input.targets.length === 0) {
    throw new InvalidInputError('targets', 'name the targets to release, or release the whole set with shared=false');
  }
  if (input.targets.length > MAX_TARGETS) throw new InvalidInputError('targets', `at most ${MAX_TARGETS} targets per call (got ${input.targets.length})`);
  const targets = sortedUnique(input.targets.map((t, i) => canonicalTarget(recordType, t, `targets[${i}]`, { zone })));
  await ensureSynced(ctx, zone);

  return store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    const set = { zone, dnsName, recordType };
    const rows = (await store.listOwnership(tx, zone)).filter((r) => r.dnsName === dnsName && r.recordType === recordType);
    const records = (await store.listRecords(tx, zone)).map((r) => toOvhRecord(zone, r));
    const key = recordSetKey(dnsName, recordType);
    const present = sortedUnique(records.filter((r) => ovhRecordKey(r, zone) === key).map((r) => canonicalOf(r, recordType, zone)));
    let summary: string;

    if (!input.shared) {
      await store.removeOwner(tx, set);
      if (owner) await store.setOwner(tx, { ...set, tenantId: owner.id });
      summary = owner ? `${dnsName} ${recordType} owned by ${owner.name}` : `${dnsName} ${recordType} released`;
    } else {
      // Per target: who owns it now (an exclusive owner owns every present target).
      const perTarget = new Map<string, string>();
      const exclusive = rows.find((r) => !r.shared);
      if (exclusive) for (const t of present) perTarget.set(t, exclusive.tenantId);
      for (const r of rows) if (r.shared) perTarget.set(r.target, r.tenantId);
      const chosen = targets.length > 0 ? targets : present.filter((t) => !perTarget.has(t));
      // Nothing to give and nothing to convert: say so rather than pretend.
      if (chosen.length === 0 && !exclusive) throw new InvalidInputError('targets', `${dnsName} ${recordType} holds no target without an owner; name the targets to assign`);
      for (const t of chosen) {
        if (owner) perTarget.set(t, owner.id);
        else perTarget.delete(t);
      }
      await store.removeOwner(tx, set);
      for (const [target, tenantId] of [...perTarget].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        await store.setOwner(tx, { ...set, target, tenantId, shared: true });
      }
      summary = `${dnsName} ${recordType} shared` + (chosen.length > 0 ? `; ${chosen.join(', ')} ${owner ? `owned by ${owner.name}` : 'released'}` : '');
    }

    const after = (await store.listOwnership(tx, zone)).filter((r) => r.dnsName === dnsName && r.recordType === recordType);
    const generation = await store.bumpGeneration(tx, zone);
    await store.notifyZoneChanged(tx, zone, generation);
    await audit(tx, zone, summary, after);
    return { zone, rows: after, generation, summary };
  });
}
