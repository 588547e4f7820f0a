/**
 * gRPC tooling, checked with an independent client (`buf curl`, a Go program): server reflection
 * (grpc.reflection.v1 and v1alpha) lists the services and describes them well enough to call an RPC
 * without the .proto files; grpc.health.v1 Check and Watch say SERVING only while the database
 * answers (a TCP proxy in front of Postgres is cut and restored) and NOT_SERVING once the server
 * stops.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { createConnectRouter } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerServices } from '../../src/api/services.js';
import type { Server } from '../../src/server/server.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { startServerOn } from '../helpers/sim-server.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { until } from '../helpers/until.js';

const BUF = path.resolve('node_modules/.bin/buf');
const ZONE = 'example.com';
const TOOLING = ['grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** buf curl, run asynchronously (the server answers from this very process). */
function bufCurl(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(BUF, ['curl', ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** The services and methods the API registers, from the real router (a service added later is expected too). */
function apiRoutes(h: Harness): { services: string[]; methods: string[] } {
  const router = registerServices(createConnectRouter(), h.server.ctx);
  return {
    services: [...new Set(router.handlers.map((x) => x.service.typeName))],
    methods: router.handlers.map((x) => x.requestPath.slice(1)),
  };
}

describe('server reflection', () => {
  let h: Harness;
  let alice: string;

  beforeAll(async () => {
    h = await startHarness({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] } });
    alice = await h.tenant('alice', [ZONE]);
    await h.zoneClient(alice).records({ zones: [ZONE] }); // synced: ListZones carries a Timestamp
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each(['grpc-v1', 'grpc-v1alpha'])('%s lists every service without a token', async (protocol) => {
    const run = await bufCurl(['--reflect-protocol', protocol, '--list-services', h.server.url]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const listed = run.stdout.trim().split('\n').sort();
    expect(listed).toEqual([...apiRoutes(h).services, ...TOOLING].sort());
  });

  it('describes every method of the API (the whole schema, imports included)', async () => {
    const run = await bufCurl(['--list-methods', h.server.url]);
    expect(run.code, run.stderr).toBe(0);
    const listed = run.stdout.trim().split('\n');
    for (const m of apiRoutes(h).methods) expect(listed).toContain(m);
    expect(listed).toContain('grpc.health.v1.Health/Watch');
  });

  it.each([
    ['grpc', 'grpc-v1'],
    ['connect', 'grpc-v1alpha'],
    ['grpcweb', 'grpc-v1'],
  ])('calls ZoneService/ListZones over %s with the schema from reflection (%s)', async (protocol, reflect) => {
    const run = await bufCurl([
      '--protocol',
      protocol,
      '--http2-prior-knowledge',
      '--reflect-protocol',
      reflect,
      '-H',
      `Authorization: Bearer ${alice}`,
      '-d',
      '{}',
      `${h.server.url}/dnsplane.v1.ZoneService/ListZones`,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const got = JSON.parse(run.stdout) as { zones: Array<{ name: string; generation: string; lastSync: string; recordCount: number }>; tenant: string };
    const want = await h.zoneClient(alice).listZones({});
    expect(got.tenant).toBe('alice');
    expect(got.zones.map((z) => z.name)).toEqual(want.zones.map((z) => z.name));
    expect(got.zones[0]!.generation).toBe(String(want.zones[0]!.generation));
    // google.protobuf.Timestamp came from reflection too (a dependency file), rendered as RFC 3339.
    expect(got.zones[0]!.lastSync).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('reflection needs no token, the API still does', async () => {
    const run = await bufCurl(['--protocol', 'grpc', '-d', '{}', `${h.server.url}/dnsplane.v1.ZoneService/ListZones`]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/unauthenticated/i);
  });

  it('answers an unknown symbol with NOT_FOUND, not a broken stream', async () => {
    const run = await bufCurl(['--protocol', 'grpc', '-d', '{}', `${h.server.url}/dnsplane.v1.NoSuchService/Nothing`]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/dnsplane\.v1\.NoSuchService/);
  });
});

describe('grpc.health.v1', () => {
  let sim: OvhSimulator;
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: Server | undefined;

  const check = async (service = ''): Promise<Run> =>
    bufCurl(['--protocol', 'grpc', '-d', JSON.stringify({ service }), `${server!.url}/grpc.health.v1.Health/Check`]);
  const status = async (): Promise<string> => {
    const run = await check();
    return run.code === 0 ? (JSON.parse(run.stdout) as { status: string }).status : `error: ${run.stderr.trim()}`;
  };
  const readyz = async () => (await fetch(`${server!.url}/readyz`)).status;

  beforeAll(async () => {
    sim = await OvhSimulator.start({ zones: { [ZONE]: [] } });
    db = await testDatabase();
    proxy = await startTcpProxy(db.url);
    server = await startServerOn(sim, proxy.url, { DNSPLANE_DRIFT_INTERVAL: 'off' });
  });
  afterAll(async () => {
    await server?.close();
    await proxy?.close();
    await sim?.stop();
    await db?.drop();
  });

  it('Check: SERVING for the server and for each service it serves, NOT_FOUND for others', async () => {
    expect(JSON.parse((await check()).stdout)).toEqual({ status: 'SERVING' });
    expect(JSON.parse((await check('dnsplane.v1.ZoneService')).stdout)).toEqual({ status: 'SERVING' });
    const unknown = await check('no.such.Service');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/not[_ ]found/i);
    expect(unknown.stderr).toContain('no.such.Service');
  });

  it('Check and Watch follow the database: NOT_SERVING while it is unreachable, SERVING again after', async () => {
    // Watch, over a separate buf curl that stays connected and prints each status as it comes.
    const watch = spawn(BUF, ['curl', '--protocol', 'grpc', '-d', '{}', `${server!.url}/grpc.health.v1.Health/Watch`]);
    let out = '';
    let err = '';
    watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
    watch.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => watch.once('exit', (code) => resolve(code)));
    const seen = () => [...out.matchAll(/"status":\s*"(\w+)"/g)].map((m) => m[1]);
    try {
      await until('Watch to say SERVING', () => seen().length >= 1);
      expect(seen()).toEqual(['SERVING']);

      proxy.cut();
      await until('Check to say NOT_SERVING', async () => (await status()) === 'NOT_SERVING');
      expect(await readyz()).toBe(503);
      await until('Watch to say NOT_SERVING', () => seen().length >= 2);

      proxy.restore();
      await until('Check to say SERVING again', async () => (await status()) === 'SERVING');
      expect(await readyz()).toBe(200);
      await until('Watch to say SERVING again', () => seen().length >= 3);

      // Stopping: the watcher hears NOT_SERVING and its stream ends, so the shutdown does not wait on it.
      const closing = server!.close();
      server = undefined;
      expect(await exited, err).toBe(0);
      await closing;
      expect(seen()).toEqual(['SERVING', 'NOT_SERVING', 'SERVING', 'NOT_SERVING']);
    } finally {
      watch.kill();
    }
  }, 120_000);
});
