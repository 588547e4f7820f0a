/**
 * What nobody will ever write again (docs/ownership.md "Orphans"): record sets (and targets of shared
 * sets) owned by disabled tenants or by tenants silent longer than a bound, with how long their owner
 * has been quiet, and the records of managed zones nobody owns (made by hand, left by a tool: dnsplane
 * never touches them until an admin assigns them; the apex's NS set, OVH's own, is not one). Read only; no OVH call once the zones are synced.
 */
import type { Endpoint } from '../../dns/types.js';
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { managedZone, requireAdmin } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { listOwnership } from './assign.js';

/** The default bound of silence (30 days): the metric's, and ListOrphans' when it names none. */
export const ORPHAN_SILENT_MS = 30 * 86_400_000;

export interface Orphans {
  owned: store.OrphanRow[];
  unowned: Array<{ zone: string; endpoint: Endpoint }>;
  silentForMs: number;
}

export async function listOrphans(ctx: CoreContext, actor: Tenant, q: { zone: string; silentForSeconds: number }): Promise<Orphans> {
  requireAdmin(actor);
  if (!Number.isInteger(q.silentForSeconds) || q.silentForSeconds < 0 || q.silentForSeconds > 10 * 365 * 86_400)
    throw new InvalidInputError('silentForSeconds', `must be whole seconds up to 10 years (0: the default, 30 days), got ${q.silentForSeconds}`);
  const silentForMs = q.silentForSeconds === 0 ? ORPHAN_SILENT_MS : q.silentForSeconds * 1000;
  const zone = q.zone === '' ? undefined : await managedZone(ctx, q.zone, 'zone');
  const owned = await store.listOrphanedOwnership(ctx.pool, silentForMs, zone);
  const zones = zone ? [zone] : await store.listZoneNames(ctx.pool);
  const unowned: Orphans['unowned'] = [];
  for (const z of zones) {
    // Only the unowned sets are wanted: tenant id 0 is nobody's, so no ownership row is listed.
    // The apex's NS set is OVH's own (the zone's delegation), nobody's to write: not an orphan.
    for (const endpoint of (await listOwnership(ctx, { zones: [z], includeUnowned: true, tenantId: '0' })).unowned)
      if (!(endpoint.recordType === 'NS' && endpoint.dnsName === z)) unowned.push({ zone: z, endpoint });
  }
  return { owned, unowned, silentForMs };
}
