/**
 * Plan: pure computation over the cache. The zone plans of a routed input (input.ts routeInput):
 * checks ownership, diffs against the cached records and builds the exact OVH operations Apply
 * would send. Never touches OVH (beyond the first sync of a zone never read).
 */
import { InvalidInputError } from '../../dns/errors.js';
import { diffChangeSetSteps, diffDesiredSteps } from '../../dns/diff.js';
import { recordSetKey, type Change, type Conflict, type Policy, type RecordSetKey } from '../../dns/types.js';
import { recordsToEndpointsSteps } from '../../ovh/mapping.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import type { Tenant } from '../tenants/tenants.js';
import { buildPlanOperations, ownerViewOf } from '../ownership/ownership.js';
import { Slicer } from '../slices.js';
import { readCacheOf, type ReadCache } from '../reads/read-cache.js';
import { readZoneBase, type ZoneBase } from '../reads/zone-base.js';
import { ownedSets, zoneThreshold, type ChangeThreshold } from './guard.js';
import { zoneMemoryAt, type ZoneMemory } from '../reads/zone-memory.js';
import { baseIndexOf } from '../reads/base-index.js';
import type { ZoneIndex } from '../reads/sets-index.js';
import { withdrawnOperations, withWithdrawn } from '../ownership/withdrawn-view.js';
import { inSyncScope, routeInput, type DraftPlanner, type PlanInput, type RoutedInput } from './input.js';

export interface ZonePlan {
  zone: string;
  baseGeneration: bigint;
  changes: Change[];
  conflicts: Conflict[];
  operations: OvhOperation[];
  /** The change threshold's counts for this tenant (core/plan/guard.ts); not part of the digest. */
  threshold?: ChangeThreshold;
}

export interface StoredPlan {
  id: string;
  tenant: string;
  tenantId: string;
  policy: Policy;
  zones: ZonePlan[];
  digest: string;
  createdAt: Date;
  expiresAt: Date;
  status: string;
  input: PlanInput;
}

/**
 * The plan of one zone, from the cache as `q` sees it (a Plan's committed snapshot, a staged OVH-API
 * write's judgement). The zone is taken from the read cache when it holds the generation `q` sees —
 * what a zone holds at a generation never changes — and what is read here is kept there for the next
 * Plan or Records view; the plan reads only the record sets at the names the request touches, from
 * the base's index (core/reads/base-index.ts, made once per generation, in slices), so that a one-record
 * Plan costs the same in a zone of 50,000 records as in one of 1,000. Under the zone lock, Apply
 * plans with computeLockedZonePlan instead, on the apply path's own view.
 */
export async function computeZonePlan(
  ctx: CoreContext,
  q: store.Queryable,
  tenant: Tenant,
  zone: string,
  input: RoutedInput,
  slicer: Slicer = new Slicer(),
  reads?: ReadCache,
): Promise<ZonePlan> {
  const base = await baseAsSeen(q, zone, slicer, reads);
  const withdrawals = async (touched: ReadonlySet<string>) => base.withdrawals.filter((w) => touched.has(w.dnsName));
  return planAtNames(ctx, q, tenant, zone, input, base.generation, await baseIndexOf(base, zone, slicer), withdrawals, slicer);
}

/**
 * The plan of the whole zone as `q` sees it, every record set read: the reference the plans at names
 * are held equal to (test/core/apply/locked-plan.test.ts).
 */
export async function computeWholeZonePlan(
  ctx: CoreContext,
  q: store.Queryable,
  tenant: Tenant,
  zone: string,
  input: RoutedInput,
  slicer: Slicer = new Slicer(),
): Promise<ZonePlan> {
  const base = await baseAsSeen(q, zone, slicer);
  const index = await baseIndexOf(base, zone, slicer);
  return planOver(ctx, q, tenant, zone, input, { ...base, index, owned: ownedSets(base.ownership, tenant.id) }, slicer);
}

async function baseAsSeen(q: store.Queryable, zone: string, slicer: Slicer, reads?: ReadCache): Promise<ZoneBase> {
  const z = await store.getZone(q, zone);
  if (!z) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
  let base = reads?.baseIfBuilt(zone, z.generation);
  if (!base) {
    base = await readZoneBase(q, zone, slicer); // in pages, as Records reads it
    reads?.keep(zone, base);
  }
  return base;
}

/**
 * The plan of one zone under its lock (core/apply/prepare.ts), against the zone's view in memory at
 * the generation the lock's transaction `tx` sees (core/reads/zone-memory.ts: read whole from `tx` only
 * when the view is behind). The plan is the one computeWholeZonePlan makes: the diff, the ownership it
 * judges and the operations it builds only ever look at the sets at the names the request touches.
 */
export async function computeLockedZonePlan(
  ctx: CoreContext,
  tx: store.Queryable,
  tenant: Tenant,
  zone: string,
  input: RoutedInput,
  slicer: Slicer = new Slicer(),
): Promise<{ plan: ZonePlan; memory: ZoneMemory }> {
  const z = await store.getZone(tx, zone);
  if (!z) throw new NotFoundError('zone', zone, `zone "${zone}" is not managed by dnsplane`);
  const cache = readCacheOf(ctx);
  const memory = await zoneMemoryAt(ctx.pool, tx, zone, z.generation, {
    baseAt: (g) => cache.baseIfBuilt(zone, g) ?? cache.adopting(zone, g),
    keep: (at, view, bytes, drop, base) => cache.keepView(at, view, bytes, drop, base),
  });
  // The withdrawn targets at the names touched (a small table: read whole, under the lock).
  const withdrawals = async (touched: ReadonlySet<string>) => (await store.listWithdrawals(tx, zone)).filter((w) => touched.has(w.dnsName));
  return { plan: await planAtNames(ctx, tx, tenant, zone, input, z.generation, memory, withdrawals, slicer), memory };
}

/**
 * The plan over the record sets at the names the request touches, read from an index of the zone at
 * `generation`: for a change set or a DNS UPDATE the names it names, for a desired state those and the
 * names of every set the tenant owns (a sync deletes the ones it no longer wants); `withdrawalsAt`, the
 * withdrawn targets at those names.
 */
async function planAtNames(
  ctx: CoreContext,
  q: store.Queryable,
  tenant: Tenant,
  zone: string,
  input: RoutedInput,
  generation: bigint,
  index: ZoneIndex,
  withdrawalsAt: (touched: ReadonlySet<string>) => Promise<store.WithdrawalRow[]>,
  slicer: Slicer,
): Promise<ZonePlan> {
  const draftNames = input.kind === 'draft' ? await input.byZone.get(zone)!.names(q) : [];
  const touched = touchedNamesOf(zone, input, () => index.tenantNames(tenant.id), draftNames);
  const { records, ownership } = index.slice(touched);
  const { endpoints, recordsByKey } = await slicer.run(recordsToEndpointsSteps(records, zone));
  const withdrawals = await withdrawalsAt(touched);
  return planOver(
    ctx,
    q,
    tenant,
    zone,
    input,
    { generation, records, recordsByKey, endpoints, ownership, withdrawals, index, owned: index.ownedSets(tenant.id) },
    slicer,
  );
}

/** The names (normalized, every type) whose record sets a request's plan of `zone` reads. */
function touchedNamesOf(zone: string, input: RoutedInput, tenantNames: () => string[], draftNames: Iterable<string>): Set<string> {
  const names = new Set<string>();
  if (input.kind === 'desired') {
    for (const e of input.byZone.get(zone) ?? []) names.add(e.dnsName);
    // A sync deletes the tenant's sets absent from the desired state: every name it owns a set at.
    for (const n of tenantNames()) names.add(n);
  } else if (input.kind === 'withdraw') {
    for (const n of input.byZone.get(zone)!.names()) names.add(n);
  } else if (input.kind === 'draft') {
    // A refresh reads its draft under the lock (DraftPlanner.names): the names of its staged records,
    // and every name the tenant owns a set at (a staged update or delete names a record of its own).
    for (const n of draftNames) names.add(n);
    for (const n of tenantNames()) names.add(n);
  } else if (input.kind === 'changes') {
    const c = input.byZone.get(zone);
    for (const e of c ? [...c.create, ...c.updateOld, ...c.updateNew, ...c.delete] : []) names.add(e.dnsName);
  } else {
    for (const n of input.byZone.get(zone)!.names()) names.add(n);
  }
  return names;
}

/** The zone's record sets a plan reads (all of them, or those at the names it touches), and the count of the tenant's own. */
type PlanSource = Pick<ZoneBase, 'generation' | 'records' | 'endpoints' | 'ownership' | 'withdrawals'> & {
  /** The records of each set read (a base's, or a slice's own mapping). */
  recordsByKey: ReadonlyMap<RecordSetKey, readonly OvhRecord[]>;
  /** The index they were read from (a draft reads the tenant's records from it). */
  index: ZoneIndex;
  owned: number;
};

/** Diffs the request against `source`, builds the operations and judges the threshold. */
async function planOver(
  ctx: CoreContext,
  q: store.Queryable,
  tenant: Tenant,
  zone: string,
  input: RoutedInput,
  source: PlanSource,
  slicer: Slicer,
): Promise<ZonePlan> {
  if (input.kind === 'withdraw') {
    const { changes, operations } = await input.byZone.get(zone)!.plan(q, source, tenant.id);
    const threshold = await zoneThreshold(ctx, q, tenant, zone, source.owned, changes, input.force ?? false);
    return { zone, baseGeneration: source.generation, changes, conflicts: [], operations, threshold };
  }
  // Withdrawn targets are present for their owners (core/ownership/withdrawn-view.ts): nothing to plan while desired.
  const { recordsByKey, endpoints: current, ownership } = withWithdrawn(zone, source, source.withdrawals);
  const ownerOf = ownerViewOf(tenant, zone, ownership, recordsByKey);
  await slicer.check();
  // A draft's change set is read now (under the lock for an apply), then routed as any change set is.
  const routed: Exclude<RoutedInput, { kind: 'draft' | 'withdraw' }> =
    input.kind === 'draft' ? await routeDraft(ctx, tenant, zone, input.byZone.get(zone)!, q, source.index, slicer) : input;

  const { changes, conflicts } =
    routed.kind === 'own-changes'
      ? { ...(await slicer.run(routed.byZone.get(zone)!.changes({ zone, tenant, records: source.records, current, ownerOf }))), conflicts: [] }
      : routed.kind === 'desired'
        ? await slicer.run(
            diffDesiredSteps({
              current,
              desired: routed.byZone.get(zone) ?? [],
              validated: true, // routeInput did, over the whole request
              policy: routed.policy,
              ownerOf,
              scope: (name, type) => routed.scope === undefined || inSyncScope(routed.scope, name, type),
            }),
          )
        : await slicer.run(diffChangeSetSteps(current, routed.byZone.get(zone) ?? { create: [], updateOld: [], updateNew: [], delete: [] }, ownerOf));
  await slicer.check();

  for (const c of changes) {
    const e = c.after ?? c.before!;
    const w = routed.warnings.get(recordSetKey(e.dnsName, e.recordType));
    if (w) c.warnings = [...(c.warnings ?? []), ...w];
  }
  const built = buildPlanOperations(zone, changes, recordsByKey, { cnameRelative: ctx.settings.cnameRelativeZones?.includes(zone) ?? false });
  const operations = source.withdrawals.length > 0 ? withdrawnOperations(zone, built) : built;
  const threshold = await zoneThreshold(ctx, q, tenant, zone, source.owned, changes, input.force ?? false);
  return { zone, baseGeneration: source.generation, changes, conflicts, operations, threshold };
}

async function routeDraft(
  ctx: CoreContext,
  tenant: Tenant,
  zone: string,
  draft: DraftPlanner,
  q: store.Queryable,
  index: ZoneIndex,
  slicer: Slicer,
): Promise<Exclude<RoutedInput, { kind: 'draft' | 'withdraw' }>> {
  const routed = await routeInput(ctx, tenant, { kind: 'changes', changes: await draft.changes(q, index), policy: 'sync' }, slicer);
  if (routed.kind !== 'changes') throw new Error('a draft routed as something else than changes');
  for (const other of routed.byZone.keys()) {
    if (other !== zone)
      throw new InvalidInputError('subDomain', `a staged write of zone ${zone} is in zone ${other}, which dnsplane manages apart: write it there`);
  }
  return routed;
}
