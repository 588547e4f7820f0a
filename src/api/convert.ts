/**
 * Protobuf messages <-> core types for ZoneService (and the plans, endpoints and apply results the
 * other services share): plan requests in, plans, endpoints, apply results and zones out. Handlers
 * translate here so core never sees Connect types; AdminService's own views are in convert-admin.ts.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { needsApproval } from '../core/plan/guard.js';
import { toUnicode } from '../dns/names.js';
import type { Change, ChangeAction as CoreAction, Conflict, Endpoint, Policy as CorePolicy, TargetState } from '../dns/types.js';
import { describeOperation, operationsByRecordSet, operationsOfChange } from '../ovh/ops.js';
import type { CallRecord, ZoneApplyResult } from '../core/apply/index.js';
import { driftState } from '../core/drift/drift.js';
import type { StoredPlan, ZonePlan } from '../core/plan/plan.js';
import type { PlanInput, RawEndpoint } from '../core/plan/input.js';
import type { ZoneWithCount } from '../store/index.js';
import { Slicer } from '../core/slices.js';
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
      return {
        kind: 'desired',
        policy,
        zones: [...req.input.value.zones],
        endpoints: req.input.value.endpoints.map(rawEndpoint),
        ...(req.force ? { force: true } : {}),
      };
    case 'changes': {
      const c = req.input.value;
      return {
        kind: 'changes',
        policy,
        changes: {
          create: c.create.map(rawEndpoint),
          updateOld: c.updateOld.map(rawEndpoint),
          updateNew: c.updateNew.map(rawEndpoint),
          delete: c.delete.map(rawEndpoint),
        },
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

const TARGET_STATUS = {
  unchecked: TargetStatus.UNCHECKED,
  healthy: TargetStatus.HEALTHY,
  failing: TargetStatus.FAILING,
  withdrawn: TargetStatus.WITHDRAWN,
} as const;

export function targetStateToPb(t: TargetState) {
  return create(TargetStateSchema, {
    target: t.target,
    status: TARGET_STATUS[t.status],
    reason: t.reason,
    detail: t.detail,
    ...(t.since ? { since: timestampFromDate(t.since) } : {}),
  });
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
    threshold: z.threshold
      ? create(ChangeThresholdSchema, { ...z.threshold, protectedNames: z.threshold.protectedNames ?? [], wouldRefuse: needsApproval(z.threshold) })
      : undefined,
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
  return zoneApplyResultMessage(
    r,
    r.calls.map(callToPb),
    r.changes.map((c) => changeToPb(c)),
  );
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
