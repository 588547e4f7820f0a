import { create } from '@bufbuild/protobuf';
import { ConnectError, type ServiceImpl } from '@connectrpc/connect';
import { apply } from '../core/apply/index.js';
import type { CoreContext } from '../core/context.js';
import { plan } from '../core/plan/stored.js';
import { listVisibleZones, records, type RecordsQuery, type ZoneRecords } from '../core/records/records.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { Slicer } from '../core/slices.js';
import { InvalidInputError } from '../dns/errors.js';
import {
  ApplyResponseSchema,
  GetApplyResponseSchema,
  ListZonesResponseSchema,
  PlanResponseSchema,
  RecordsResponseSchema,
  ZoneRecordsSchema,
  type Endpoint as PbEndpoint,
  type RecordsRequest,
  type ZoneRecords as PbZoneRecords,
  type ZoneService,
} from '../gen/dnsplane/v1/zone_pb.js';
import { clientOf, tenantOf } from './auth.js';
import { loggedConnectError } from './errors.js';
import { settlingOf } from '../core/zones/settling.js';
import { endpointToPb, planInputFromPb, planToPb, zoneApplyResultToPbSliced, zoneToPb } from './convert.js';
import type { Endpoint } from '../dns/types.js';
import { normalizeName } from '../dns/names.js';
import { getApply, latestPublishes } from '../core/journal/apply-view.js';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { visibilityToPb, waitFor, waitForZones } from './visibility.js';
import { waitAsked } from './wait.js';
import { answersInBinary, recordsResponseBinary } from './records-binary.js';
import { readCacheOf } from '../core/reads/read-cache.js';

/** Records as the RPC asks for it (also the Connect-JSON route of api/records-json.ts). */
export function recordsOf(ctx: CoreContext, tenant: Tenant, req: RecordsRequest): Promise<ZoneRecords[]> {
  return records(ctx, tenant, recordsQueryOf(req));
}

/** The request as core/records/records.ts reads it (the known generations' zones normalized). Never changed by records(). */
export function recordsQueryOf(req: RecordsRequest): RecordsQuery {
  const known = new Map<string, bigint>();
  for (const [zone, gen] of Object.entries(req.knownGenerations)) known.set(normalizeName(zone, `knownGenerations["${zone}"]`), gen);
  return { zones: req.zones, knownGenerations: known, includeForeign: req.includeForeign };
}

/** A zone's answer as a message; its endpoints converted here (a long list: zoneRecordsPbSliced). */
export function zoneRecordsPb(z: ZoneRecords, endpoints: PbEndpoint[] = z.endpoints.map(endpointToPb)): PbZoneRecords {
  return create(ZoneRecordsSchema, { zone: z.zone, generation: z.generation, notModified: z.notModified, endpoints });
}

/** zoneRecordsPb with the endpoints converted in slices (a zone may hold 50,000). */
async function zoneRecordsPbSliced(z: ZoneRecords, slicer: Slicer): Promise<PbZoneRecords> {
  return zoneRecordsPb(z, await slicer.map(z.endpoints as Endpoint[], endpointToPb, 256));
}

export function zoneService(ctx: CoreContext): ServiceImpl<typeof ZoneService> {
  return {
    async listZones(_req, hc) {
      const tenant = tenantOf(hc);
      const zones = await listVisibleZones(ctx, tenant);
      const recent = await latestPublishes(
        ctx,
        zones.map((z) => z.name),
      );
      // A zone this process is settling after a crash says so (core/zones/settling.ts).
      const pb = zones.map((z) =>
        Object.assign(
          zoneToPb(z),
          { recentPublishes: (recent.get(z.name) ?? []).map(visibilityToPb) },
          settlingOf(ctx, z.name) ? { state: 'settling' } : {},
          // Its OVH account, and why it is unavailable when its account cannot call OVH (core/accounts/).
          ctx.accounts?.registry.zoneView(z.name) ?? { account: 'default' },
        ),
      );
      return create(ListZonesResponseSchema, { zones: pb, tenant: tenant.name, suffixes: tenant.suffixes, scopes: tenant.scopes });
    },

    async records(req, hc) {
      const zones = await recordsOf(ctx, tenantOf(hc), req);
      const slicer = new Slicer();
      // Binary: each view's bytes, encoded once and shared (api/records-binary.ts).
      if (answersInBinary(hc)) return recordsResponseBinary(readCacheOf(ctx), zones, slicer);
      const pb: PbZoneRecords[] = [];
      for (const z of zones) pb.push(await zoneRecordsPbSliced(z, slicer));
      return create(RecordsResponseSchema, { zones: pb });
    },

    async plan(req, hc) {
      const tenant = tenantOf(hc);
      const p = await plan(ctx, tenant, planInputFromPb(req));
      return create(PlanResponseSchema, { plan: await planToPb(p) });
    },

    async apply(req, hc) {
      const tenant = tenantOf(hc);
      // Read before anything is applied: a bad wait is refused with nothing sent.
      const wait = waitAsked(req, hc);
      let result: Awaited<ReturnType<typeof apply>>;
      switch (req.source.case) {
        case 'planId':
          result = await apply(ctx, tenant, { planId: req.source.value, force: req.force, ...clientOf(hc) });
          break;
        case 'plan':
          if (req.force) throw new InvalidInputError('force', 'with an inline plan, say force in plan.force');
          result = await apply(ctx, tenant, { input: planInputFromPb(req.source.value, 'plan.'), ...clientOf(hc) });
          break;
        default:
          throw new InvalidInputError('source', 'one of "planId" or "plan" is required');
      }
      const slicer = new Slicer();
      const zones = [];
      for (const z of result.zones) zones.push(await zoneApplyResultToPbSliced(z, slicer));
      if (wait) await waitForZones(ctx, zones, wait);
      const response = create(ApplyResponseSchema, { planId: result.planId ?? '', zones });
      // A zone that failed or went stale makes the call fail with that zone's code and error. Every
      // zone's outcome still reaches the caller: the message names each other zone's status, and the
      // error carries the whole ApplyResponse as a detail (err.findDetails(ApplyResponseSchema)), so a
      // zone that was applied and published is never hidden behind another zone's error. The zone
      // error's metadata (`dnsplane-refusal: change-threshold`) goes with it.
      const bad = result.zones.find((z) => z.error);
      if (bad?.error) {
        const others = result.zones
          .filter((z) => z !== bad)
          .map((z) => `${z.zone}: ${z.status}${z.status === 'applied' ? ` (generation ${z.generation}, published)` : z.error ? ` (${z.error.message})` : ''}`);
        // The zone's error itself is logged here when it is a bug (Internal): the interceptor sees only the ConnectError.
        const e = loggedConnectError(bad.error, ctx.log, 'Apply');
        throw new ConnectError(others.length ? `${e.rawMessage} (other zones: ${others.join('; ')})` : e.rawMessage, e.code, e.metadata, [
          { desc: ApplyResponseSchema, value: response },
        ]);
      }
      return response;
    },

    async getApply(req, hc) {
      const tenant = tenantOf(hc);
      const wait = waitAsked(req, hc);
      const a = await getApply(ctx, tenant, req.journalId);
      const visibility = wait ? (await waitFor(ctx, [a.id], wait)).get(a.id) : a.visibility && visibilityToPb(a.visibility);
      return create(GetApplyResponseSchema, {
        journalId: a.id,
        zone: a.zone,
        tenant: a.tenant,
        planId: a.planId,
        summary: a.summary,
        clientAddress: a.from,
        account: a.account,
        state: a.state,
        startedAt: timestampFromDate(a.startedAt),
        finishedAt: a.finishedAt ? timestampFromDate(a.finishedAt) : undefined,
        error: a.error,
        visibility,
      });
    },
  };
}
