/**
 * The two-person rule: a stored plan that the change threshold (core/plan/guard.ts) refuses may be approved
 * by an admin who is not the one who asked for it (the plan's requested_by: the tenant itself for its
 * own Plan, the admin for a PlanAs); its tenant then applies it (Apply with plan_id) and the threshold
 * does not stop it. The approval is recorded on the plan (approver, when, the digest approved;
 * migrations/0018) and in the journal (an admin action, kind `approve-plan`), and the apply's journal
 * rows name it (Intent.approval).
 *
 * An approval is of one plan as it was judged: Apply's stale check (core/apply/prepare.ts: the plan
 * recomputed under the lock must be the stored one) refuses an approved plan whose record sets or
 * ownership changed exactly as it refuses any other, the plan is then stale for good, and a new plan
 * carries no approval. A change elsewhere in the zone leaves plan and approval valid.
 */
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import { auditAdminAction } from '../journal/audit.js';
import type { CoreContext } from '../context.js';
import { PermissionDeniedError, PlanNotApprovableError } from '../errors.js';
import { needsApproval } from './guard.js';
import type { StoredPlan } from './plan.js';
import type { RoutedInput } from './input.js';
import { changedSince, getPlanWithRow, staleWhy } from './stored.js';
import { isAdmin, type Tenant } from '../tenants/tenants.js';

/** What an apply of an approved plan carries into its journal rows (Intent.approval): the plan, the approver's name, when, the digest. */
export type ApprovalNote = NonNullable<RoutedInput['approval']>;

/**
 * Approves plan `id` as `actor`. Refusals, each naming the rule: PermissionDenied for a non-admin or
 * the admin who asked for the plan; PlanNotApprovable (FailedPrecondition) for a plan not pending,
 * expired, already approved, stale, or not over the threshold. Writes the approval and its journal
 * row in one transaction; the approval's statement is fenced on the same conditions (a plan applied
 * or approved meanwhile is refused, never approved twice).
 */
export async function approvePlan(ctx: CoreContext, actor: Tenant, id: string): Promise<store.PlanHead> {
  if (!isAdmin(actor)) throw new PermissionDeniedError('', `approving a plan needs the admin scope; tenant "${actor.name}" does not have it`);
  if (id === '') throw new InvalidInputError('id', 'a plan id is required');
  const { plan, row } = await getPlanWithRow(ctx, actor, id);
  const requester = row.requestedBy === row.tenantId ? plan.tenant : ((await store.getTenantById(ctx.pool, row.requestedBy))?.name ?? '');
  if (row.requestedBy === actor.id) {
    throw new PermissionDeniedError(
      'id',
      `two-person rule: plan "${id}" was asked for by "${actor.name}" itself; an admin other than the one who asked must approve it`,
    );
  }
  await checkApprovable(ctx, plan, row);
  const zone = plan.zones.length === 1 ? plan.zones[0]!.zone : null;
  const protectedNames = plan.zones.flatMap((z) => z.threshold?.protectedNames ?? []);
  const over = plan.zones.some((z) => z.threshold?.exceeded && !z.threshold.forced);
  const why = [over ? 'over the change threshold' : '', protectedNames.length > 0 ? `touching protected names ${protectedNames.join(', ')}` : '']
    .filter(Boolean)
    .join(' and ');
  const head = await store.withTransaction(ctx.pool, async (tx) => {
    const approved = await store.approvePlan(tx, { id, approvedBy: actor.id, digest: plan.digest });
    if (!approved) return undefined;
    await auditAdminAction(
      tx,
      zone,
      actor,
      'approve-plan',
      `plan ${id} of tenant "${plan.tenant}" (asked for by "${requester}") approved ${why} by ${actor.name}, digest ${plan.digest}`,
      {
        planId: id,
        tenant: plan.tenant,
        requestedBy: requester,
        approvedBy: actor.name,
        digest: plan.digest,
        zones: plan.zones.map((z) => z.zone),
        ...(protectedNames.length > 0 ? { protectedNames } : {}),
      },
    );
    return approved;
  });
  if (!head) {
    // Applied, expired or approved between the checks above and the statement: say which.
    const now = await store.getPlan(ctx.pool, id);
    throw new PlanNotApprovableError(
      now?.approval
        ? `plan "${id}" was approved meanwhile; nothing to do`
        : `plan "${id}" is ${now?.status ?? 'gone'}; only a pending, unexpired plan can be approved`,
    );
  }
  ctx.log.info({ plan: id, tenant: plan.tenant, requestedBy: requester, by: actor.name, digest: plan.digest }, 'plan approved over the change threshold');
  return head;
}

/** The refusals that need no write: the plan must be pending, unexpired, unapproved, fresh and over the threshold. */
async function checkApprovable(ctx: CoreContext, plan: StoredPlan, row: store.Plan): Promise<void> {
  const id = plan.id;
  if (row.status !== 'pending') throw new PlanNotApprovableError(`plan "${id}" is ${row.status}; only a pending plan can be approved`);
  if (row.expiresAt.getTime() <= Date.now())
    throw new PlanNotApprovableError(`plan "${id}" expired at ${row.expiresAt.toISOString()}; make a new plan and have it approved`);
  if (row.approval) {
    const by = (await store.getTenantById(ctx.pool, row.approval.approvedBy))?.name ?? '';
    throw new PlanNotApprovableError(`plan "${id}" is already approved (by "${by}" at ${row.approval.approvedAt.toISOString()})`);
  }
  // Stale already (what it touches changed): it could not be applied, so approving it is refused.
  const tenant = await store.getTenantById(ctx.pool, plan.tenantId);
  const changed = tenant && (await changedSince(ctx, tenant, plan));
  if (changed) {
    const made = plan.zones.find((z) => z.zone === changed.zone)!.baseGeneration;
    throw new PlanNotApprovableError(
      `plan "${id}" is stale: ${staleWhy(changed.zone, made, changed.generation)}, so it could not be applied; make a new plan and have it approved`,
    );
  }
  if (!plan.zones.some((z) => needsApproval(z.threshold))) {
    throw new PlanNotApprovableError(
      `plan "${id}" is not refused by the change threshold in any of its zones and touches no protected name; its tenant applies it as it is, there is nothing to approve`,
    );
  }
}

/**
 * The approval an Apply of this stored plan carries, or undefined: set only when the approval is of
 * the plan's own digest (the statement that wrote it checked so; checked again here).
 */
export async function approvalOf(ctx: CoreContext, row: store.Plan): Promise<ApprovalNote | undefined> {
  const a = row.approval;
  if (!a || a.digest !== row.digest) return undefined;
  const approver = await store.getTenantById(ctx.pool, a.approvedBy);
  return { planId: row.id, approvedBy: approver?.name ?? '', approvedAt: a.approvedAt.toISOString(), digest: a.digest };
}
