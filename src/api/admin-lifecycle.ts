/**
 * AdminService's handlers of a cluster's life (issue 46): handover and its revert, drain, retire,
 * orphans — protobuf in, core/admin/ (handover.ts, drain.ts, retire.ts, orphans.ts), protobuf out.
 * Spread into adminService (admin-service.ts), each checking the admin scope first as the others do.
 */
import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { drainTenant } from '../core/admin/drain.js';
import * as lifecycle from '../core/admin/handover.js';
import { listOrphans } from '../core/admin/orphans.js';
import { retireTenant } from '../core/admin/retire.js';
import type { CoreContext } from '../core/context.js';
import type { Tenant } from '../core/tenants/tenants.js';
import {
  DrainedTargetSchema,
  DrainTenantResponseSchema,
  HandedSetSchema,
  HandoverTenantResponseSchema,
  ListOrphansResponseSchema,
  OrphanSchema,
  RetireTenantResponseSchema,
  RevertHandoverResponseSchema,
  type AdminService,
} from '../gen/dnsplane/v1/admin_pb.js';

type Handlers = Pick<ServiceImpl<typeof AdminService>, 'handoverTenant' | 'revertHandover' | 'drainTenant' | 'retireTenant' | 'listOrphans'>;

export function lifecycleHandlers(ctx: CoreContext, adminOf: (hc: HandlerContext) => Tenant): Handlers {
  return {
    async handoverTenant(req, hc) {
      const actor = adminOf(hc);
      const r = await lifecycle.handover(ctx, actor, { old: req.old, new: req.new, zone: req.zone, suffix: req.suffix, dryRun: req.dryRun });
      return create(HandoverTenantResponseSchema, { ...r, sets: r.sets.map((x) => create(HandedSetSchema, x)) });
    },

    async revertHandover(req, hc) {
      const actor = adminOf(hc);
      const r = await lifecycle.revertHandover(ctx, actor, req.journalId, req.dryRun);
      return create(RevertHandoverResponseSchema, {
        ...r,
        sets: r.sets.map((x) => create(HandedSetSchema, x)),
        leftAlone: r.leftAlone.map((x) => create(HandedSetSchema, x)),
      });
    },

    async drainTenant(req, hc) {
      const actor = adminOf(hc);
      const r = await drainTenant(ctx, actor, { name: req.name, zone: req.zone, undrain: req.undrain });
      return create(DrainTenantResponseSchema, {
        tenant: r.tenant,
        targets: r.outcomes.flatMap((o) =>
          o.items.map((i) =>
            create(DrainedTargetSchema, { zone: o.zone, dnsName: i.name, recordType: i.type, target: i.target, state: i.state, why: i.why ?? '' }),
          ),
        ),
        journalIds: r.outcomes.flatMap((o) => o.journalIds),
        calls: r.outcomes.flatMap((o) => o.calls.map((c) => `${c.method} ${c.path}`)),
      });
    },

    async retireTenant(req, hc) {
      const actor = adminOf(hc);
      const r = await retireTenant(ctx, actor, { name: req.name, handoverTo: req.handoverTo, deleteRecords: req.deleteRecords, planId: req.planId });
      const h = r.handover;
      return create(RetireTenantResponseSchema, {
        tenant: r.tenant,
        ...(h ? { handover: create(HandoverTenantResponseSchema, { ...h, sets: h.sets.map((x) => create(HandedSetSchema, x)) }) } : {}),
        planId: r.planId,
        calls: (r.applied?.zones ?? []).flatMap((z) => z.calls.map((c) => `${c.method} ${c.path}`)),
        journalId: r.journalId,
      });
    },

    async listOrphans(req, hc) {
      const actor = adminOf(hc);
      const r = await listOrphans(ctx, actor, { zone: req.zone, silentForSeconds: req.silentForSeconds });
      return create(ListOrphansResponseSchema, {
        silentForSeconds: r.silentForMs / 1000,
        orphans: [
          ...r.owned.map((o) => create(OrphanSchema, { ...o, ageSeconds: BigInt(o.ageSeconds) })),
          ...r.unowned.map(({ zone, endpoint: e }) =>
            create(OrphanSchema, { zone, dnsName: e.dnsName, recordType: e.recordType, reason: 'unowned', targets: [...e.targets] }),
          ),
        ],
      });
    },
  };
}
