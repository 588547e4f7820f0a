/**
 * The Connect services the API serves, each method with its input's strict JSON reader
 * (api/strict.ts), and the interceptors every RPC runs behind. Tests build a router with
 * registerServices to enumerate every RPC (test/e2e/authz.test.ts): a service added here is covered
 * there; test/api/ serves the same router in memory (createRouterTransport) behind rpcInterceptors.
 */
import type { DescService } from '@bufbuild/protobuf';
import type { ConnectRouter, Interceptor, ServiceImpl } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { AdminService } from '../gen/dnsplane/v1/admin_pb.js';
import { NsmService } from '../gen/dnsplane/v1/nsm_pb.js';
import { ZoneService } from '../gen/dnsplane/v1/zone_pb.js';
import { adminService } from './admin-service.js';
import { tenantInterceptor } from './auth.js';
import { errorInterceptor } from './errors.js';
import { nsmService } from './nsm-service.js';
import { strictInterceptor, strictJsonOptions } from './strict.js';
import { zoneService } from './zone-service.js';

const SERVICES = [ZoneService, NsmService, AdminService];
/** The RPC paths the API serves (`/dnsplane.v1.ZoneService/Plan`, …): the only values of the procedure label. */
export const PROCEDURES: ReadonlySet<string> = new Set(SERVICES.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));

/** Outermost first: whatever is thrown leaves as a Connect code, the bearer token becomes a tenant, the input is checked. */
export function rpcInterceptors(ctx: CoreContext, log: Logger): Interceptor[] {
  return [errorInterceptor(log), tenantInterceptor(ctx), strictInterceptor()];
}

export function registerServices(router: ConnectRouter, ctx: CoreContext): ConnectRouter {
  strictService(router, ZoneService, zoneService(ctx));
  strictService(router, NsmService, nsmService(ctx));
  strictService(router, AdminService, adminService(ctx));
  return router;
}

function strictService<S extends DescService>(router: ConnectRouter, service: S, impl: ServiceImpl<S>): void {
  for (const method of service.methods) {
    const fn = (impl as Record<string, unknown>)[method.localName];
    router.rpc(method, fn as Parameters<ConnectRouter['rpc']>[1], strictJsonOptions(method.input));
  }
}
