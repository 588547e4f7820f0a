/**
 * The zone use cases of AdminService: a zone as a zone file, and an invalidation (journalled as an
 * admin action in the same transaction). Each refuses a caller without the admin scope first
 * (tenants/gate.ts).
 */
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import { waitForHolder } from '../apply/index.js';
import type { CoreContext } from '../context.js';
import { auditAdminAction } from '../journal/audit.js';
import { managedZone, requireAdmin } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { syncZone } from '../zones/zones.js';
import { exportZone, type ZoneExport } from './zone-export.js';

/** A zone as a zone file, from the cache (core/admin/zone-export.ts). */
export async function exportZoneFile(
  ctx: CoreContext,
  actor: Tenant,
  rawZone: string,
  options: { owners: boolean; atGeneration?: bigint; atTime?: Date },
): Promise<ZoneExport> {
  requireAdmin(actor);
  if (options.atGeneration !== undefined && options.atTime !== undefined) throw new InvalidInputError('at_time', 'give at_generation or at_time, not both');
  if (options.atGeneration !== undefined && options.atGeneration < 0n)
    throw new InvalidInputError('at_generation', `must be a generation (0 or more), got ${options.atGeneration}`);
  const at = options.atGeneration !== undefined ? { generation: options.atGeneration } : options.atTime !== undefined ? { time: options.atTime } : undefined;
  return exportZone(ctx, await managedZone(ctx, rawZone, 'zone'), { owners: options.owners, ...(at ? { at } : {}) });
}

/**
 * Drops the zone's cache and reads the zone again from OVH, under the zone lock (list ids, GET each,
 * SOA): generation + 1. Applies that died in flight are covered by the full read and marked recovered.
 */
export async function invalidateZone(ctx: CoreContext, actor: Tenant, rawZone: string): Promise<{ zone: string; generation: bigint; recordCount: number }> {
  requireAdmin(actor);
  const zone = await managedZone(ctx, rawZone, 'zone');
  return store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    const dead = await store.listInFlight(tx, zone);
    // The full read settles them only once none of their calls can still land.
    for (const row of dead) await waitForHolder(ctx, tx, zone, row);
    const recordCount = await syncZone(ctx, ctx.ovh.scoped({ flow: { zone } }), tx, zone); // reads only: no fence
    for (const row of dead) await store.finishJournal(tx, row.id, 'recovered', { recoveredBy: 'invalidate-zone' });
    const generation = (await store.getZone(tx, zone))!.generation; // syncZone notified it
    await auditAdminAction(tx, zone, actor, 'invalidate-zone', `cache of ${zone} dropped and re-read from OVH by ${actor.name}: ${recordCount} records`);
    ctx.log.info({ zone, records: recordCount, generation: String(generation), by: actor.name }, 'zone invalidated');
    return { zone, generation, recordCount };
  });
}
