/**
 * DNSPLANE_DRY_RUN (external-dns's --dry-run, at the control plane): an apply computes its plan under
 * the zone lock as usual, then logs and returns the OVH calls it would make — every operation and the
 * refresh — each with status 0 and the NOT_SENT marker, and sends none. The cache, ownership, the
 * generation and the journal are left as they were, so the same apply planned again shows the same
 * calls.
 */
import { routeOf } from '../../ovh/client/transport.js';
import { describeOperation } from '../../ovh/ops.js';
import { refreshPath } from '../../ovh/types.js';
import type { CallRecord, ZoneApplyResult } from './result.js';
import type { CoreContext } from '../context.js';
import type { ZonePlan } from '../plan/plan.js';
import type { Tenant } from '../tenants/tenants.js';

/** The `error` of every call a dry-run apply returns: it was not sent. */
export const NOT_SENT = 'not sent: dry run (DNSPLANE_DRY_RUN=true)';

export function dryRunApply(ctx: CoreContext, tenant: Tenant, plan: ZonePlan): ZoneApplyResult {
  const wouldSend = [...plan.operations.map(describeOperation), { method: 'POST', path: refreshPath(plan.zone), body: '' }];
  const calls: CallRecord[] = wouldSend.map((c) => ({ ...c, status: 0, error: NOT_SENT }));
  for (const c of calls) ctx.metrics?.ovhCallNotSent(c.method, routeOf(c.path));
  ctx.log.info(
    { zone: plan.zone, tenant: tenant.name, calls: calls.map((c) => (c.body ? `${c.method} ${c.path} ${c.body}` : `${c.method} ${c.path}`)) },
    'dry run: these OVH calls were not sent; the cache is unchanged',
  );
  return { zone: plan.zone, status: 'dry_run', generation: plan.baseGeneration, calls, changes: plan.changes, conflicts: plan.conflicts };
}
