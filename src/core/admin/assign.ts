/**
 * The admin's side of ownership (DESIGN.md "Ownership"): list who owns what (with the record sets
 * nobody owns), and assign or release a record set or, in a shared set, some of its targets. The
 * rules themselves are core/ownership/ownership.ts. An assignment changes what Records serves (the owner label),
 * so it runs under the zone lock and bumps the zone generation, like a change of records.
 */
import type { TargetState } from '../../dns/types.js';
import { withdrawnTargetStates } from '../ownership/withdrawn-view.js';
import {
  canonicalTarget,
  findZone,
  MAX_TARGETS,
  normalizeName,
  parseRecordType,
  recordSetKey,
  SHAREABLE_TYPES,
  sortedUnique,
  subDomainOf,
  type Endpoint,
} from '../../dns/index.js';
import { InvalidInputError } from '../../dns/errors.js';
import { ovhRecordKey } from '../../ovh/mapping.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { canonicalOf, visibleRecordSetsSteps } from '../ownership/ownership.js';
import { readCacheOf } from '../reads/read-cache.js';
import { readZoneBase } from '../reads/zone-base.js';
import { Slicer } from '../slices.js';
import { checkNameAllowed, type Tenant } from '../tenants/tenants.js';
import { ensureSynced, toOvhRecord } from '../zones/zones.js';

export interface OwnershipListing {
  /** With targetState for a withdrawn target (core/withdrawals/withdrawals.ts; an exclusive set's row: its first withdrawn target). */
  rows: Array<store.OwnershipRow & { targetState?: TargetState }>;
  /** Record sets (or, for a shared set, targets) that exist in OVH without an owner. */
  unowned: Endpoint[];
}

/** Ownership rows of the zones named (all when none), optionally of one tenant, with the unowned sets. */
export async function listOwnership(ctx: CoreContext, opts: { zones: string[]; tenantId?: string; includeUnowned: boolean }): Promise<OwnershipListing> {
  const rows: OwnershipListing['rows'] = [];
  const unowned: Endpoint[] = [];
  for (const zone of opts.zones) {
    const zoneRows = await store.listOwnership(ctx.pool, zone);
    const states = withdrawnTargetStates(await store.listWithdrawals(ctx.pool, zone));
    for (const r of zoneRows) {
      if (opts.tenantId !== undefined && r.tenantId !== opts.tenantId) continue;
      // An exclusive set's row (target '') shows its withdrawn target (the first, if several: Records shows each).
      const state =
        r.target !== ''
          ? states.get(`${r.dnsName} ${r.recordType} ${r.target}`)
          : [...states].find(([k]) => k.startsWith(`${r.dnsName} ${r.recordType} `))?.[1];
      rows.push(state ? { ...r, targetState: state } : r);
    }
    if (!opts.includeUnowned) continue;
    const z = await store.getZone(ctx.pool, zone);
    if (z?.state !== 'synced') continue; // never synced: nothing is known of it yet
    // The zone as the read cache holds it at that generation (else read now), seen in slices.
    const slicer = new Slicer();
    const base = (await readCacheOf(ctx).baseExactlyAt(zone, z.generation)) ?? (await readZoneBase(ctx.pool, zone, slicer));
    for (const e of await slicer.run(visibleRecordSetsSteps('', zone, base.endpoints, base.ownership, base.recordsByKey, true))) {
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
    if (!owner) throw new NotFoundError('tenant', input.tenant, `tenant "${input.tenant}" does not exist`);
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
    // The set's own rows and the records at its name (every type: the set's key says which are its), never the zone's.
    const rows = await store.listOwnershipForSets(tx, zone, [{ dnsName, recordType }]);
    const records = (await store.listRecordsAtSubDomains(tx, zone, [subDomainOf(dnsName, zone)])).map((r) => toOvhRecord(zone, r));
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
      if (chosen.length === 0 && !exclusive)
        throw new InvalidInputError('targets', `${dnsName} ${recordType} holds no target without an owner; name the targets to assign`);
      for (const t of chosen) {
        if (owner) perTarget.set(t, owner.id);
        else perTarget.delete(t);
      }
      await store.removeOwner(tx, set);
      for (const [target, tenantId] of [...perTarget].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        await store.setOwner(tx, { ...set, target, tenantId, shared: true });
      }
      summary = `${dnsName} ${recordType} shared${chosen.length > 0 ? `; ${chosen.join(', ')} ${owner ? `owned by ${owner.name}` : 'released'}` : ''}`;
    }

    const after = await store.listOwnershipForSets(tx, zone, [{ dnsName, recordType }]);
    const generation = await store.bumpGeneration(tx, zone);
    // Named, so that every replica's read cache and zone view re-read this set, not the zone (core/reads/heard-changes.ts).
    await store.notifyZoneChanged(tx, zone, generation, { ids: [], sets: [{ dnsName, recordType }] });
    await audit(tx, zone, summary, after);
    return { zone, rows: after, generation, summary };
  });
}
