/**
 * The plan use cases of AdminService: a plan on a tenant's behalf, the plan listing and one plan
 * with its summary, a revert of an apply, the approval over the change threshold. Each refuses a
 * caller without the admin scope first (tenants/gate.ts).
 */
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { limitOf, requireAdmin, tenantNamed, tenantNames } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { approvePlan as runApprove } from '../plan/approvals.js';
import { planRevert as runRevert, type Revert } from '../apply/revert.js';
import type { StoredPlan } from '../plan/plan.js';
import type { PlanInput } from '../plan/input.js';
import { getPlanWithRow, plan } from '../plan/stored.js';

export async function planAs(ctx: CoreContext, actor: Tenant, tenantName: string, input: PlanInput): Promise<StoredPlan> {
  requireAdmin(actor);
  const tenant = await tenantNamed(ctx, tenantName, 'tenant');
  return plan(ctx, tenant, input, actor);
}

export interface PlanSummary {
  id: string;
  tenant: string;
  requestedBy: string;
  status: store.PlanStatus;
  policy: store.Plan['policy'];
  digest: string;
  createdAt: Date;
  expiresAt: Date;
  appliedAt: Date | null;
  zones: string[];
  changeCount: number;
  conflictCount: number;
  /** OVH operations, one refresh per zone with changes included. */
  operationCount: number;
  /** Approved over the change threshold by this admin (core/plan/approvals.ts), when, and the digest approved; null: not approved. */
  approval: { approvedBy: string; approvedAt: Date; digest: string } | null;
}

function summarize(p: store.PlanHead, names: Map<string, string>): PlanSummary {
  return {
    id: p.id,
    tenant: names.get(p.tenantId) ?? '',
    requestedBy: names.get(p.requestedBy) ?? '',
    status: p.status,
    policy: p.policy,
    digest: p.digest,
    createdAt: p.createdAt,
    expiresAt: p.expiresAt,
    appliedAt: p.appliedAt,
    zones: p.zones,
    changeCount: p.changeCount,
    conflictCount: p.conflictCount,
    operationCount: p.operationCount,
    approval: p.approval ? { ...p.approval, approvedBy: names.get(p.approval.approvedBy) ?? '' } : null,
  };
}

const PLAN_STATUSES: readonly store.PlanStatus[] = ['pending', 'applied', 'stale', 'expired', 'failed', 'superseded'];

export async function listPlans(ctx: CoreContext, actor: Tenant, q: { tenant: string; status: string; limit: number }): Promise<PlanSummary[]> {
  requireAdmin(actor);
  const limit = limitOf(q.limit);
  if (q.status !== '' && !(PLAN_STATUSES as readonly string[]).includes(q.status)) {
    throw new InvalidInputError('status', `unknown status "${q.status}" (known: ${PLAN_STATUSES.join(', ')})`);
  }
  const tenantId = q.tenant === '' ? undefined : (await tenantNamed(ctx, q.tenant, 'tenant')).id;
  const rows = await store.listPlans(ctx.pool, {
    limit,
    ...(tenantId === undefined ? {} : { tenantId }),
    ...(q.status === '' ? {} : { status: q.status as store.PlanStatus }),
  });
  const names = await tenantNames(ctx);
  return rows.map((p) => summarize(p, names));
}

export async function getPlanAsAdmin(ctx: CoreContext, actor: Tenant, id: string): Promise<{ plan: StoredPlan; summary: PlanSummary }> {
  requireAdmin(actor);
  if (id === '') throw new InvalidInputError('id', 'a plan id is required');
  const { plan: p, row } = await getPlanWithRow(ctx, actor, id);
  return { plan: p, summary: summarize(row, await tenantNames(ctx)) };
}

/** Undo of an apply (core/apply/revert.ts): a stored plan that puts back what journal row `journalId` changed. */
export async function planRevert(ctx: CoreContext, actor: Tenant, journalId: string): Promise<Revert> {
  requireAdmin(actor);
  return runRevert(ctx, actor, journalId);
}

/** The two-person rule (core/plan/approvals.ts): `actor` approves plan `id` over the change threshold. */
export async function approvePlan(ctx: CoreContext, actor: Tenant, id: string): Promise<PlanSummary> {
  requireAdmin(actor);
  return summarize(await runApprove(ctx, actor, id), await tenantNames(ctx));
}
