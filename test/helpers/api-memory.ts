/**
 * The API's RPCs in memory, for test/api: the router the server builds (registerServices behind
 * rpcInterceptors, src/api/services.ts) served by connect-es's createRouterTransport — no HTTP
 * server, no port — so a test meets the handlers, the interceptors and the error mapping as a caller
 * does, on a CoreContext of its own (core-apply.ts's applyRoom: real Postgres, the simulator).
 */
import type { DescService } from '@bufbuild/protobuf';
import { createClient, createRouterTransport, type Client, type Interceptor } from '@connectrpc/connect';
import { registerServices, rpcInterceptors } from '../../src/api/services.js';
import type { CoreContext } from '../../src/core/context.js';
import { bearer } from './sim-server.js';

/**
 * A client of `service` on `ctx`'s handlers with this bearer token (none: no Authorization header);
 * binary unless useBinaryFormat is false (then Connect JSON, through the strict JSON readers).
 */
export function inMemoryClient<S extends DescService>(
  ctx: CoreContext,
  service: S,
  token?: string,
  opts: { useBinaryFormat?: boolean; interceptors?: Interceptor[] } = {},
): Client<S> {
  const transport = createRouterTransport((router) => registerServices(router, ctx), {
    router: { interceptors: rpcInterceptors(ctx, ctx.log) },
    transport: { useBinaryFormat: opts.useBinaryFormat ?? true, interceptors: [bearer(token), ...(opts.interceptors ?? [])] },
  });
  return createClient(service, transport);
}
