/**
 * Protobuf messages <-> core types. Handlers translate here so core never sees Connect types.
 */
import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { needsApproval } from '../core/guard.js';
import { toUnicode } from '../dns/names.js';
import type { ProtectedName } from '../store/protected-names.js';
import { ProtectedNameSchema, type ProtectedName as PbProtectedName } from '../gen/dnsplane/v1/admin_pb.js';
import type { Change, ChangeAction as CoreAction, Conflict, Endpoint, Policy as CorePolicy, TargetState } from '../dns/types.js';
import { describeOperation, operationsByRecordSet, operationsOfChange } from '../ovh/ops.js';
import type { CallRecord, ZoneApplyResult } from '../core/apply/index.js';
import { driftState } from '../core/drift.js';
import type { PlanInput, RawEndpoint, StoredPlan, ZonePlan } from '../core/plan.js';
import type { OwnershipRow, ZoneWithCount } from '../store/index.js';
import type { JournalView, PlanSummary } from '../core/admin.js';
import type { Adoption as CoreAdoption } from '../core/import-txt.js';
import type { Tenant as CoreTenant } from '../core/tenants.js';
import type { TsigKeyView } from '../core/credentials/tsig-admin.js';
import type { IssuedOvhKey, OvhKeyView } from '../core/credentials/ovh-admin.js';
import type { StagedWrite } from '../core/staging.js';
import { Slicer } from '../core/slices.js';
import { visibilityToPb } from './visibility.js';
import {
  AdoptionOutcome,
  JournalEntrySchema,
  PlanApprovalSchema,
  OwnershipEntrySchema,
  PlanSummarySchema,
  RegistryAdoptionSchema,
  TenantSchema,
  TsigKeySchema,
  IssuedOvhKeySchema,
  OvhDraftSchema,
  OvhKeySchema,
  type JournalEntry as PbJournalEntry,
  type OwnershipEntry as PbOwnershipEntry,
  type PlanSummary as PbPlanSummary,
  type RegistryAdoption as PbRegistryAdoption,
  type Tenant as PbTenant,
  type TsigKey as PbTsigKey,
  type IssuedOvhKey as PbIssuedOvhKey,
  type OvhDraft as PbOvhDraft,
  type OvhKey as PbOvhKey,
} from '../gen/dnsplane/v1/admin_pb.js';
import { InvalidInputError } from '../dns/errors.js';
import { refreshPath } from '../ovh/types.js';
import {
  ApplyStatus,
  ChangeAction,
  ChangeThresholdSchema,
  ConflictSchema,
  EndpointSchema,
  OvhOperationSchema,
  PlanSchema,
  PlannedChangeSchema,
  Policy,
  TargetStateSchema,
  TargetStatus,
  ZoneApplyResultSchema,
  ZonePlanSchema,
  ZoneSchema,
  type Endpoint as PbEndpoint,
  type OvhOperation as PbOvhOperation,
  type PlanRequest,
  type Plan as PbPlan,
  type ZonePlan as PbZonePlan,
  type ZoneApplyResult as PbZoneApplyResult,
  type Zone as PbZone,
} from '../gen/dnsplane/v1/zone_pb.js';

export function policyFromPb(p: Policy): CorePolicy {
  switch (p) {
    case Policy.UNSPECIFIED:
    case Policy.SYNC:
      return 'sync';
    case Policy.UPSERT_ONLY:
      return 'upsert-only';
    case Policy.CREATE_ONLY:
      return 'create-only';
    default:
      throw new InvalidInputError('policy', `unknown policy ${String(p)}; use POLICY_SYNC, POLICY_UPSERT_ONLY or POLICY_CREATE_ONLY`);
  }
}

export function policyToPb(p: CorePolicy): Policy {
  return p === 'sync' ? Policy.SYNC : p === 'upsert-only' ? Policy.UPSERT_ONLY : Policy.CREATE_ONLY;
}

function rawEndpoint(e: PbEndpoint): RawEndpoint {
  return {
    dnsName: e.dnsName,
    recordType: e.recordType,
    targets: [...e.targets],
    ttl: e.ttl,
    setIdentifier: e.setIdentifier || undefined,
    labels: Object.keys(e.labels).length ? { ...e.labels } : undefined,
  };
}

/** Why a desired state needs its policy spelled out (an unset policy once meant SYNC, which deletes). */
export const POLICY_REQUIRED =
  'is required with a desired state: POLICY_SYNC makes your record sets in the covered zones equal the desired state and DELETES the ones not listed; POLICY_UPSERT_ONLY creates and updates and never deletes; POLICY_CREATE_ONLY only creates names that do not exist yet';

export function planInputFromPb(req: PlanRequest, field = ''): PlanInput {
  const policy = policyFromPb(req.policy);
  switch (req.input.case) {
    case 'desired':
      if (req.policy === Policy.UNSPECIFIED) throw new InvalidInputError(`${field}policy`, POLICY_REQUIRED);
      return { kind: 'desired', policy, zones: [...req.input.value.zones], endpoints: req.input.value.endpoints.map(rawEndpoint), ...(req.force ? { force: true } : {}) };
    case 'changes': {
      const c = req.input.value;
      return {
        kind: 'changes',
        policy,
        changes: { create: c.create.map(rawEndpoint), updateOld: c.updateOld.map(rawEndpoint), updateNew: c.updateNew.map(rawEndpoint), delete: c.delete.map(rawEndpoint) },
        ...(req.force ? { force: true } : {}),
      };
    }
    default:
      throw new InvalidInputError(`${field}input`, 'one of "desired" or "changes" is required');
  }
}

/** The label that shows an internationalized name in Unicode; dns_name stays the ASCII (punycode) form. */
export const UNICODE_NAME_LABEL = 'unicode_name';

export function endpointToPb(e: Endpoint): PbEndpoint {
  const unicode = toUnicode(e.dnsName);
  return create(EndpointSchema, {
    dnsName: e.dnsName,
    recordType: e.recordType,
    targets: e.targets,
    ttl: e.ttl,
    setIdentifier: e.setIdentifier ?? '',
    labels: unicode !== e.dnsName ? { ...e.labels, [UNICODE_NAME_LABEL]: unicode } : (e.labels ?? {}),
    ...(e.targetStates?.length ? { targetStates: e.targetStates.map(targetStateToPb) } : {}),
  });
}

const TARGET_STATUS = { unchecked: TargetStatus.UNCHECKED, healthy: TargetStatus.HEALTHY, failing: TargetStatus.FAILING, withdrawn: TargetStatus.WITHDRAWN } as const;

function targetStateToPb(t: TargetState) {
  return create(TargetStateSchema, { target: t.target, status: TARGET_STATUS[t.status], reason: t.reason, detail: t.detail, ...(t.since ? { since: timestampFromDate(t.since) } : {}) });
}

export function actionToPb(a: CoreAction): ChangeAction {
  return a === 'create' ? ChangeAction.CREATE : a === 'update' ? ChangeAction.UPDATE : ChangeAction.DELETE;
}

function changeToPb(c: Change, operations: readonly PbOvhOperation[] = []) {
  return create(PlannedChangeSchema, {
    action: actionToPb(c.action),
    before: c.before ? endpointToPb(c.before) : undefined,
    after: c.after ? endpointToPb(c.after) : undefined,
    warnings: c.warnings ?? [],
    operations: [...operations],
  });
}

function conflictToPb(c: Conflict) {
  return create(ConflictSchema, { action: actionToPb(c.action), endpoint: endpointToPb(c.endpoint), owner: c.owner, reason: c.reason });
}

function callToPb(c: CallRecord) {
  return create(OvhOperationSchema, { method: c.method, path: c.path, body: c.body, status: c.status, error: c.error ?? '' });
}

/**
 * A plan on the wire. Linear in the plan: each operation's wire form is built once and shown both
 * under its change and in the zone's list; the changes are converted in slices that yield to the
 * event loop (a 5,000-change plan is tens of thousands of messages).
 */
export async function planToPb(p: StoredPlan, slicer: Slicer = new Slicer()): Promise<PbPlan> {
  const zones: PbZonePlan[] = [];
  for (const z of p.zones) {
    const wire = await slicer.map(z.operations, (op) => create(OvhOperationSchema, describeOperation(op)));
    const byRecordSet = operationsByRecordSet(z.zone, z.operations, (_op, i) => wire[i]!);
    const head = await zonePlanHeadPb(z, slicer);
    head.changes = await slicer.map(z.changes, (c) => changeToPb(c, operationsOfChange(c, byRecordSet)));
    head.operations = z.operations.length > 0 ? [...wire, create(OvhOperationSchema, refreshOperation(z.zone))] : [];
    zones.push(head);
  }
  return create(PlanSchema, { ...planHeadPb(p), zones });
}

/** A plan on the wire without its zones (api/plan-json.ts writes them itself). */
export function planHeadPb(p: StoredPlan): PbPlan {
  return create(PlanSchema, {
    id: p.id,
    tenant: p.tenant,
    digest: p.digest,
    policy: policyToPb(p.policy),
    createdAt: timestampFromDate(p.createdAt),
    expiresAt: timestampFromDate(p.expiresAt),
  });
}

/** A zone plan on the wire without its changes and operations (planToPb and api/plan-json.ts add them). */
export async function zonePlanHeadPb(z: ZonePlan, slicer: Slicer): Promise<PbZonePlan> {
  return create(ZonePlanSchema, {
    zone: z.zone,
    baseGeneration: z.baseGeneration,
    conflicts: await slicer.map(z.conflicts, conflictToPb),
    threshold: z.threshold ? create(ChangeThresholdSchema, { ...z.threshold, protectedNames: z.threshold.protectedNames ?? [], wouldRefuse: needsApproval(z.threshold) }) : undefined,
  });
}

/** The zone's refresh, which ends the operations of a zone plan that has any. */
export function refreshOperation(zone: string): { method: string; path: string; body: string } {
  return { method: 'POST', path: refreshPath(zone), body: '' };
}

const statusToPb: Record<ZoneApplyResult['status'], ApplyStatus> = {
  applied: ApplyStatus.APPLIED,
  no_changes: ApplyStatus.NO_CHANGES,
  stale: ApplyStatus.STALE,
  failed: ApplyStatus.FAILED,
  dry_run: ApplyStatus.DRY_RUN,
  refused: ApplyStatus.REFUSED,
};

export function zoneApplyResultToPb(r: ZoneApplyResult): PbZoneApplyResult {
  return zoneApplyResultMessage(r, r.calls.map(callToPb), r.changes.map((c) => changeToPb(c)));
}

/** zoneApplyResultToPb with its long lists (thousands of calls and changes) converted in slices. */
export async function zoneApplyResultToPbSliced(r: ZoneApplyResult, slicer: Slicer): Promise<PbZoneApplyResult> {
  return zoneApplyResultMessage(r, await slicer.map(r.calls, callToPb, 256), await slicer.map(r.changes, (c) => changeToPb(c), 128));
}

function zoneApplyResultMessage(r: ZoneApplyResult, calls: PbZoneApplyResult['calls'], changes: PbZoneApplyResult['changes']): PbZoneApplyResult {
  return create(ZoneApplyResultSchema, {
    zone: r.zone,
    status: statusToPb[r.status],
    generation: r.generation,
    calls,
    changes,
    conflicts: r.conflicts.map(conflictToPb),
    error: r.error?.message ?? '',
    batches: (r.batches ?? []).map((b) => ({ index: b.index, operations: b.operations, generation: b.generation, journalId: b.journalId ?? '' })),
    journalId: r.status === 'applied' ? (r.journalId ?? '') : '',
  });
}

export function zoneToPb(z: ZoneWithCount): PbZone {
  const unicode = toUnicode(z.name);
  return create(ZoneSchema, {
    name: z.name,
    unicodeName: unicode !== z.name ? unicode : '',
    generation: z.generation,
    lastSync: z.lastSync ? timestampFromDate(z.lastSync) : undefined,
    recordCount: z.recordCount,
    state: z.state,
    drift: {
      state: driftState(z.drift),
      lastCheck: z.drift.checkedAt ? timestampFromDate(z.drift.checkedAt) : undefined,
      lastFound: z.drift.foundAt ? timestampFromDate(z.drift.foundAt) : undefined,
      added: z.drift.added,
      removed: z.drift.removed,
      updated: z.drift.updated,
    },
    inFlightApplies: z.inFlight,
  });
}

// --- AdminService ---

export function tenantToPb(t: CoreTenant): PbTenant {
  return create(TenantSchema, {
    name: t.name,
    scopes: t.scopes,
    zones: t.zones,
    suffixes: t.suffixes,
    disabled: t.disabled,
    createdAt: timestampFromDate(t.createdAt),
    tokenRotatedAt: timestampFromDate(t.tokenRotatedAt),
    ...(t.maxChangePercent !== null ? { maxChangePercent: t.maxChangePercent } : {}),
    ...(t.previousTokenValidUntil && t.previousTokenValidUntil.getTime() > Date.now() ? { previousTokenValidUntil: timestampFromDate(t.previousTokenValidUntil) } : {}),
    ...(t.withdrawAfterMs !== undefined ? { withdrawAfter: durationFromMs(t.withdrawAfterMs) } : {}),
    ...(t.lastSeenAt ? { lastSeenAt: timestampFromDate(t.lastSeenAt) } : {}),
  });
}

export function tsigKeyToPb(k: TsigKeyView): PbTsigKey {
  return create(TsigKeySchema, {
    name: k.name,
    tenant: k.tenant,
    algorithm: k.algorithm,
    acmeOnly: k.acmeOnly,
    createdAt: timestampFromDate(k.createdAt),
    ...(k.rotatedAt ? { rotatedAt: timestampFromDate(k.rotatedAt) } : {}),
    ...(k.lastUsedAt ? { lastUsedAt: timestampFromDate(k.lastUsedAt) } : {}),
    ...(k.oldSecretValidUntil ? { oldSecretValidUntil: timestampFromDate(k.oldSecretValidUntil) } : {}),
  });
}

export function ovhKeyToPb(k: OvhKeyView): PbOvhKey {
  return create(OvhKeySchema, {
    applicationKey: k.applicationKey,
    tenant: k.tenant,
    createdAt: timestampFromDate(k.createdAt),
    ...(k.rotatedAt ? { rotatedAt: timestampFromDate(k.rotatedAt) } : {}),
    ...(k.lastUsedAt ? { lastUsedAt: timestampFromDate(k.lastUsedAt) } : {}),
    ...(k.expiresAt ? { expiresAt: timestampFromDate(k.expiresAt) } : {}),
    ...(k.oldSecretValidUntil ? { oldSecretValidUntil: timestampFromDate(k.oldSecretValidUntil) } : {}),
  });
}

/** A key just issued, with the endpoint tools use (empty when the server does not know it). */
export function issuedOvhKeyToPb(i: IssuedOvhKey, endpoint: string | undefined): PbIssuedOvhKey {
  return create(IssuedOvhKeySchema, { key: ovhKeyToPb(i.key), applicationSecret: i.applicationSecret, consumerKey: i.consumerKey, endpoint: endpoint ?? '' });
}

export function ovhDraftToPb(d: StagedWrite): PbOvhDraft {
  return create(OvhDraftSchema, {
    tenant: d.tenant,
    zone: d.zone,
    recordId: d.recordId,
    action: d.action,
    ...(d.record ? { subDomain: d.record.subDomain, fieldType: d.record.fieldType, target: d.record.target, ttl: d.record.ttl } : {}),
    stagedAt: timestampFromDate(d.stagedAt),
    expiresAt: timestampFromDate(d.expiresAt),
  });
}

export function ownershipEntryToPb(r: OwnershipRow & { targetState?: TargetState }): PbOwnershipEntry {
  return create(OwnershipEntrySchema, {
    ...(r.targetState ? { targetState: targetStateToPb(r.targetState) } : {}),
    zone: r.zone,
    dnsName: r.dnsName,
    recordType: r.recordType,
    target: r.target,
    tenant: r.tenantName,
    shared: r.shared,
    createdAt: timestampFromDate(r.createdAt),
    healthCheck: r.healthCheck ?? '',
  });
}

export function planSummaryToPb(s: PlanSummary): PbPlanSummary {
  return create(PlanSummarySchema, {
    id: s.id,
    tenant: s.tenant,
    requestedBy: s.requestedBy,
    status: s.status,
    policy: policyToPb(s.policy),
    digest: s.digest,
    createdAt: timestampFromDate(s.createdAt),
    expiresAt: timestampFromDate(s.expiresAt),
    appliedAt: s.appliedAt ? timestampFromDate(s.appliedAt) : undefined,
    zones: s.zones,
    changeCount: s.changeCount,
    conflictCount: s.conflictCount,
    operationCount: s.operationCount,
    approvedBy: s.approval?.approvedBy ?? '',
    approvedAt: s.approval ? timestampFromDate(s.approval.approvedAt) : undefined,
    approvedDigest: s.approval?.digest ?? '',
  });
}

const adoptionOutcomeToPb: Record<CoreAdoption['outcome'], AdoptionOutcome> = {
  adopted: AdoptionOutcome.ADOPTED,
  already_owned: AdoptionOutcome.ALREADY_OWNED,
  conflict: AdoptionOutcome.CONFLICT,
  unmapped_owner: AdoptionOutcome.UNMAPPED_OWNER,
  not_allowed: AdoptionOutcome.NOT_ALLOWED,
};

export function adoptionToPb(a: CoreAdoption): PbRegistryAdoption {
  return create(RegistryAdoptionSchema, {
    dnsName: a.dnsName,
    recordType: a.recordType,
    registryName: a.registryName,
    ownerId: a.ownerId,
    tenant: a.tenant,
    outcome: adoptionOutcomeToPb[a.outcome],
    reason: a.reason,
  });
}

export function journalEntryToPb(j: JournalView): PbJournalEntry {
  const op = (o: JournalView['operations'][number]) => create(OvhOperationSchema, { method: o.method, path: o.path, body: o.body, status: o.status, error: o.error });
  return create(JournalEntrySchema, {
    id: j.id,
    zone: j.zone,
    tenant: j.tenant,
    planId: j.planId,
    kind: j.kind,
    state: j.state,
    startedAt: timestampFromDate(j.startedAt),
    finishedAt: j.finishedAt ? timestampFromDate(j.finishedAt) : undefined,
    operations: j.operations.map(op),
    calls: j.calls.map(op),
    error: j.error,
    summary: j.summary,
    visibility: j.visibility && visibilityToPb(j.visibility),
    approval: j.approval && create(PlanApprovalSchema, { ...j.approval, approvedAt: timestampFromDate(j.approval.approvedAt) }),
    reverts: j.reverts ?? '',
  });
}

export function protectedNameToPb(p: ProtectedName): PbProtectedName {
  return create(ProtectedNameSchema, { zone: p.zone, name: p.name, suffix: p.suffix, createdAt: timestampFromDate(p.createdAt), createdBy: p.createdBy ?? '' });
}
