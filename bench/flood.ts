/**
 * bench/flood: a good client's latency while many clients flood bad tokens (`npm run bench:flood`),
 * and many good tenants behind one address while one stale token retries from it.
 *
 * One server (the OVH simulator, Postgres from DATABASE_URL or embedded), one zone of R record sets
 * owned by the good tenant. The good client calls Records (Connect, HTTP/1.1, one call at a time) N
 * times: first on a quiet server, then while F clients (a worker thread) loop bad-token ListZones calls
 * with 64 KiB bodies, twice: with the failed-login limiter as configured by default, and with it effectively off
 * (a burst no flood reaches: what dnsplane did before it had one). Prints p50/p95, the ratio to quiet,
 * the flood's answers by code, and how many log lines the flood wrote at info or above.
 *
 * Then the ingress case (issue 41): T tenants with valid tokens call from one address (as every cluster
 * does behind one ingress), T/2 of them having polled before; one cluster whose token was rotated keeps
 * retrying with the old one from that same address, as fast as it is answered. Each tenant polls Records
 * P times; printed: how many tenants were answered every time, the share of polls answered, p50/p99,
 * against the same polls with nobody retrying.
 *
 *   FLOOD_TENANTS   T, default 40
 *   FLOOD_POLLS     P, polls per tenant, default 10
 *   FLOOD_CLIENTS   F, default 200
 *   FLOOD_CALLS     N, good-client calls per phase, default 300
 *   FLOOD_RECORDS   R, default 50
 *   DATABASE_URL    a Postgres server to create the bench database on (dropped at the end)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import pino from 'pino';
import { loadConfig } from '../src/config/config.js';
import { createTenant, rotateTenantToken } from '../src/core/tenants/tenants.js';
import { Policy, type ZoneService } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import { startServer, type Server } from '../src/server/server.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { benchDatabase, writeSimulatorCa } from './lib.js';

const F = Number(process.env['FLOOD_CLIENTS'] ?? 200);
const N = Number(process.env['FLOOD_CALLS'] ?? 300);
const R = Number(process.env['FLOOD_RECORDS'] ?? 50);
const T = Number(process.env['FLOOD_TENANTS'] ?? 40);
const P = Number(process.env['FLOOD_POLLS'] ?? 10);
const ZONE = 'flood.bench';

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * F loops of bad-token ListZones calls over HTTP/1.1 (fetch), each with a 64 KiB JSON body, as fast as
 * answers come (Retry-After ignored, as a flooder would), each with a made-up token or all with
 * `token`. stop() returns the answers by status.
 */
const FLOOD_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, clients, token } = workerData;
const body = JSON.stringify({ pad: 'x'.repeat(64 * 1024) });
const counts = {};
let stop = false;
parentPort.on('message', () => { stop = true; });
const loops = Array.from({ length: clients }, async (_, i) => {
  while (!stop) {
    try {
      const res = await fetch(url + '/dnsplane.v1.ZoneService/ListZones', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer ' + (token ?? 'dnsp_bad' + i) }, body });
      await res.arrayBuffer();
      counts[res.status] = (counts[res.status] || 0) + 1;
    } catch (e) {
      counts.error = (counts.error || 0) + 1;
    }
  }
});
Promise.all(loops).then(() => parentPort.postMessage(counts));
`;

function startFlood(url: string, clients: number, token?: string): { stop(): Promise<Map<string, number>> } {
  const worker = new Worker(FLOOD_WORKER, { eval: true, workerData: { url, clients, token } });
  return {
    stop: () =>
      new Promise((resolve, reject) => {
        worker.once('message', (counts: Record<string, number>) => {
          void worker.terminate();
          resolve(new Map(Object.entries(counts).map(([k, v]) => [`HTTP ${k}`, v])));
        });
        worker.once('error', reject);
        worker.postMessage('stop');
      }),
  };
}

interface Phase {
  name: string;
  p50: number;
  p95: number;
  flood: Map<string, number>;
  logLines: number;
}

/** One server on the simulator and a fresh database, its logger counting lines at info or above; `run` on it, then all stopped. */
async function onServer<T>(env: Record<string, string>, run: (server: Server, lines: { count: number }) => Promise<T>): Promise<T> {
  const sim = await OvhSimulator.start({ zones: { [ZONE]: [] } });
  const db = await benchDatabase('dnsplane_flood');
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-flood-'));
  const caFile = writeSimulatorCa(sim, dir);
  const lines = { count: 0 };
  const log = pino(
    { level: 'info' },
    new Writable({
      write: (chunk: Buffer, _e, cb) => {
        lines.count += chunk.toString().split('\n').filter(Boolean).length;
        cb();
      },
    }),
  );
  const server = await startServer(
    loadConfig({
      ...(db.url ? { DATABASE_URL: db.url } : {}),
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      ...simulatorEnv(sim, caFile),
      DNSPLANE_OVH_RATE: '1000',
      DNSPLANE_DRIFT_INTERVAL: 'off',
      // Every flooder comes from 127.0.0.1: the connection cap per address would refuse most of them
      // before the login limiter this bench measures sees them.
      DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS: String(F + T + 16),
      ...env,
    }),
    log,
  ).catch(async (e: unknown) => {
    await sim.stop();
    throw e;
  });
  try {
    return await run(server, lines);
  } finally {
    await server.close();
    await sim.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** R record sets in the zone, owned by a tenant of that name; its Records client. */
async function goodTenant(server: Server, name: string): Promise<Client<typeof ZoneService>> {
  const { token } = await createTenant(server.ctx.pool, { name, zones: [ZONE] });
  const good = zoneClientFor(server, token);
  const endpoints = Array.from({ length: R }, (_, i) => ({
    dnsName: `h${i}.${name}.${ZONE}`,
    recordType: 'A',
    targets: [`10.0.${i >> 8}.${i & 255}`],
    ttl: 300,
    setIdentifier: '',
    labels: {},
  }));
  await good.apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints } } } } });
  return good;
}

function phase(name: string, env: Record<string, string>, flood: boolean): Promise<Phase> {
  return onServer(env, async (server, lines) => {
    const good = await goodTenant(server, 'good');
    for (let i = 0; i < 20; i++) await good.records({}); // warm up
    lines.count = 0;
    // The flood runs in a worker thread (its own event loop), so that it competes with the server for
    // the CPU as another process would, not for this event loop.
    const worker = flood ? startFlood(server.url, F) : undefined;
    if (flood) await new Promise((r) => setTimeout(r, 1000)); // let the flood build up
    const ms: number[] = [];
    for (let i = 0; i < N; i++) {
      const t = performance.now();
      await good.records({});
      ms.push(performance.now() - t);
    }
    const counts = worker ? await worker.stop() : new Map<string, number>();
    ms.sort((a, b) => a - b);
    return { name, p50: pct(ms, 50), p95: pct(ms, 95), flood: counts, logLines: lines.count };
  });
}

interface IngressPhase {
  name: string;
  /** Tenants whose every poll was answered. */
  tenantsAnswered: number;
  polls: number;
  answered: number;
  /** Refusals by Connect code. */
  refused: Map<string, number>;
  p50: number;
  p99: number;
  stale: Map<string, number>;
}

/**
 * T tenants on one address (127.0.0.1, as behind one ingress), half of them polled once before; with
 * `stale`, a tenant whose token was rotated retries with the old one (one loop, answers not waited
 * for beyond their arrival) while every tenant polls Records P times, all tenants at once.
 */
function ingressPhase(name: string, stale: boolean): Promise<IngressPhase> {
  return onServer({}, async (server) => {
    const tenants = await Promise.all(Array.from({ length: T }, (_, i) => goodTenant(server, `c${i}`)));
    for (const t of tenants.slice(0, T / 2)) await t.records({});
    await createTenant(server.ctx.pool, { name: 'rotated', zones: [ZONE] });
    const { token: oldToken } = await rotateTenantToken(server.ctx.pool, 'rotated');
    await rotateTenantToken(server.ctx.pool, 'rotated');
    const worker = stale ? startFlood(server.url, 1, oldToken) : undefined;
    if (worker) await new Promise((r) => setTimeout(r, 1000)); // its burst spent
    const ms: number[] = [];
    const refused = new Map<string, number>();
    let tenantsAnswered = 0;
    await Promise.all(
      tenants.map(async (t) => {
        let all = true;
        for (let i = 0; i < P; i++) {
          const started = performance.now();
          try {
            await t.records({});
            ms.push(performance.now() - started);
          } catch (e) {
            all = false;
            const code = e instanceof ConnectError ? Code[e.code] : 'error';
            refused.set(code, (refused.get(code) ?? 0) + 1);
          }
        }
        if (all) tenantsAnswered++;
      }),
    );
    const counts = worker ? await worker.stop() : new Map<string, number>();
    ms.sort((a, b) => a - b);
    return { name, tenantsAnswered, polls: T * P, answered: ms.length, refused, p50: pct(ms, 50), p99: pct(ms, 99), stale: counts };
  });
}

async function main(): Promise<void> {
  console.log(`bench/flood: ${F} bad-token clients, ${N} good Records calls per phase, zone of ${R} record sets; node ${process.version}`);
  const quiet = await phase('quiet', {}, false);
  const limited = await phase('flood, limiter on (defaults)', {}, true);
  const unlimited = await phase('flood, limiter off (burst 1e9)', { DNSPLANE_LOGIN_BURST: '1000000000' }, true);
  console.log('');
  console.log('| phase | good p50 ms | good p95 ms | p50 / quiet | flood answers | log lines (info+) |');
  console.log('|---|--:|--:|--:|---|--:|');
  for (const p of [quiet, limited, unlimited]) {
    const answers = [...p.flood.entries()].map(([k, v]) => `${k} ${v}`).join(', ') || '-';
    console.log(`| ${p.name} | ${p.p50.toFixed(1)} | ${p.p95.toFixed(1)} | ${(p.p50 / quiet.p50).toFixed(2)} | ${answers} | ${p.logLines} |`);
  }
  console.log('');
  console.log(`${T} tenants on one address, ${T / 2} of them polled before, ${P} Records polls each, all tenants at once:`);
  const calm = await ingressPhase('nobody retrying', false);
  const retrying = await ingressPhase('one stale token retrying', true);
  console.log('');
  console.log('| phase | tenants answered | polls answered | p50 ms | p99 ms | p99 / calm | refused | stale token answers |');
  console.log('|---|--:|--:|--:|--:|--:|---|---|');
  for (const p of [calm, retrying]) {
    const refused = [...p.refused.entries()].map(([k, v]) => `${k} ${v}`).join(', ') || '-';
    const staleAnswers = [...p.stale.entries()].map(([k, v]) => `${k} ${v}`).join(', ') || '-';
    console.log(
      `| ${p.name} | ${p.tenantsAnswered} of ${T} | ${((100 * p.answered) / p.polls).toFixed(1)} % | ${p.p50.toFixed(1)} | ${p.p99.toFixed(1)} | ${(p.p99 / calm.p99).toFixed(2)} | ${refused} | ${staleAnswers} |`,
    );
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
