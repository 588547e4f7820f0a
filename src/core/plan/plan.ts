/**
 * Plan: pure computation over the cache. Normalizes the input, routes each endpoint to its zone,
 * checks the tenant's grant and ownership, diffs against the cached records and builds the exact
 * OVH operations Apply would send. Never touches OVH (beyond the first sync of a zone never read).
 */
import { InvalidInputError } from '../../dns/errors.js';
import { diffChangeSetSteps, diffDesiredSteps } from '../../dns/diff.js';
import { normalizeEndpoint, validateEndpointSet } from '../../dns/endpoint.js';
import { normalizeName, zoneFinder } from '../../dns/names.js';
import { recordSetKey, type Change, type ChangeSet, type Conflict, type Endpoint, type Policy, type RecordType } from '../../dns/types.js';
import type { Steps } from '../../dns/steps.js';
import { adjustEndpointForOvh, recordsToEndpointsSteps } from '../../ovh/mapping.js';
import type { OvhOperation } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError, PermissionDeniedError } from '../errors.js';
import { checkNameAllowed, mayUseZone, type Tenant } from '../tenants/tenants.js';
import { managedZoneNames } from '../zones/zones.js';
import { buildPlanOperations, checkSharedLabel, ownerViewOf } from '../ownership/ownership.js';
import { checkHealthCheckLabel } from '../../dns/health-check.js';
import { Slicer } from '../slices.js';
import type { ReadCache } from '../reads/read-cache.js';
import { readZoneBase, type ZoneBase } from '../reads/zone-base.js';
import { ownedSets, zoneThreshold, type ChangeThreshold } from './guard.js';
import { zoneMemoryAt, type ZoneMemory } from '../reads/zone-memory.js';
import { baseIndexOf } from '../reads/base-index.js';
import type { SetsIndex } from '../reads/sets-index.js';
import { dnsUpdateChanges, type DnsUpdate, type UpdateContext } from './dns-update-plan.js';
import type { WithdrawPlanner } from '../ownership/withdraw-planner.js';
import { withdrawnOperations, withWithdrawn } from '../ownership/withdrawn-view.js';

/** An endpoint as callers send it, before normalization. */
export interface RawEndpoint {
  dnsName: string;
  recordType: string;
  targets: string[];
  ttl: number;
  setIdentifier?: string;
  labels?: Record<string, string>;
}

export interface RawChangeSet {
  create: RawEndpoint[];
  updateOld: RawEndpoint[];
  updateNew: RawEndpoint[];
  delete: RawEndpoint[];
}

/**
 * Which of the tenant's record sets a SYNC desired state covers (deletes when absent from it). Absent:
 * every set of the zones in scope. Plain data: stored with a plan, re-read by Apply. NSM publishing
 * (src/nsm/) uses it so that publishing one domain never deletes the tenant's other records.
 */
export interface SyncScope {
  /** Only names strictly below this name… */
  under: string;
  /** …and exactly this many labels below it (any depth when absent)… */
  depth?: number;
  /** …and of these types (any type when absent). */
  types?: RecordType[];
}

export function inSyncScope(scope: SyncScope, dnsName: string, recordType: RecordType): boolean {
  if (!dnsName.endsWith(`.${scope.under}`)) return false;
  const below = dnsName.slice(0, -(scope.under.length + 1)).split('.').length;
  return (scope.depth === undefined || below === scope.depth) && (scope.types === undefined || scope.types.includes(recordType));
}

export type PlanInput =
  | {
      kind: 'desired';
      zones: string[];
      endpoints: RawEndpoint[];
      policy: Policy;
      scope?: SyncScope;
      /** Any conflict refuses the whole zone, under the zone lock, with nothing sent (NSM publishing). */
      allOrNothing?: boolean;
      /** Apply even over the tenant's change threshold (core/plan/guard.ts). */
      force?: boolean;
    }
  /** revertOf: the journal row this change set reverts (core/plan/revert.ts), named in its apply's journal rows. */
  | { kind: 'changes'; changes: RawChangeSet; policy: Policy; force?: boolean; origin?: string; revertOf?: string }
  /** A DNS UPDATE of one zone (core/plan/dns-update-plan.ts): planned under the zone lock, all or nothing. */
  | { kind: 'update'; update: DnsUpdate; policy: 'sync'; origin?: string }
  /** A tenant's staged writes of one zone through the served OVH API (core/ovh-api/staging.ts): planned under the zone lock. Never stored. */
  | { kind: 'draft'; zone: string; draft: DraftPlanner; policy: 'sync'; origin?: string };

/**
 * A refresh of the served OVH API's draft, as the apply plans and records it (core/ovh-api/staging.ts
 * implements it): its change set read under the zone lock, in the lock's transaction, against the
 * zone as the group's earlier members left it; and, once its operations are recorded in that
 * transaction, what it keeps of them (the ids the records it touched are served under, its draft rows
 * published) — undone with the group when the refresh fails.
 */
export interface DraftPlanner {
  /** The names (normalized) the draft's staged records are at, read under the lock: what its plan reads besides the tenant's own sets. */
  names(q: store.Queryable): Promise<Iterable<string>>;
  changes(q: store.Queryable, base: ZoneBase): Promise<RawChangeSet>;
  recorded(q: store.Queryable, sent: DraftSent): Promise<void>;
}

/** What a refresh's batch left: the records under the names it touched (OVH ids), the OVH ids it deleted, whether batches follow. */
export interface DraftSent {
  records: OvhRecordLike[];
  gone: string[];
  more: boolean;
}

type OvhRecordLike = store.RecordRow & { zone: string };

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

/** Explicit request limits (DESIGN: "Limits on request size and list lengths are explicit"). */
export const MAX_ENDPOINTS = 5000;

/** A request that plans itself under the lock: the names it reads, and its changes from the zone as read there. */
export interface OwnChanges {
  names(): Iterable<string>;
  changes(view: UpdateContext): Steps<{ changes: Change[] }>;
}

/** The input normalized and split by zone: what computeZonePlan works on. */
export type RoutedInput = (
  | { kind: 'desired'; policy: Policy; byZone: Map<string, Endpoint[]>; scope?: SyncScope; allOrNothing?: boolean }
  | { kind: 'changes'; policy: Policy; byZone: Map<string, ChangeSet> }
  /**
   * A request that plans its own changes under the zone lock (a DNS UPDATE: its prerequisites and
   * update section, core/plan/dns-update-plan.ts): no conflicts; uncut, all or nothing (RFC 2136 §3.4).
   */
  | { kind: 'own-changes'; policy: 'sync'; byZone: Map<string, OwnChanges>; uncut: true }
  | { kind: 'draft'; policy: 'sync'; byZone: Map<string, DraftPlanner> }
  /** A withdraw or restore of targets (core/withdrawals/withdrawals.ts): planned under the zone lock, never stored; uncut (its rows recorded once, with its operations). */
  | { kind: 'withdraw'; policy: 'sync'; byZone: Map<string, WithdrawPlanner>; uncut: true }
) & {
  /** Per record set: what was adjusted to OVH's rules (a TTL under 60 raised to 60). */
  warnings: Map<string, string[]>;
  /** The request says force: the change threshold does not stop it. */
  force?: boolean;
  /**
   * Which door and which credential asked, in words, when it is not an API call of the tenant's own
   * (`DNS UPDATE signed by KEY.`, `OVH API refresh by application key AK`): the journal's summary.
   */
  origin?: string;
  /** A stored plan approved by a second admin (core/plan/approvals.ts ApprovalNote): named in its journal rows. */
  approval?: { planId: string; approvedBy: string; approvedAt: string; digest: string };
  /** A stored revert (core/plan/revert.ts): the journal row it reverts, named in its journal rows. */
  revertOf?: string;
  /** The stored plan being applied (its journal rows name it: GetApply's plan_id); absent for an inline request. */
  planId?: string;
};

/**
 * Normalizes and validates the input, checking every name against the tenant's grant. Linear in the
 * input; yields to the event loop between slices of endpoints (`slicer`).
 */
export async function routeInput(ctx: CoreContext, tenant: Tenant, input: PlanInput, slicer: Slicer = new Slicer()): Promise<RoutedInput> {
  const zoneNames = await managedZoneNames(ctx);
  const warnings = new Map<string, string[]>();
  const findZone = zoneFinder(zoneNames);
  const route = (raw: RawEndpoint, field: string): { zone: string; endpoint: Endpoint } => {
    if (typeof raw.dnsName !== 'string' || raw.dnsName.trim() === '') throw new InvalidInputError(`${field}.dnsName`, 'is required');
    const name = normalizeName(raw.dnsName, `${field}.dnsName`, { allowUnderscore: true, allowWildcard: true });
    const zone = findZone(name);
    if (!zone) throw new InvalidInputError(`${field}.dnsName`, `"${name}" is not in any zone dnsplane manages (${zoneNames.join(', ') || 'none'})`);
    checkNameAllowed(tenant, zone, name, `${field}.dnsName`);
    // What OVH would store (TTL 1-59 becomes 60), so that the next plan compares like with like.
    const adjusted = adjustEndpointForOvh(normalizeEndpoint(raw, field, { zone }));
    checkSharedLabel(adjusted.endpoint, field);
    checkHealthCheckLabel(adjusted.endpoint, field);
    if (adjusted.warnings.length) warnings.set(recordSetKey(adjusted.endpoint.dnsName, adjusted.endpoint.recordType), adjusted.warnings);
    return { zone, endpoint: adjusted.endpoint };
  };

  if (input.kind === 'desired') {
    if (input.endpoints.length > MAX_ENDPOINTS) throw new InvalidInputError('desired.endpoints', `at most ${MAX_ENDPOINTS} endpoints per request`);
    const byZone = new Map<string, Endpoint[]>();
    input.zones.forEach((z, i) => {
      const zone = normalizeName(z, `desired.zones[${i}]`);
      if (!zoneNames.includes(zone)) throw new InvalidInputError(`desired.zones[${i}]`, `"${zone}" is not a zone dnsplane manages`);
      if (!mayUseZone(tenant, zone)) throw new PermissionDeniedError(`desired.zones[${i}]`, `zone "${zone}" is not one of tenant "${tenant.name}"'s zones`);
      if (!byZone.has(zone)) byZone.set(zone, []);
    });
    const all = await slicer.map(input.endpoints, (raw, i) => {
      const { zone, endpoint } = route(raw, `desired.endpoints[${i}]`);
      const list = byZone.get(zone);
      if (list) list.push(endpoint);
      else byZone.set(zone, [endpoint]);
      return endpoint;
    });
    validateEndpointSet(all, 'desired.endpoints');
    const scope = input.scope && { ...input.scope, under: normalizeName(input.scope.under, 'desired.scope.under') };
    return {
      kind: 'desired',
      policy: input.policy,
      byZone,
      warnings,
      ...(scope ? { scope } : {}),
      ...(input.allOrNothing ? { allOrNothing: true } : {}),
      ...(input.force ? { force: true } : {}),
    };
  }

  if (input.kind === 'update') {
    const zone = input.update.zone;
    if (!zoneNames.includes(zone)) throw new InvalidInputError('update.zone', `"${zone}" is not a zone dnsplane manages`);
    if (!mayUseZone(tenant, zone)) throw new PermissionDeniedError('update.zone', `zone "${zone}" is not one of tenant "${tenant.name}"'s zones`);
    return {
      kind: 'own-changes',
      policy: 'sync',
      byZone: new Map([[zone, dnsUpdateChanges(input.update)]]),
      uncut: true,
      warnings,
      ...(input.origin ? { origin: input.origin } : {}),
    };
  }

  if (input.kind === 'draft') {
    if (!zoneNames.includes(input.zone)) throw new InvalidInputError('zone', `"${input.zone}" is not a zone dnsplane manages`);
    if (!mayUseZone(tenant, input.zone)) throw new PermissionDeniedError('zone', `zone "${input.zone}" is not one of tenant "${tenant.name}"'s zones`);
    return { kind: 'draft', policy: 'sync', byZone: new Map([[input.zone, input.draft]]), warnings, ...(input.origin ? { origin: input.origin } : {}) };
  }

  const c = input.changes;
  const total = c.create.length + c.updateOld.length + c.updateNew.length + c.delete.length;
  if (total > MAX_ENDPOINTS) throw new InvalidInputError('changes', `at most ${MAX_ENDPOINTS} endpoints per request`);
  if (c.updateOld.length !== c.updateNew.length) {
    throw new InvalidInputError('changes.updateOld', `must pair one to one with changes.updateNew (${c.updateOld.length} vs ${c.updateNew.length})`);
  }
  const byZone = new Map<string, ChangeSet>();
  const setFor = (zone: string) => {
    let s = byZone.get(zone);
    if (!s) byZone.set(zone, (s = { create: [], updateOld: [], updateNew: [], delete: [] }));
    return s;
  };
  await slicer.map(c.create, (raw, i) => {
    const r = route(raw, `changes.create[${i}]`);
    setFor(r.zone).create.push(r.endpoint);
  });
  await slicer.map(c.updateOld, (raw, i) => {
    const o = route(raw, `changes.updateOld[${i}]`);
    const n = route(c.updateNew[i]!, `changes.updateNew[${i}]`);
    if (o.endpoint.dnsName !== n.endpoint.dnsName || o.endpoint.recordType !== n.endpoint.recordType) {
      throw new InvalidInputError(`changes.updateNew[${i}]`, 'must have the same dnsName and recordType as changes.updateOld at the same index');
    }
    setFor(o.zone).updateOld.push(o.endpoint);
    setFor(o.zone).updateNew.push(n.endpoint);
  });
  await slicer.map(c.delete, (raw, i) => {
    const r = route(raw, `changes.delete[${i}]`);
    setFor(r.zone).delete.push(r.endpoint);
  });
  return {
    kind: 'changes',
    policy: input.policy,
    byZone,
    warnings,
    ...(input.force ? { force: true } : {}),
    ...(input.origin ? { origin: input.origin } : {}),
  };
}

/** Moved to ownership.ts (shared record sets); re-exported for callers of plan.ts. */
export { ownerViewOf } from '../ownership/ownership.js';

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
  return planOver(ctx, q, tenant, zone, input, { ...base, owned: ownedSets(base.ownership, tenant.id) }, slicer);
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
  const memory = await zoneMemoryAt(ctx.pool, tx, zone, z.generation);
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
  index: SetsIndex,
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
    { generation, records, recordsByKey, endpoints, ownership, withdrawals, owned: index.ownedSets(tenant.id) },
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
type PlanSource = Pick<ZoneBase, 'generation' | 'records' | 'recordsByKey' | 'endpoints' | 'ownership' | 'withdrawals'> & { owned: number };

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
    input.kind === 'draft' ? await routeDraft(ctx, tenant, zone, input.byZone.get(zone)!, q, source, slicer) : input;

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
  base: PlanSource,
  slicer: Slicer,
): Promise<Exclude<RoutedInput, { kind: 'draft' | 'withdraw' }>> {
  const routed = await routeInput(ctx, tenant, { kind: 'changes', changes: await draft.changes(q, base), policy: 'sync' }, slicer);
  if (routed.kind !== 'changes') throw new Error('a draft routed as something else than changes');
  for (const other of routed.byZone.keys()) {
    if (other !== zone)
      throw new InvalidInputError('subDomain', `a staged write of zone ${zone} is in zone ${other}, which dnsplane manages apart: write it there`);
  }
  return routed;
}
