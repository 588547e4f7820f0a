/**
 * Protobuf messages of AdminService from core's views: tenants, TSIG and OVH keys, OVH drafts,
 * ownership, plan summaries, TXT-registry adoptions, journal entries, protected names (convert.ts
 * holds the plans, endpoints and zones every service shares).
 */
import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { TargetState } from '../dns/types.js';
import type { ProtectedName } from '../store/protected-names.js';
import type { OwnershipRow } from '../store/index.js';
import type { JournalView, PlanSummary } from '../core/admin/index.js';
import type { Adoption as CoreAdoption, ImportInput, ImportResult } from '../core/admin/import-txt.js';
import type { Slicer } from '../core/slices.js';
import type { Tenant as CoreTenant } from '../core/tenants/tenants.js';
import type { TsigKeyView } from '../core/credentials/tsig-admin.js';
import type { TrustView } from '../core/credentials/workload-trust.js';
import { TrustedSubjectSchema, type TrustedSubject as PbTrustedSubject } from '../gen/dnsplane/v1/workload_pb.js';
import type { IssuedOvhKey, OvhKeyView } from '../core/credentials/ovh-admin.js';
import type { StagedWrite } from '../core/ovh-api/staging.js';
import { visibilityToPb } from './visibility.js';
import { policyToPb, targetStateToPb } from './convert.js';
import { withListEncoded } from './binary-write.js';
import { OvhOperationSchema } from '../gen/dnsplane/v1/zone_pb.js';
import {
  AdoptionOutcome,
  JournalEntrySchema,
  PlanApprovalSchema,
  OwnershipEntrySchema,
  PlanSummarySchema,
  ImportTxtRegistryResponseSchema,
  ProtectedNameSchema,
  RegistryAdoptionSchema,
  TenantSchema,
  TsigKeySchema,
  IssuedOvhKeySchema,
  OvhDraftSchema,
  OvhKeySchema,
  type JournalEntry as PbJournalEntry,
  type OwnershipEntry as PbOwnershipEntry,
  type PlanSummary as PbPlanSummary,
  type ProtectedName as PbProtectedName,
  type ImportTxtRegistryRequest as PbImportTxtRegistryRequest,
  type ImportTxtRegistryResponse as PbImportTxtRegistryResponse,
  type RegistryAdoption as PbRegistryAdoption,
  type Tenant as PbTenant,
  type TsigKey as PbTsigKey,
  type IssuedOvhKey as PbIssuedOvhKey,
  type OvhDraft as PbOvhDraft,
  type OvhKey as PbOvhKey,
} from '../gen/dnsplane/v1/admin_pb.js';

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
    ...(t.previousTokenValidUntil && t.previousTokenValidUntil.getTime() > Date.now()
      ? { previousTokenValidUntil: timestampFromDate(t.previousTokenValidUntil) }
      : {}),
    ...(t.withdrawAfterMs !== undefined ? { withdrawAfter: durationFromMs(t.withdrawAfterMs) } : {}),
    ...(t.lastSeenAt ? { lastSeenAt: timestampFromDate(t.lastSeenAt) } : {}),
    lastSeenFrom: t.lastSeenFrom ?? '',
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

export function trustToPb(t: TrustView): PbTrustedSubject {
  return create(TrustedSubjectSchema, {
    tenant: t.tenant,
    issuer: t.issuer,
    subject: t.subject,
    audience: t.audience,
    keys: t.keys,
    createdAt: timestampFromDate(t.createdAt),
    ...(t.lastSeenAt ? { lastSeenAt: timestampFromDate(t.lastSeenAt) } : {}),
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
    createdAt: timestampFromDate(new Date(r.createdMs)),
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

/** What an ImportTxtRegistry request asks of core. */
export function importInputOf(req: PbImportTxtRegistryRequest): ImportInput {
  return { zone: req.zone, owners: { ...req.owners }, txtPrefix: req.txtPrefix, txtSuffix: req.txtSuffix, dryRun: req.dryRun };
}

/**
 * The ImportTxtRegistry answer; a zone of 50,000 records has 50,000 adoptions, made in slices: encoded
 * to bytes when Connect answers in the binary format (api/binary-write.ts), else converted (Connect
 * then writes the JSON).
 */
export async function importResultToPb(r: ImportResult, binary: boolean, slicer: Slicer): Promise<PbImportTxtRegistryResponse> {
  const head = create(ImportTxtRegistryResponseSchema, { zone: r.zone, dryRun: r.dryRun, generation: r.generation });
  if (!binary) return Object.assign(head, { adoptions: await slicer.map(r.adoptions, adoptionToPb), unreadable: r.unreadable });
  const { adoptions, unreadable } = ImportTxtRegistryResponseSchema.field;
  await withListEncoded(ImportTxtRegistryResponseSchema, head, adoptions, r.adoptions, adoptionToPb, slicer);
  return withListEncoded(ImportTxtRegistryResponseSchema, head, unreadable, r.unreadable, (name) => name, slicer);
}

export function journalEntryToPb(j: JournalView): PbJournalEntry {
  const op = (o: JournalView['operations'][number]) =>
    create(OvhOperationSchema, { method: o.method, path: o.path, body: o.body, status: o.status, error: o.error });
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
    clientAddress: j.from,
    account: j.account,
  });
}

export function protectedNameToPb(p: ProtectedName): PbProtectedName {
  return create(ProtectedNameSchema, { zone: p.zone, name: p.name, suffix: p.suffix, createdAt: timestampFromDate(p.createdAt), createdBy: p.createdBy ?? '' });
}
