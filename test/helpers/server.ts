/**
 * A real dnsplane server for end-to-end tests: real Postgres (a database of its own from the
 * migrated template), the OVH simulator over HTTPS through @ovhcloud/node-ovh, a real Connect client.
 */
import { createClient, type Client, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import type { Logger } from 'pino';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { OvhSimulator, type SimBehavior, type SimRecordInit } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server/server.js';
import type { TsigKeyring } from '../../src/core/keys/tsig.js';
import { testDatabase, type TestDatabase } from './db.js';
import { bearer, startServerOn } from './sim-server.js';

export interface Harness {
  sim: OvhSimulator;
  server: Server;
  /** http://127.0.0.1:PORT of the server's external-dns webhook listener (DNSPLANE_WEBHOOK_LISTEN, port 0 here). */
  webhookUrl: string;
  /** A ZoneService client speaking Connect over HTTP/1.1 with this token. */
  zoneClient(token?: string, transport?: 'connect' | 'grpc'): Client<typeof ZoneService>;
  tenant(name: string, zones: string[], opts?: { admin?: boolean; suffixes?: string[] }): Promise<string>;
  /** An AdminService client (Connect, HTTP/1.1) with this token. */
  adminClient(token?: string): Client<typeof AdminService>;
  /** A client of any service the server registers, with this token (none: no Authorization header). */
  client<S extends DescService>(service: S, token?: string): Client<S>;
  /** The URL of this harness's database (may carry a password: never log it). */
  databaseUrl: string;
  close(): Promise<void>;
}

export async function startHarness(opts: {
  zones: Record<string, SimRecordInit[]>;
  env?: Record<string, string>;
  /** The server's logger (default: silent), e.g. to capture and search its output. */
  logger?: Logger;
  /** The DNS door's keys (with DNSPLANE_DNS_LISTEN in env). */
  dnsKeyring?: TsigKeyring;
  /** The simulator's assumed behaviour (e.g. expanded record lists honoured, as OVH does). */
  behavior?: Partial<SimBehavior>;
}): Promise<Harness> {
  const sim = await OvhSimulator.start({ zones: opts.zones, ...(opts.behavior ? { behavior: opts.behavior } : {}) });
  const db = await testDatabase();
  const server = await startServerOn(
    sim,
    db.url,
    { DNSPLANE_WEBHOOK_LISTEN: '127.0.0.1:0', ...opts.env },
    opts.logger,
    opts.dnsKeyring ? { dnsKeyring: opts.dnsKeyring } : {},
  );
  const connect = <S extends DescService>(service: S, token?: string): Client<S> =>
    createClient(service, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', interceptors: [bearer(token)] }));
  return {
    sim,
    server,
    webhookUrl: server.webhookUrl ?? '',
    zoneClient(token, kind = 'connect') {
      const auth = bearer(token);
      const transport: Transport =
        kind === 'grpc'
          ? createGrpcTransport({ baseUrl: server.url, interceptors: [auth] })
          : createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', interceptors: [auth] });
      return createClient(ZoneService, transport);
    },
    adminClient: (token) => connect(AdminService, token),
    client: connect,
    databaseUrl: db.url,
    async tenant(name, zones, t = {}) {
      return (await createTenant(server.ctx.pool, { name, zones, admin: t.admin, suffixes: t.suffixes })).token;
    },
    async close() {
      await server.close();
      await sim.stop();
      await db.drop();
    },
  };
}

/** Several dnsplane servers on one database and one simulator, as replicas run. */
export interface Replicas {
  sim: OvhSimulator;
  db: TestDatabase;
  servers: Server[];
  /** Closes the servers, then stops the simulator and drops the database. */
  close(): Promise<void>;
}

export async function startReplicas(opts: {
  zones: Record<string, SimRecordInit[]>;
  /** How many servers (default 2). */
  count?: number;
  /** Each server's environment (the same for all, or by index). */
  env?: Record<string, string> | ((i: number) => Record<string, string>);
  /** Each server's logger, by index (default: silent). */
  logger?: (i: number) => Logger;
  /** What the database holds before the first server starts. */
  seed?: (db: TestDatabase) => Promise<void>;
}): Promise<Replicas> {
  const sim = await OvhSimulator.start({ zones: opts.zones });
  const db = await testDatabase();
  const servers: Server[] = [];
  const close = async () => {
    for (const s of servers.splice(0)) await s.close();
    await sim.stop();
    await db.drop();
  };
  try {
    await opts.seed?.(db);
    for (let i = 0; i < (opts.count ?? 2); i++) {
      const env = typeof opts.env === 'function' ? opts.env(i) : opts.env;
      servers.push(await startServerOn(sim, db.url, env, opts.logger?.(i)));
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { sim, db, servers, close };
}
