/**
 * AdminService handlers: protobuf in, core/admin/, protobuf out. Every handler checks the admin
 * scope first (admin()), before it reads its request, so a non-admin learns nothing from the request
 * it sent; core/admin/ checks it again.
 */
import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import * as admin from '../core/admin/index.js';
import type { KeyAdmin } from '../core/credentials/admin.js';
import * as ovhKeys from '../core/credentials/ovh-admin.js';
import * as tsigKeys from '../core/credentials/tsig-admin.js';
import * as trust from '../core/credentials/workload-trust.js';
import * as protection from '../core/plan/protected-names.js';
import { listDrafts } from '../core/ovh-api/staging.js';
import { Slicer } from '../core/slices.js';
import type { CoreContext } from '../core/context.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { InvalidInputError } from '../dns/errors.js';
import {
  ApprovePlanResponseSchema,
  PlanRevertResponseSchema,
  RevertConflictSchema,
  AssignOwnershipResponseSchema,
  CreateTenantResponseSchema,
  CreateTsigKeyResponseSchema,
  CreateOvhKeyResponseSchema,
  DeleteOvhKeyResponseSchema,
  ListOvhKeysResponseSchema,
  ListOvhDraftsResponseSchema,
  RotateOvhKeyResponseSchema,
  DeleteTsigKeyResponseSchema,
  DisableTenantResponseSchema,
  GetPlanResponseSchema,
  InvalidateZoneResponseSchema,
  ExportZoneResponseSchema,
  ListJournalResponseSchema,
  ListOwnershipResponseSchema,
  ListPlansResponseSchema,
  ListTenantsResponseSchema,
  ListTsigKeysResponseSchema,
  ParseDesiredStateResponseSchema,
  PlanAsResponseSchema,
  RotateTenantTokenResponseSchema,
  RotateTsigKeyResponseSchema,
  SetTenantMaxChangePercentResponseSchema,
  SetTenantWithdrawAfterResponseSchema,
  ProtectNamesResponseSchema,
  UnprotectNamesResponseSchema,
  ListProtectedNamesResponseSchema,
  type AdminService,
} from '../gen/dnsplane/v1/admin_pb.js';
import { ListTrustedSubjectsResponseSchema, TrustSubjectResponseSchema, UntrustSubjectResponseSchema } from '../gen/dnsplane/v1/workload_pb.js';
import { tenantOf } from './auth.js';
import { lifecycleHandlers } from './admin-lifecycle.js';
import { planRequestFromDocument } from './desired-document.js';
import { endpointToPb, planInputFromPb, planToPb } from './convert.js';
import {
  importInputOf,
  importResultToPb,
  journalEntryToPb,
  ownershipEntryToPb,
  planSummaryToPb,
  tenantToPb,
  tsigKeyToPb,
  issuedOvhKeyToPb,
  ovhKeyToPb,
  ovhDraftToPb,
  protectedNameToPb,
  trustToPb,
} from './convert-admin.js';
import { accountHandlers } from './admin-accounts.js';
import { answersInBinary } from './records-binary.js';

/** The calling tenant, refused unless it has the admin scope. */
function adminOf(hc: HandlerContext): Tenant {
  const actor = tenantOf(hc);
  admin.requireAdmin(actor);
  return actor;
}

export function adminService(ctx: CoreContext): ServiceImpl<typeof AdminService> {
  // Keys (core/credentials/admin.ts): this replica forgets the tenant's cached keys at once.
  const tsigKeyAdmin = (actor: Tenant): KeyAdmin => ({ pool: ctx.pool, secrets: ctx.secrets, actor, keys: ctx.tsigKeys, log: ctx.log });
  const ovhKeyAdmin = (actor: Tenant): KeyAdmin => ({ pool: ctx.pool, secrets: ctx.secrets, actor, keys: ctx.ovhKeys, log: ctx.log });
  return {
    async planAs(req, hc) {
      const actor = adminOf(hc);
      if (!req.request) throw new InvalidInputError('request', 'the plan request is required');
      const p = await admin.planAs(ctx, actor, req.tenant, planInputFromPb(req.request, 'request.'));
      return create(PlanAsResponseSchema, { plan: await planToPb(p) });
    },

    async listPlans(req, hc) {
      const actor = adminOf(hc);
      const plans = await admin.listPlans(ctx, actor, { tenant: req.tenant, status: req.status, limit: req.limit });
      return create(ListPlansResponseSchema, { plans: plans.map(planSummaryToPb) });
    },

    async getPlan(req, hc) {
      const actor = adminOf(hc);
      const { plan, summary } = await admin.getPlanAsAdmin(ctx, actor, req.id);
      return create(GetPlanResponseSchema, { plan: await planToPb(plan), summary: planSummaryToPb(summary) });
    },

    async approvePlan(req, hc) {
      const actor = adminOf(hc);
      return create(ApprovePlanResponseSchema, { summary: planSummaryToPb(await admin.approvePlan(ctx, actor, req.id)) });
    },

    async planRevert(req, hc) {
      const actor = adminOf(hc);
      const r = await admin.planRevert(ctx, actor, req.journalId);
      return create(PlanRevertResponseSchema, {
        plan: await planToPb(r.plan),
        reverts: r.reverts,
        conflicts: r.conflicts.map((c) => create(RevertConflictSchema, { ...c, at: timestampFromDate(c.at) })),
      });
    },

    async createTenant(req, hc) {
      const actor = adminOf(hc);
      const { tenant, token } = await admin.createTenant(ctx, actor, {
        name: req.name,
        zones: [...req.zones],
        suffixes: [...req.suffixes],
        scopes: [...req.scopes],
      });
      return create(CreateTenantResponseSchema, { tenant: tenantToPb(tenant), token });
    },

    async listTenants(_req, hc) {
      const actor = adminOf(hc);
      return create(ListTenantsResponseSchema, { tenants: (await admin.listTenants(ctx, actor)).map(tenantToPb) });
    },

    async rotateTenantToken(req, hc) {
      const actor = adminOf(hc);
      const { tenant, token } = await admin.rotateTenantToken(ctx, actor, req.name, req.graceSeconds * 1000);
      return create(RotateTenantTokenResponseSchema, { tenant: tenantToPb(tenant), token });
    },

    async disableTenant(req, hc) {
      const actor = adminOf(hc);
      const tenant = await admin.disableTenant(ctx, actor, req.name, req.enable);
      return create(DisableTenantResponseSchema, { tenant: tenantToPb(tenant) });
    },

    async setTenantMaxChangePercent(req, hc) {
      const actor = adminOf(hc);
      const tenant = await admin.setTenantMaxChangePercent(ctx, actor, req.name, req.maxChangePercent ?? null);
      return create(SetTenantMaxChangePercentResponseSchema, { tenant: tenantToPb(tenant) });
    },

    async setTenantWithdrawAfter(req, hc) {
      const actor = adminOf(hc);
      const d = req.withdrawAfter;
      if (d && (d.nanos !== 0 || d.seconds < 0n)) throw new InvalidInputError('withdrawAfter', 'must be whole seconds from 1s to 30 days (or unset: off)');
      const tenant = await admin.setTenantWithdrawAfter(ctx, actor, req.name, d ? Number(d.seconds) * 1000 : null);
      return create(SetTenantWithdrawAfterResponseSchema, { tenant: tenantToPb(tenant) });
    },

    async listOwnership(req, hc) {
      const actor = adminOf(hc);
      const { rows, unowned } = await admin.listOwnership(ctx, actor, { zone: req.zone, tenant: req.tenant, includeUnowned: req.includeUnowned });
      // A zone's ownership may be 20,000 rows: converted in slices (Connect then encodes the answer).
      const slicer = new Slicer();
      return create(ListOwnershipResponseSchema, {
        entries: await slicer.map(rows, ownershipEntryToPb, 256),
        unowned: await slicer.map(unowned, endpointToPb, 256),
      });
    },

    async assignOwnership(req, hc) {
      const actor = adminOf(hc);
      const r = await admin.assignOwnership(ctx, actor, {
        dnsName: req.dnsName,
        recordType: req.recordType,
        tenant: req.tenant,
        shared: req.shared,
        targets: [...req.targets],
      });
      return create(AssignOwnershipResponseSchema, { zone: r.zone, entries: r.rows.map(ownershipEntryToPb), generation: r.generation });
    },

    async importTxtRegistry(req, hc) {
      const actor = adminOf(hc);
      // Connect's unary JSON and binary requests are mostly answered beside Connect (api/import-txt-route.ts).
      const r = await admin.importTxtRegistry(ctx, actor, importInputOf(req));
      return importResultToPb(r, answersInBinary(hc), new Slicer());
    },

    async invalidateZone(req, hc) {
      const actor = adminOf(hc);
      const r = await admin.invalidateZone(ctx, actor, req.zone);
      return create(InvalidateZoneResponseSchema, { zone: r.zone, generation: r.generation, recordCount: r.recordCount });
    },

    async exportZone(req, hc) {
      const actor = adminOf(hc);
      const r = await admin.exportZoneFile(ctx, actor, req.zone, {
        owners: req.includeOwners,
        ...(req.atGeneration !== undefined ? { atGeneration: req.atGeneration } : {}),
        ...(req.atTime ? { atTime: timestampDate(req.atTime) } : {}),
      });
      return create(ExportZoneResponseSchema, { zone: r.zone, generation: r.generation, recordCount: r.recordCount, zoneFile: r.text });
    },

    // Workload identity (core/credentials/workload-trust.ts): this replica forgets the tenant's verified tokens at once.
    async trustSubject(req, hc) {
      const actor = adminOf(hc);
      const r = await trust.trustSubject(
        { pool: ctx.pool, actor, tokens: ctx.tokens },
        { tenant: req.tenant, issuer: req.issuer, subject: req.subject, audience: req.audience, jwksUrl: req.jwksUrl, jwks: req.jwks, caPem: req.caPem },
      );
      return create(TrustSubjectResponseSchema, { trusted: trustToPb(r.trust), keysChanged: r.sourceChanged });
    },

    async untrustSubject(req, hc) {
      const actor = adminOf(hc);
      const r = await trust.untrustSubject({ pool: ctx.pool, actor, tokens: ctx.tokens }, { tenant: req.tenant, issuer: req.issuer, subject: req.subject });
      return create(UntrustSubjectResponseSchema, { untrusted: trustToPb(r) });
    },

    async listTrustedSubjects(req, hc) {
      const actor = adminOf(hc);
      return create(ListTrustedSubjectsResponseSchema, { subjects: (await trust.listTrust({ pool: ctx.pool, actor }, req.tenant)).map(trustToPb) });
    },

    async listJournal(req, hc) {
      const actor = adminOf(hc);
      const entries = await admin.listJournal(ctx, actor, { zone: req.zone, tenant: req.tenant, limit: req.limit, beforeId: req.beforeId, state: req.state });
      return create(ListJournalResponseSchema, { entries: await new Slicer().map(entries, journalEntryToPb, 16) });
    },

    async createTsigKey(req, hc) {
      const actor = adminOf(hc);
      const { key, secret } = await tsigKeys.createTsigKey(tsigKeyAdmin(actor), {
        tenant: req.tenant,
        algorithm: req.algorithm,
        name: req.name,
        acmeOnly: req.acmeOnly,
      });
      return create(CreateTsigKeyResponseSchema, { key: tsigKeyToPb(key), secret: secret.toString('base64') });
    },

    async listTsigKeys(req, hc) {
      const actor = adminOf(hc);
      return create(ListTsigKeysResponseSchema, { keys: (await tsigKeys.listTsigKeys(tsigKeyAdmin(actor), req.tenant)).map(tsigKeyToPb) });
    },

    async rotateTsigKey(req, hc) {
      const actor = adminOf(hc);
      const { key, secret } = await tsigKeys.rotateTsigKey(tsigKeyAdmin(actor), req.name, req.graceSeconds * 1000);
      return create(RotateTsigKeyResponseSchema, { key: tsigKeyToPb(key), secret: secret.toString('base64') });
    },

    async deleteTsigKey(req, hc) {
      const actor = adminOf(hc);
      return create(DeleteTsigKeyResponseSchema, { key: tsigKeyToPb(await tsigKeys.deleteTsigKey(tsigKeyAdmin(actor), req.name)) });
    },

    async createOvhKey(req, hc) {
      const actor = adminOf(hc);
      const issued = await ovhKeys.createOvhKey(ovhKeyAdmin(actor), { tenant: req.tenant, expiresInMs: Number(req.expiresInSeconds) * 1000 });
      return create(CreateOvhKeyResponseSchema, { issued: issuedOvhKeyToPb(issued, ctx.settings.ovhApi?.advertise) });
    },

    async listOvhKeys(req, hc) {
      const actor = adminOf(hc);
      return create(ListOvhKeysResponseSchema, { keys: (await ovhKeys.listOvhKeys(ovhKeyAdmin(actor), req.tenant)).map(ovhKeyToPb) });
    },

    async rotateOvhKey(req, hc) {
      const actor = adminOf(hc);
      const issued = await ovhKeys.rotateOvhKey(ovhKeyAdmin(actor), req.applicationKey, req.graceSeconds * 1000);
      return create(RotateOvhKeyResponseSchema, { issued: issuedOvhKeyToPb(issued, ctx.settings.ovhApi?.advertise) });
    },

    async deleteOvhKey(req, hc) {
      const actor = adminOf(hc);
      return create(DeleteOvhKeyResponseSchema, { key: ovhKeyToPb(await ovhKeys.deleteOvhKey(ovhKeyAdmin(actor), req.applicationKey)) });
    },

    async listOvhDrafts(req, hc) {
      const actor = adminOf(hc);
      return create(ListOvhDraftsResponseSchema, { drafts: (await listDrafts(ctx, actor, req.tenant)).map(ovhDraftToPb) });
    },

    async parseDesiredState(req, hc) {
      adminOf(hc);
      return create(ParseDesiredStateResponseSchema, { request: await planRequestFromDocument(req.document, 'document') });
    },

    // Protected names (core/plan/protected-names.ts): the two-person rule below the change threshold.
    async protectNames(req, hc) {
      const actor = adminOf(hc);
      const names = await protection.protectNames(ctx.pool, actor, req.zone, req.names, req.suffix);
      ctx.log.info({ zone: req.zone, names: req.names, suffix: req.suffix, by: actor.name }, 'names protected');
      return create(ProtectNamesResponseSchema, { names: names.map(protectedNameToPb) });
    },

    async unprotectNames(req, hc) {
      const actor = adminOf(hc);
      const names = await protection.unprotectNames(ctx.pool, actor, req.zone, req.names);
      ctx.log.info({ zone: req.zone, names: req.names, by: actor.name }, 'names no longer protected');
      return create(UnprotectNamesResponseSchema, { names: names.map(protectedNameToPb) });
    },

    async listProtectedNames(req, hc) {
      adminOf(hc);
      return create(ListProtectedNamesResponseSchema, { names: (await protection.listProtectedNames(ctx.pool, req.zone)).map(protectedNameToPb) });
    },

    // OVH accounts (issue 44): api/admin-accounts.ts.
    ...accountHandlers(ctx, adminOf),
    // A cluster's life (issue 46): api/admin-lifecycle.ts.
    ...lifecycleHandlers(ctx, adminOf),
  };
}
