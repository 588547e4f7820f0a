/**
 * bench/propagation — what knowing when a change is live costs (issue 24). `npm run bench:propagation`;
 * not part of `npm test`.
 *
 * A real server in this process (real Postgres: a fresh database on DATABASE_URL's server, else an
 * embedded one) over the OVH simulator, whose two authoritative servers (dns1 and ns1) publish each
 * refresh after a lag set exactly (`sim.propagation.setLag`): the slower one, ns1, after LAG, the other
 * after LAG / 2. dnsplane's prober asks them directly (DNSPLANE_AUTHORITATIVE_SERVERS). For each LAG
 * and each N, T times: one Apply of N new record sets (without a wait), then GetApply with
 * WAIT_VISIBLE on its journal id until it answers visible. Printed, per (N, LAG):
 *
 *  - DNS queries per visible change: the queries both simulator servers received over the window, / N
 *    (median and max over the T runs);
 *  - CPU per visible change: process.cpuUsage() (user + system) over the window — from the Apply's
 *    answer to the wait's — / N. It is this whole process: the prober, the wait, and the simulator's
 *    DNS servers answering the queries (an upper bound of the prober's share). Printed as measured
 *    and less what the idle process spends over as long (its timers, the LISTEN heartbeats: measured
 *    once, over IDLE_MS of nothing);
 *  - how long after the slower server published dnsplane noticed: visible_at minus the moment the
 *    simulator's slower server started answering the change (its delivery log), median and max. The
 *    goal is under 2 s at the median.
 *
 * Environment (all optional):
 *   BENCH_PROP_LAGS=2000,8000   the slower server's lags, ms     BENCH_PROP_N=1,50   record sets per apply
 *   BENCH_PROP_T=5              runs per (N, LAG)                DATABASE_URL        as the other benches
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import pino from 'pino';
import { loadConfig } from '../src/config/config.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { VisibilityState, Wait } from '../src/gen/dnsplane/v1/visibility_pb.js';
import { EndpointSchema } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import { startServer } from '../src/server/server.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { applyDesired } from '../test/helpers/zone-requests.js';
import { benchDatabaseOrEmbedded, positiveEnv, writeSimulatorCa } from './lib.js';

const ZONE = 'propagation.bench';

function intList(name: string, fallback: string): number[] {
  const raw = process.env[name] ?? fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < 1)) throw new Error(`${name}: expected positive integers, got "${raw}"`);
  return values;
}

const LAGS = intList('BENCH_PROP_LAGS', '2000,8000');
const SIZES = intList('BENCH_PROP_N', '1,50');
const T = positiveEnv('BENCH_PROP_T', 5);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const max = (xs: number[]) => Math.max(...xs);

/** How long the idle process is measured for its own CPU per ms. */
const IDLE_MS = 3000;

interface Run {
  queriesPerChange: number;
  cpuMsPerChange: number;
  /** cpuMsPerChange less the idle process's CPU over the same window. */
  cpuOverIdleMsPerChange: number;
  noticeMs: number;
  /** visible_at - published_at, for the record. */
  delayMs: number;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-propagation-'));
  const sim = await OvhSimulator.start({ zones: { [ZONE]: [] } });
  const db = await benchDatabaseOrEmbedded('dnsplane_bench_prop', path.join(dir, 'pg'));
  const caFile = writeSimulatorCa(sim, dir);
  const server = await startServer(
    loadConfig({
      DATABASE_URL: db.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_OVH_RATE: '1000',
      DNSPLANE_AUTHORITATIVE_SERVERS: sim.dnsServers.map((s) => `${s.host}:${s.port}`).join(','),
      ...simulatorEnv(sim, caFile),
    }),
    pino({ level: 'warn' }),
  );
  const { token } = await createTenant(server.ctx.pool, { name: 'bench', zones: [ZONE] });
  const client = zoneClientFor(server, token);
  const [fast, slow] = sim.dnsServers.map((s) => s.name) as [string, string];
  const rows: string[] = [];
  let serial = 0;
  const noticeMedians: number[] = [];
  let idleCpuPerMs = 0;
  try {
    // A first read syncs the zone (not measured); then the idle process's own CPU.
    await client.records({ zones: [ZONE] });
    const idleFrom = process.cpuUsage();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idle = process.cpuUsage(idleFrom);
    idleCpuPerMs = (idle.user + idle.system) / 1000 / IDLE_MS;
    for (const lag of LAGS) {
      sim.propagation.setLag(Math.round(lag / 2), fast);
      sim.propagation.setLag(lag, slow);
      for (const n of SIZES) {
        const runs: Run[] = [];
        for (let t = 0; t < T; t++) {
          serial++;
          const endpoints = Array.from({ length: n }, (_, i) =>
            create(EndpointSchema, { dnsName: `r${serial}-${i}.${ZONE}`, recordType: 'A', targets: [`192.0.2.${(i % 250) + 1}`], ttl: 60 }),
          );
          const res = await applyDesired(client, endpoints);
          const journalId = res.zones[0]!.journalId;
          const queriesBefore = sim.dnsQueries().reduce((a, b) => a + b, 0);
          const cpuBefore = process.cpuUsage();
          const windowFrom = performance.now();
          const got = await client.getApply({ journalId, wait: Wait.VISIBLE });
          const cpu = process.cpuUsage(cpuBefore);
          const windowMs = performance.now() - windowFrom;
          const queries = sim.dnsQueries().reduce((a, b) => a + b, 0) - queriesBefore;
          const v = got.visibility!;
          if (v.state !== VisibilityState.VISIBLE) throw new Error(`journal ${journalId}: ${VisibilityState[v.state]} (${v.reason})`);
          const publishedSerial = sim.soaSerial(ZONE);
          const reached = sim.propagation.deliveries().filter((d) => d.zone === ZONE && d.server === slow && d.serial === publishedSerial);
          if (reached.length !== 1) throw new Error(`the slower server's delivery of serial ${publishedSerial} not found`);
          runs.push({
            queriesPerChange: queries / n,
            cpuMsPerChange: (cpu.user + cpu.system) / 1000 / n,
            cpuOverIdleMsPerChange: ((cpu.user + cpu.system) / 1000 - idleCpuPerMs * windowMs) / n,
            noticeMs: timestampMs(v.visibleAt!) - reached[0]!.at,
            delayMs: timestampMs(v.visibleAt!) - timestampMs(v.publishedAt!),
          });
        }
        const notice = runs.map((r) => r.noticeMs);
        noticeMedians.push(median(notice));
        rows.push(
          [
            String(n).padStart(3),
            `${(lag / 1000).toFixed(0)} s`.padStart(5),
            `${median(runs.map((r) => r.queriesPerChange)).toFixed(2)} / ${max(runs.map((r) => r.queriesPerChange)).toFixed(2)}`.padStart(13),
            `${median(runs.map((r) => r.cpuMsPerChange)).toFixed(2)} / ${max(runs.map((r) => r.cpuMsPerChange)).toFixed(2)}`.padStart(15),
            `${median(runs.map((r) => r.cpuOverIdleMsPerChange)).toFixed(2)} / ${max(runs.map((r) => r.cpuOverIdleMsPerChange)).toFixed(2)}`.padStart(15),
            `${(median(notice) / 1000).toFixed(2)} / ${(max(notice) / 1000).toFixed(2)}`.padStart(13),
            `${(median(runs.map((r) => r.delayMs)) / 1000).toFixed(2)}`.padStart(9),
          ].join('  '),
        );
      }
    }
  } finally {
    await server.close();
    await sim.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nbench/propagation: T=${T} runs each; the slower server (ns1) publishes after LAG, the other after LAG / 2`);
  console.log(`idle process: ${(idleCpuPerMs * 1000).toFixed(1)} ms of CPU per second`);
  console.log(
    `${'  N'}  ${'  LAG'}  ${'queries/chg'.padStart(13)}  ${'CPU ms/chg'.padStart(15)}  ${'over idle'.padStart(15)}  ${'noticed after'.padStart(13)}  ${'pub->vis'.padStart(9)}`,
  );
  console.log(
    `${''.padStart(3)}  ${''.padStart(5)}  ${'median / max'.padStart(13)}  ${'median / max'.padStart(15)}  ${'median / max'.padStart(15)}  ${'median / max s'.padStart(13)}  ${'median s'.padStart(9)}`,
  );
  for (const r of rows) console.log(r);
  const worst = Math.max(...noticeMedians);
  console.log(
    `\nnoticed after the slower server published: worst median ${(worst / 1000).toFixed(2)} s (goal: under 2 s) ${worst < 2000 ? 'OK' : 'OVER THE GOAL'}`,
  );
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
