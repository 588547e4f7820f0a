/**
 * NsmService: translates protobuf messages to nsm/ calls and back. Errors leave through the auth
 * interceptor's toConnectError (invalid input InvalidArgument, another tenant's domain or a name outside
 * the tenant's grant PermissionDenied, OVH down Unavailable).
 */
import { create } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import type { CoreContext } from '../core/context.js';
import { publishDomain, serviceUrls, unpublishDomain } from '../nsm/index.js';
import { type NsmService, PublishDomainResponseSchema, PublishedNsmServiceSchema, UnpublishDomainResponseSchema } from '../gen/dnsplane/v1/nsm_pb.js';
import { clientOf, tenantOf } from './auth.js';
import { zoneApplyResultToPb } from './convert.js';
import { waitForZones } from './visibility.js';
import { waitAsked } from './wait.js';

export function nsmService(ctx: CoreContext): ServiceImpl<typeof NsmService> {
  return {
    async publishDomain(req, hc) {
      const tenant = tenantOf(hc);
      const wait = waitAsked(req, hc);
      const r = await publishDomain(
        ctx,
        tenant,
        {
          domain: req.domain,
          ttl: req.ttl,
          services: req.services.map((s) => ({ name: s.name, namespace: s.namespace, port: s.port, addresses: [...s.addresses], addressOnly: s.addressOnly })),
        },
        clientOf(hc).from,
      );
      const z = zoneApplyResultToPb(r.result);
      // A peer cluster resolves the domain at the zone's servers: with a wait, answer once they have it.
      if (wait) await waitForZones(ctx, [z], wait);
      return create(PublishDomainResponseSchema, {
        journalId: z.journalId,
        visibility: z.visibility,
        domain: r.domain,
        zone: r.zone,
        status: z.status,
        generation: z.generation,
        changes: z.changes,
        calls: z.calls,
        services: r.services.map((s) =>
          create(PublishedNsmServiceSchema, {
            name: s.name,
            namespace: s.namespace,
            dnsName: s.dnsName,
            port: s.port,
            addresses: [s.ipv4, s.ipv6].filter((a): a is string => a !== undefined),
            addressOnly: s.addressOnly,
            urls: serviceUrls(s),
          }),
        ),
      });
    },

    async unpublishDomain(req, hc) {
      const tenant = tenantOf(hc);
      const r = await unpublishDomain(ctx, tenant, { domain: req.domain }, clientOf(hc).from);
      const z = zoneApplyResultToPb(r.result);
      return create(UnpublishDomainResponseSchema, {
        domain: r.domain,
        zone: r.zone,
        status: z.status,
        generation: z.generation,
        changes: z.changes,
        calls: z.calls,
      });
    },
  };
}
