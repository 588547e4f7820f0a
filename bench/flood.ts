/**
 * bench/flood: a good client's latency while many clients flood bad tokens (`npm run bench:flood`).
 *
 * One server (the OVH simulator, Postgres from DATABASE_URL or embedded), one zone of R record sets
 * owned by the good tenant. The good client calls Records (Connect, HTTP/1.1, one call at a time) N
 * times: first on a quiet server, then while F clients (a worker thread) loop bad-token ListZones calls
 * with 64 KiB bodies, twice: with the failed-login limiter as configured by default, and with it effectively off
 * (a burst no flood reaches: what dnsplane did before it had one). Prints p50/p95, the ratio to quiet,
 * the flood's answers by code, and how many log lines the flood wrote at info or above.
 *
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
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { Policy } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import { startServer } from '../src/server.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { benchDatabase, writeSimulatorCa } from './lib.js';

const F = Number(process.env['FLOOD_CLIENTS'] ?? 200);
const N = Number(process.env['FLOOD_CALLS'] ?? 300);
const R = Number(process.env['FLOOD_RECORDS'] ?? 50);
const ZONE = 'flood.bench';

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * F loops of bad-token ListZones calls over HTTP/1.1 (fetch), each with a 64 KiB JSON body, as fast as
 * answers come (Retry-After ignored, as a flooder would). stop() returns the answers by status.
 */
const FLOOD_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, clients } = workerData;
const body = JSON.stringify({ pad: 'x'.repeat(64 * 1024) });
const counts = {};
let stop = false;
parentPort.on('message', () => { stop = true; });
const loops = Array.from({ length: clients }, async (_, i) => {
  while (!stop) {
    try {
      const res = await fetch(url + '/dnsplane.v1.ZoneService/ListZones', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer dnsp_bad' + i }, body });
      await res.arrayBuffer();
      counts[res.status] = (counts[res.status] || 0) + 1;
    } catch (e) {
      counts.error = (counts.error || 0) + 1;
    }
  }
});
Promise.all(loops).then(() => parentPort.postMessage(counts));
`;

function startFlood(url: string, clients: number): { stop(): Promise<Map<string, number>> } {
  const worker = new Worker(FLOOD_WORKER, { eval: true, workerData: { url, clients } });
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

async function phase(name: string, env: Record<string, string>, flood: boolean): Promise<Phase> {
  const sim = await OvhSimulator.start({ zones: { [ZONE]: [] } });
  const db = await benchDatabase('dnsplane_flood');
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-flood-'));
  const caFile = writeSimulatorCa(sim, dir);
  let logLines = 0;
  const log = pino(
    { level: 'info' },
    new Writable({
      write: (chunk: Buffer, _e, cb) => {
        logLines += chunk.toString().split('\n').filter(Boolean).length;
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
      DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS: String(F + 16),
      ...env,
    }),
    log,
  ).catch(async (e: unknown) => {
    await sim.stop();
    throw e;
  });
  try {
    const { token } = await createTenant(server.ctx.pool, { name: 'good', zones: [ZONE] });
    const good = zoneClientFor(server, token);
    const endpoints = Array.from({ length: R }, (_, i) => ({
      dnsName: `h${i}.${ZONE}`,
      recordType: 'A',
      targets: [`10.0.${i >> 8}.${i & 255}`],
      ttl: 300,
      setIdentifier: '',
      labels: {},
    }));
    await good.apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints } } } } });
    for (let i = 0; i < 20; i++) await good.records({}); // warm up
    logLines = 0;
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
    return { name, p50: pct(ms, 50), p95: pct(ms, 95), flood: counts, logLines };
  } finally {
    await server.close();
    await sim.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
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
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
