/**
 * bench/worst — the worst request (`npm run bench:worst`; not part of `npm test`).
 *
 * A shared service is as good as its worst request: while one request holds the event loop, every
 * tenant's call, every probe and every Postgres and OVH answer of the process waits. This bench sends
 * each kind of request dnsplane serves, at its limit, to a real `dnsplane serve` (a child process, its
 * own event loop) on real Postgres with the OVH simulator over HTTPS, one request at a time, and reads
 * from the server's /metrics the worst event-loop delay over exactly that request
 * (nodejs_eventloop_lag_max_seconds, reset at each scrape) and its CPU. It prints them worst first.
 * The goal (issue 10) is that no single request holds the loop more than 50 ms.
 *
 * The zone is big on purpose: WORST_RECORDS records seeded in OVH (unowned), plus the 998 record sets
 * tenant A creates; a Plan's size is the per-request limit (5,000 endpoints), the webhook's bodies
 * are its limits (50,000 endpoints), a YAML document is near ParseDesiredState's 2 MiB.
 *
 * Environment (all optional):
 *   WORST_RECORDS=20000   records seeded in the zone before the server's first sync
 *   WORST_APPLIES=1       0 skips the two applies (a stored 5,000-change plan, 5,000 webhook
 *                         creates: ~10 s each)
 *   WORST_ONLY=text       only the requests whose name holds text (any case); a Plan still runs,
 *                         the stored plan the GetPlan and Apply rows use
 *   BENCH_CPU_PROF=dir    the server writes a V8 CPU profile into dir when it stops
 *   BENCH_NODE_OPTIONS    NODE_OPTIONS for the server (e.g. --require a preload that records long tasks)
 *   DATABASE_URL          a Postgres server to create the bench database on (dropped at the end)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { createTenant } from '../src/core/tenants/tenants.js';
import { AdminService } from '../src/gen/dnsplane/v1/admin_pb.js';
import { Policy, ZoneService, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';
import { bearer, simulatorEnv } from '../test/helpers/sim-server.js';
import { benchDatabaseOrEmbedded, positiveEnv, startServerProcess, writeSimulatorCa } from './lib.js';
import { messageOf } from '../src/lib/error-message.js';

const RECORDS = Math.floor(positiveEnv('WORST_RECORDS', 20_000));
const APPLIES = process.env['WORST_APPLIES'] !== '0';
const ONLY = process.env['WORST_ONLY']?.toLowerCase();
const ZONE = 'big.bench';
const OWNED = 998;
const GOAL_MS = 50;
const MEDIA = 'application/external.dns.webhook+json;version=1';

const ip = (prefix: string, n: number) => `${prefix}.${(n >> 8) & 255}.${n & 255}`;
const note = (line: string) => console.error(`  ${line}`);

/** n endpoints: A's 998 sets first (every other one with a new target: updates), then new names (creates). */
function desired(n: number): Endpoint[] {
  return Array.from(
    { length: n },
    (_, i) => ({ dnsName: `host${i}.${ZONE}`, recordType: 'A', targets: [ip(i < OWNED && i % 2 === 1 ? '10.30' : '10.20', i)], ttl: 3600 }) as Endpoint,
  );
}

function planRequest(endpoints: Endpoint[], force = false) {
  return { policy: Policy.SYNC, force, input: { case: 'desired' as const, value: { zones: [ZONE], endpoints } } };
}

/** n webhook endpoints (Go's JSON field names), with new names. */
function wireEndpoints(n: number, prefix: string, target = (i: number) => ip('10.40', i % 65_000)) {
  return Array.from({ length: n }, (_, i) => ({ dnsName: `${prefix}${i}.${ZONE}`, recordType: 'A', targets: [target(i)], recordTTL: 300 }));
}

/** A YAML desired-state document of n endpoints (the format of `dnsplane plan -f`). */
function yamlDocument(n: number): string {
  return desired(n)
    .map((e) => `- dnsName: ${e.dnsName}\n  recordType: A\n  targets: [${e.targets[0]}]\n  ttl: 3600\n`)
    .join('');
}

interface Row {
  request: string;
  limit: string;
  lagMs: number;
  wallMs: number;
  cpuMs: number;
  outcome: string;
}

async function main(): Promise<void> {
  const started = performance.now();
  const load = loadavg();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-worst-'));
  const seeded = Array.from({ length: RECORDS }, (_, i) => ({ subDomain: `seed${i}`, fieldType: 'A', target: ip('10.50', i % 65_000), ttl: 300 }));
  const sim = await OvhSimulator.start({ zones: { [ZONE]: seeded } });
  const caFile = writeSimulatorCa(sim, dir);
  const database = await benchDatabaseOrEmbedded('dnsplane_bench_worst', path.join(dir, 'pg'));
  const db = await store.openDatabase({ databaseUrl: database.url, dataDir: dir });
  let server: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  const rows: Row[] = [];
  try {
    await store.migrate(db.pool);
    const a = (await createTenant(db.pool, { name: 'tenant-a', zones: [ZONE] })).token;
    const ops = (await createTenant(db.pool, { name: 'ops', zones: [ZONE], admin: true })).token;
    server = await startServerProcess({
      DATABASE_URL: database.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_ZONES: ZONE,
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_OVH_RATE: '100000',
      DNSPLANE_LOG_LEVEL: 'info',
      ...simulatorEnv(sim, caFile),
      ...(process.env['BENCH_NODE_OPTIONS'] ? { NODE_OPTIONS: process.env['BENCH_NODE_OPTIONS'] } : {}),
    });
    const { url } = server;
    const hook = server.webhookUrl!;
    const connect = (token: string, binary: boolean) =>
      createConnectTransport({ baseUrl: url, httpVersion: '1.1', useBinaryFormat: binary, interceptors: [bearer(token)] });
    const json = createClient(ZoneService, connect(a, false));
    const binary = createClient(ZoneService, connect(a, true));
    const grpc = createClient(ZoneService, createGrpcTransport({ baseUrl: url, interceptors: [bearer(a)] }));
    const admin = createClient(AdminService, connect(ops, true));
    const basic = `Basic ${Buffer.from(`tenant-a:${a}`).toString('base64')}`;
    /** A request's body as text, without decoding it (the bench's own decoding is not what is measured). */
    const raw = async (at: string, init: RequestInit): Promise<string> => {
      const res = await fetch(at, init);
      const text = await res.text();
      return `${res.status}${res.ok ? '' : ` ${text.slice(0, 80)}`}`;
    };
    const jsonCall = (service: string, method: string, token: string, body: unknown) =>
      raw(`${url}/dnsplane.v1.${service}/${method}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const webhook = (method: 'GET' | 'POST', p: string, body?: unknown) =>
      raw(`${hook}${p}`, {
        method,
        headers: { authorization: basic, accept: MEDIA, ...(body ? { 'content-type': MEDIA } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });

    const metrics = async (): Promise<{ lagMs: number; cpuMs: number }> => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      return { lagMs: value('nodejs_eventloop_lag_max_seconds') * 1000, cpuMs: value('process_cpu_seconds_total') * 1000 };
    };
    const measure = async (request: string, limit: string, fn: () => Promise<unknown>): Promise<void> => {
      if (ONLY && !request.toLowerCase().includes(ONLY)) return;
      // A scrape resets the lag figures; a quiet moment first, so that nothing before is counted.
      await new Promise((r) => setTimeout(r, 200));
      const before = await metrics();
      const t = performance.now();
      let outcome: string;
      try {
        const r = await fn();
        outcome = typeof r === 'string' ? r : 'ok';
      } catch (e) {
        outcome = messageOf(e);
      }
      const wallMs = performance.now() - t;
      const after = await metrics();
      outcome = outcome.replace(/\s+/g, ' ').slice(0, 90);
      rows.push({ request, limit, lagMs: after.lagMs, wallMs, cpuMs: after.cpuMs - before.cpuMs, outcome });
      note(`${request}: ${Math.round(after.lagMs)} ms worst delay, ${Math.round(wallMs)} ms, ${outcome}`);
    };
    const zoneSize = `${(RECORDS + OWNED + 2).toLocaleString('en')}-record zone`;

    await measure('Records, first (the cold sync of the zone)', zoneSize, () => json.records({ zones: [ZONE] }));
    await measure('Records JSON, all record sets, first of a generation', zoneSize, () =>
      jsonCall('ZoneService', 'Records', a, { zones: [ZONE], includeForeign: true }),
    );
    await measure('Records JSON, all record sets, warm', zoneSize, () => jsonCall('ZoneService', 'Records', a, { zones: [ZONE], includeForeign: true }));
    await measure('Records binary Connect, all record sets, first', zoneSize, () => binary.records({ zones: [ZONE], includeForeign: true }));
    await json.apply({ source: { case: 'plan', value: planRequest(desired(OWNED).map((e, i) => ({ ...e, targets: [ip('10.20', i)] }) as Endpoint)) } });
    await measure('webhook GET /records, first of a generation', zoneSize, () => webhook('GET', '/records'));
    let planId = '';
    await measure('Plan, Connect JSON', '5,000 endpoints', async () => {
      planId = (await json.plan(planRequest(desired(5000), true))).plan!.id;
    });
    if (planId === '') planId = (await json.plan(planRequest(desired(5000), true))).plan!.id;
    await measure('Plan, binary Connect', '5,000 endpoints', () => binary.plan(planRequest(desired(5000))));
    await measure('Plan, gRPC', '5,000 endpoints', () => grpc.plan(planRequest(desired(5000))));
    await measure('Plan, every endpoint invalid', '5,000 endpoints', () =>
      json.plan(planRequest(desired(5000).map((e) => ({ ...e, targets: ['not-an-ip'] }) as Endpoint))),
    );
    await measure('AdminService.PlanAs', '5,000 endpoints', () => admin.planAs({ tenant: 'tenant-a', request: planRequest(desired(5000)) }));
    await measure('AdminService.GetPlan, Connect JSON', '4,501 changes', () => jsonCall('AdminService', 'GetPlan', ops, { id: planId }));
    await measure('AdminService.GetPlan, binary Connect', '4,501 changes', () => admin.getPlan({ id: planId }));
    await measure('ParseDesiredState, YAML', '5,000 endpoints', () => admin.parseDesiredState({ document: yamlDocument(5000) }));
    const big = yamlDocument(Math.floor((2 * 1000 * 1000) / 90)); // under the 2 MiB limit
    await measure('ParseDesiredState, YAML (refused: too many)', `${(big.length / 2 ** 20).toFixed(1)} MB`, () => admin.parseDesiredState({ document: big }));
    await measure('webhook POST /adjustendpoints', '50,000 endpoints', () => webhook('POST', '/adjustendpoints', wireEndpoints(50_000, 'w')));
    await measure('webhook POST /records, every entry invalid', '50,000 creates', () =>
      webhook('POST', '/records', { Create: wireEndpoints(50_000, 'w', () => 'bad') }),
    );
    await measure('webhook POST /records, nothing to delete', '50,000 deletes', () => webhook('POST', '/records', { Delete: wireEndpoints(50_000, 'w') }));
    await measure('AdminService.ListOwnership, unowned included', zoneSize, () => admin.listOwnership({ zone: ZONE, includeUnowned: true }));
    if (APPLIES) {
      await measure('Apply of the stored plan', '4,501 changes', () => json.apply({ source: { case: 'planId', value: planId }, force: true }));
      await measure('webhook POST /records', '5,000 creates', () => webhook('POST', '/records', { Create: wireEndpoints(5000, 'new') }));
      await measure('AdminService.ListJournal', '1,000 entries', () => jsonCall('AdminService', 'ListJournal', ops, { limit: 1000 }));
    }
  } finally {
    await server?.stop();
    await db.close();
    await database.drop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  rows.sort((x, y) => y.lagMs - x.lagMs);
  const over = rows.filter((r) => r.lagMs > GOAL_MS);
  console.log(`bench/worst: every kind of request at its limit, one at a time, to dnsplane serve (a child process)`);
  console.log(
    `node ${process.version}; ${availableParallelism()} cores; bench time ${Math.round((performance.now() - started) / 1000)} s; load average at the start ${load.map((l) => l.toFixed(1)).join(' ')}`,
  );
  console.log('');
  console.log('| request | at | worst event-loop delay | server time | server CPU | answer |');
  console.log('|---|---|--:|--:|--:|---|');
  for (const r of rows)
    console.log(`| ${r.request} | ${r.limit} | ${Math.round(r.lagMs)} ms | ${Math.round(r.wallMs)} ms | ${Math.round(r.cpuMs)} ms | ${r.outcome} |`);
  console.log('');
  console.log(
    over.length === 0
      ? `No request held the event loop more than ${GOAL_MS} ms.`
      : `${over.length} request(s) held the event loop more than ${GOAL_MS} ms: ${over.map((r) => r.request).join('; ')}.`,
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
