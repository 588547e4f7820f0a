/**
 * A tenant retired (docs/ownership.md "Retire"): ended cleanly, never leaving records owned by a
 * disabled tenant forever. Either its ownership is handed to another tenant (handover.ts: one
 * transaction, no OVH call) or its records are deleted — by an apply like any other: a stored plan of
 * the tenant's desired state "nothing" in every zone it owns, planned for it by the admin and applied
 * as it, so the change threshold and the two-person rule apply (over the threshold the plan stays
 * pending; a second admin approves it, and the retire is run again with that plan). Then the tenant is
 * disabled and marked retired, journalled (`tenant-retire`).
 */
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import { apply, type ApplyResult } from '../apply/index.js';
import type { CoreContext } from '../context.js';
import { ThresholdError } from '../errors.js';
import { auditAdminActionWithId } from '../journal/audit.js';
import type { StoredPlan } from '../plan/plan.js';
import { plan } from '../plan/stored.js';
import { requireAdmin, tenantNamed } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { handover, type HandoverResult } from './handover.js';

export interface RetireInput {
  name: string;
  /** Hand its ownership to this tenant; '' : delete its records instead (deleteRecords). */
  handoverTo: string;
  deleteRecords: boolean;
  /** With deleteRecords: apply this stored plan (made by an earlier retire, approved since) instead of a new one. */
  planId: string;
}

export interface RetireResult {
  tenant: string;
  handover?: HandoverResult;
  /** The deletion's plan and what its apply did. */
  planId: string;
  applied?: ApplyResult;
  journalId: string;
}

/** A refusal of the deletion by the change threshold: the plan stays pending for a second admin's approval. */
export class RetireOverThresholdError extends ThresholdError {}

export async function retireTenant(ctx: CoreContext, actor: Tenant, input: RetireInput): Promise<RetireResult> {
  requireAdmin(actor);
  if ((input.handoverTo === '') === !input.deleteRecords)
    throw new InvalidInputError(
      'handoverTo',
      'say either handover_to (another tenant takes its records) or delete_records (an apply deletes them), not both nor neither',
    );
  if (input.planId !== '' && !input.deleteRecords) throw new InvalidInputError('planId', 'a plan is applied only with delete_records');
  const tenant = await tenantNamed(ctx, input.name, 'name');
  if (tenant.name === actor.name) throw new InvalidInputError('name', 'an admin cannot retire itself (it would lock itself out)');
  let handed: HandoverResult | undefined;
  let applied: ApplyResult | undefined;
  let planId = '';
  if (!input.deleteRecords) {
    handed = await handover(ctx, actor, { old: tenant.name, new: input.handoverTo, zone: '', suffix: '', dryRun: false });
  } else {
    if (input.planId !== '') planId = input.planId;
    else {
      const zones = [...new Set((await store.listOwnershipForTenant(ctx.pool, tenant.id)).map((r) => r.zone))];
      if (zones.length > 0) planId = (await deletionPlan(ctx, actor, tenant, zones)).id;
    }
    if (planId !== '') {
      applied = await apply(ctx, tenant, { planId });
      const refused = applied.zones.find((z) => z.error);
      if (refused?.error instanceof ThresholdError)
        throw new RetireOverThresholdError(
          `${refused.error.message}; tenant "${tenant.name}" is not retired: plan ${planId} stays pending — a second admin approves it (dnsplane plan approve ${planId}), then run the retire again with it (--plan ${planId})`,
          refused.error.zone,
          refused.error.counts,
        );
      if (refused?.error) throw refused.error;
    }
  }
  const journalId = await store.withTransaction(ctx.pool, async (tx) => {
    await store.setDisabled(tx, tenant.name, true);
    await store.markTenantRetired(tx, tenant.id);
    const how = handed
      ? `its ownership handed over to tenant "${handed.new}" (journal entry ${handed.journalId || 'none: it owned nothing'})`
      : `its records deleted by plan ${planId || '(none: it owned nothing)'}`;
    return auditAdminActionWithId(tx, null, actor, 'tenant-retire', `tenant "${tenant.name}" retired: ${how}; disabled`, {
      tenant: tenant.name,
      handoverTo: handed?.new ?? null,
      planId: planId || null,
    });
  });
  ctx.tokens?.forget(tenant.name);
  ctx.log.info({ tenant: tenant.name, by: actor.name, handoverTo: handed?.new, planId }, 'tenant retired');
  return { tenant: tenant.name, ...(handed ? { handover: handed } : {}), planId, ...(applied ? { applied } : {}), journalId };
}

/** The stored plan that deletes everything the tenant owns: its desired state "nothing" in each zone, requested by the admin. */
function deletionPlan(ctx: CoreContext, actor: Tenant, tenant: Tenant, zones: string[]): Promise<StoredPlan> {
  return plan(ctx, tenant, { kind: 'desired', zones, endpoints: [], policy: 'sync', origin: `retire of tenant ${tenant.name}` }, actor);
}
