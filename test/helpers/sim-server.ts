/**
 * For tests that need more than startHarness gives: a real dnsplane server on a simulator and a
 * database the test chooses (several servers on one database and simulator, a logger of its own).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import pino, { type Logger } from 'pino';
import { loadConfig } from '../../src/config/config.js';
import { ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import { startServer, type Server, type ServerParts } from '../../src/server/server.js';

/**
 * The OVH_* settings that point a dnsplane server at a simulator: its endpoint, its credentials and
 * caFile, a file holding the simulator's CA.
 */
export function simulatorEnv(sim: OvhSimulator, caFile: string): Record<string, string> {
  return {
    OVH_ENDPOINT: sim.apiUrl,
    OVH_APPLICATION_KEY: sim.credentials.applicationKey,
    OVH_APPLICATION_SECRET: sim.credentials.applicationSecret,
    OVH_CONSUMER_KEY: sim.credentials.consumerKey,
    OVH_CA_FILE: caFile,
    // The prober asks the simulator's two name servers directly: no OVH call for their names.
    DNSPLANE_AUTHORITATIVE_SERVERS: sim.dnsServers.map((s) => `${s.host}:${s.port}`).join(','),
  };
}

export async function startServerOn(
  sim: OvhSimulator,
  databaseUrl: string,
  env: Record<string, string> = {},
  log: Logger = pino({ level: 'silent' }),
  parts: ServerParts = {},
): Promise<Server> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-sim-server-'));
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, sim.caPem);
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    DNSPLANE_DATA_DIR: dir,
    DNSPLANE_LISTEN: '127.0.0.1:0',
    ...simulatorEnv(sim, caFile),
    DNSPLANE_OVH_RATE: '1000',
    ...env,
  });
  const server = await startServer(config, log, parts).catch((e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  const close = server.close.bind(server);
  return {
    ...server,
    async close() {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A ZoneService client (Connect over HTTP/1.1, binary unless useBinaryFormat is false) for a server
 * (anything with its url), with a bearer token.
 */
export function zoneClientFor(server: Pick<Server, 'url'>, token: string, opts: { useBinaryFormat?: boolean } = {}): Client<typeof ZoneService> {
  return createClient(ZoneService, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', ...opts, interceptors: [bearer(token)] }));
}

/** A client of any service of a server (Connect over HTTP/1.1), with a bearer token. */
export function serviceClient<S extends DescService>(service: S, server: Pick<Server, 'url'>, token: string): Client<S> {
  return createClient(service, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', interceptors: [bearer(token)] }));
}

/** A client interceptor sending `Authorization: Bearer <token>` (no token: no header). */
export function bearer(token: string | undefined): Interceptor {
  return (next) => (req) => {
    if (token !== undefined) req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
}

/** A pino logger that keeps every line it writes (parsed), for tests that assert logs. */
export function memoryLogger(level = 'info'): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level },
    {
      write(chunk: string) {
        lines.push(JSON.parse(chunk) as Record<string, unknown>);
      },
    },
  );
  return { log, lines };
}
