/**
 * What a Plan is asked and how the ask is read: PlanInput (a desired state, a change set, a DNS
 * UPDATE, a refresh of the served OVH API's draft) and its parts as callers send them, and
 * routeInput, which normalizes every endpoint, finds its zone (longest suffix), checks the tenant's
 * grant and adjusts it to what OVH stores: the RoutedInput the zone plans (plan.ts) and the apply
 * path work on. Linear in the request; long work in slices.
 */
import { InvalidInputError } from '../../dns/errors.js';
import { normalizeEndpoint, validateEndpointSet } from '../../dns/endpoint.js';
import { normalizeName, zoneFinder } from '../../dns/names.js';
import { recordSetKey, type Change, type ChangeSet, type Endpoint, type Policy, type RecordType } from '../../dns/types.js';
import type { Steps } from '../../dns/steps.js';
import { adjustEndpointForOvh } from '../../ovh/mapping.js';
import type * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { PermissionDeniedError } from '../errors.js';
import { checkNameAllowed, mayUseZone, type Tenant } from '../tenants/tenants.js';
import { workloadOrigin } from '../tenants/caller.js';
import { managedZoneNames } from '../zones/zones.js';
import { checkSharedLabel } from '../ownership/ownership.js';
import { checkHealthCheckLabel } from '../../dns/health-check.js';
import { Slicer } from '../slices.js';
import type { ZoneIndex } from '../reads/sets-index.js';
import { dnsUpdateChanges, type DnsUpdate, type UpdateContext } from './dns-update-plan.js';
import type { WithdrawPlanner } from '../ownership/withdraw-planner.js';

/** An endpoint as callers send it, before normalization; a change set of them (the shape dns/ gives both). */
import type { RawChangeSet, RawEndpoint } from '../../dns/txt-family.js';

export type { RawChangeSet, RawEndpoint };

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
      /** Which door asked, in words (the journal's summary): a served OVH API import. */
      origin?: string;
    }
  /** revertOf: the journal row this change set reverts (core/apply/revert.ts), named in its apply's journal rows. */
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
  /** The draft's change set, read under the lock, against the index the plan reads the zone from. */
  changes(q: store.Queryable, index: ZoneIndex): Promise<RawChangeSet>;
  recorded(q: store.Queryable, sent: DraftSent): Promise<void>;
}

/** What a refresh's batch left: the records under the names it touched (OVH ids), the OVH ids it deleted, whether batches follow. */
export interface DraftSent {
  records: OvhRecordLike[];
  gone: string[];
  more: boolean;
}

type OvhRecordLike = store.RecordRow & { zone: string };

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
  /** A stored revert (core/apply/revert.ts): the journal row it reverts, named in its journal rows. */
  revertOf?: string;
  /** The stored plan being applied (its journal rows name it: GetApply's plan_id); absent for an inline request. */
  planId?: string;
  /** The client address the request came from (core/apply/index.ts ApplySource.from): its journal rows say it. */
  from?: string;
};

/**
 * Normalizes and validates the input, checking every name against the tenant's grant. Linear in the
 * input; yields to the event loop between slices of endpoints (`slicer`).
 */
export async function routeInput(ctx: CoreContext, tenant: Tenant, input: PlanInput, slicer: Slicer = new Slicer()): Promise<RoutedInput> {
  // The journal names the workload (its subject and issuer) that asked, when a workload token authenticated it.
  const origin = ('origin' in input ? input.origin : undefined) ?? workloadOrigin(tenant);
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
      ...(origin ? { origin } : {}),
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
      ...(origin ? { origin } : {}),
    };
  }

  if (input.kind === 'draft') {
    if (!zoneNames.includes(input.zone)) throw new InvalidInputError('zone', `"${input.zone}" is not a zone dnsplane manages`);
    if (!mayUseZone(tenant, input.zone)) throw new PermissionDeniedError('zone', `zone "${input.zone}" is not one of tenant "${tenant.name}"'s zones`);
    return { kind: 'draft', policy: 'sync', byZone: new Map([[input.zone, input.draft]]), warnings, ...(origin ? { origin } : {}) };
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
    ...(origin ? { origin } : {}),
  };
}
