/**
 * A tenant drained for maintenance (docs/failover.md "Drain"): its published targets of shared sets
 * withdrawn now, on an admin's word, through the withdrawal mechanism (core/withdrawals/: reason
 * `drained`, never a set's last target, one DELETE each and one refresh per zone, journalled, rolled
 * back on failure), and restored by undrain (one POST each). Unlike a silence, a drain outlives the
 * tenant's calls: it keeps writing its desired state meanwhile — Records shows it the drained targets
 * as its own, marked withdrawn, so its external-dns plans nothing — and nothing flaps until undrain.
 * Exclusive sets stay (no other owner's target to send anyone to).
 */
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { managedZone, requireAdmin, tenantNamed } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { restoreTargets, withdrawTargets, type WithdrawOutcome } from '../withdrawals/withdrawals.js';

export interface DrainResult {
  tenant: string;
  outcomes: WithdrawOutcome[];
}

/** Withdraws (drain) or restores (undrain) the tenant's targets of shared sets, zone by zone. */
export async function drainTenant(ctx: CoreContext, actor: Tenant, input: { name: string; zone: string; undrain: boolean }): Promise<DrainResult> {
  requireAdmin(actor);
  const tenant = await tenantNamed(ctx, input.name, 'name');
  const zone = input.zone === '' ? undefined : await managedZone(ctx, input.zone, 'zone');
  const outcomes: WithdrawOutcome[] = [];
  if (input.undrain) {
    const rows = (await store.listWithdrawalsOfTenant(ctx.pool, tenant.id, 'drained')).filter((r) => zone === undefined || r.zone === zone);
    for (const z of [...new Set(rows.map((r) => r.zone))]) {
      const items = rows
        .filter((r) => r.zone === z)
        .map((r) => ({
          name: r.dnsName,
          type: r.recordType,
          target: r.target,
          reason: 'drained' as const,
          detail: `tenant ${tenant.name} undrained by ${actor.name}`,
        }));
      outcomes.push(await restoreTargets(ctx, z, items, { force: true }));
    }
  } else {
    const drained = new Set(
      (await store.listWithdrawalsOfTenant(ctx.pool, tenant.id, 'drained')).map((w) => `${w.zone} ${w.dnsName} ${w.recordType} ${w.target}`),
    );
    const owned = (await store.listOwnershipForTenant(ctx.pool, tenant.id, zone)).filter(
      (o) => o.shared && !drained.has(`${o.zone} ${o.dnsName} ${o.recordType} ${o.target}`),
    );
    const detail = `tenant ${tenant.name} drained by ${actor.name}`;
    for (const z of [...new Set(owned.map((o) => o.zone))]) {
      const items = owned
        .filter((o) => o.zone === z)
        .map((o) => ({ name: o.dnsName, type: o.recordType, target: o.target, reason: 'drained' as const, detail }));
      outcomes.push(await withdrawTargets(ctx, z, items, { force: true }));
    }
  }
  for (const o of outcomes) {
    const done = o.items.filter((i) => i.state !== 'kept').length;
    ctx.log.info(
      { zone: o.zone, tenant: tenant.name, by: actor.name, done, kept: o.items.length - done },
      input.undrain ? 'tenant undrained' : 'tenant drained',
    );
  }
  return { tenant: tenant.name, outcomes };
}
