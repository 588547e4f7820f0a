/**
 * bench/failover — failover by health checks (issue 30). `npm run bench:failover`; not part of `npm test`.
 *
 * A real server in this process (real Postgres: a fresh database on DATABASE_URL's server, else an
 * embedded one) over the OVH simulator, whose two name servers publish a refresh after 200 ms and
 * 500 ms. Three parts:
 *
 *  1. Failover time. A shared `www` A set of two tenants, each target an HTTP server on a loopback
 *     address (127.0.0.2, 127.0.0.3, one port) with the check `http://:PORT/healthz`; the server's own
 *     checker runs on its timer (DNSPLANE_HEALTH_INTERVAL = BENCH_FO_INTERVAL, failures 3). N times:
 *     the first target's server is stopped; measured from that moment to its record gone from OVH
 *     (the simulator's published zone) and to both name servers answering without it; then it is
 *     started again and its return awaited (its flap count forgotten: each failure stands for a new
 *     one, else the third in 10 minutes would hold it down, as it should). Printed: median and max of both, against the bound
 *     interval x failures + one apply.
 *  2. CPU of checking 1,000 targets (50 exclusive sets of 20, HTTP servers in a child process on
 *     127.1.x.y): rounds run on demand (HealthChecker.runRound), this process's CPU (user + system) per
 *     round, and that as a share of one core at a round every 10 s. Postgres's own CPU is not counted.
 *  3. False withdrawals: the same 1,000 healthy targets checked every 10 s for BENCH_FO_SOAK with two
 *     busy-looping processes loading the machine; withdrawals (dnsplane_target_withdrawals_total:
 *     every one, also one restored before the end; the exclusive sets' targets are withdrawable,
 *     migrations/0022) and failed checks counted (goal: 0).
 *
 * Environment (all optional):
 *   BENCH_FO_N=20               failures measured in part 1     BENCH_FO_INTERVAL=1000   part 1's interval, ms
 *   BENCH_FO_SOAK=120000        part 3's length, ms             DATABASE_URL             as the other benches
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import pino from 'pino';
import { loadConfig } from '../src/config/config.js';
import { DEFAULT_HEALTH, HealthChecker } from '../src/core/health/checker.js';
import { coreWithdrawals } from '../src/core/health/mechanism.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { query } from '../src/dnsclient/index.js';
import { TYPE } from '../src/dns/wire/index.js';
import { EndpointSchema, Policy } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import { startServer } from '../src/server/server.js';
import * as store from '../src/store/index.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { benchDatabaseOrEmbedded, median, positiveEnv, writeSimulatorCa } from './lib.js';

const ZONE = 'failover.bench';
const SCALE = 'scale.bench';
const N = positiveEnv('BENCH_FO_N', 20);
const INTERVAL = positiveEnv('BENCH_FO_INTERVAL', 1000);
const SOAK = positiveEnv('BENCH_FO_SOAK', 120_000);
const FAILURES = 3;
const A = '127.0.0.2';
const B = '127.0.0.3';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what: string, fn: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return Date.now();
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function target(address: string, port: number): Promise<http.Server> {
  const server = http.createServer((req, res) => res.writeHead(req.url === '/healthz' ? 200 : 404).end('ok'));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => resolve(server));
  });
}

function stop(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** 1,000 HTTP targets in a child process (their CPU is not this process's); resolves with the port. */
function scaleTargets(dir: string, addresses: string[]): Promise<{ port: number; child: ChildProcess }> {
  const file = path.join(dir, 'targets.cjs');
  writeFileSync(
    file,
    `const http = require('node:http');
     const addresses = JSON.parse(process.argv[2]);
     const handler = (req, res) => res.writeHead(200).end('ok');
     let port = 0;
     (async () => {
       for (const a of addresses) {
         const s = http.createServer(handler);
         await new Promise((ok, ko) => { s.once('error', ko); s.listen(port, a, ok); });
         port = s.address().port;
       }
       process.send({ port });
     })().catch((e) => { console.error(e); process.exit(1); });`,
  );
  const child = fork(file, [JSON.stringify(addresses)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ port: (m as { port: number }).port, child }));
    child.once('exit', (code) => reject(new Error(`targets exited ${code}`)));
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-failover-'));
  const sim = await OvhSimulator.start({ zones: { [ZONE]: [], [SCALE]: [] } });
  const [fast, slow] = sim.dnsServers.map((s) => s.name) as [string, string];
  sim.propagation.setLag(200, fast);
  sim.propagation.setLag(500, slow);
  const db = await benchDatabaseOrEmbedded('dnsplane_bench_failover', path.join(dir, 'pg'));
  const caFile = writeSimulatorCa(sim, dir);
  const server = await startServer(
    loadConfig({
      DATABASE_URL: db.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_OVH_RATE: '1000',
      DNSPLANE_HEALTH_INTERVAL: `${INTERVAL}ms`,
      DNSPLANE_HEALTH_TIMEOUT: `${Math.min(2000, Math.floor(INTERVAL / 2))}ms`,
      DNSPLANE_HEALTH_FAILURES: String(FAILURES),
      DNSPLANE_AUTHORITATIVE_SERVERS: sim.dnsServers.map((s) => `${s.host}:${s.port}`).join(','),
      ...simulatorEnv(sim, caFile),
    }),
    pino({ level: 'warn' }),
  );
  const burners: ChildProcess[] = [];
  let targets: ChildProcess | undefined;
  try {
    // --- 1. failover time ---------------------------------------------------------------------
    let a = await target(A, 0);
    const port = (a.address() as AddressInfo).port;
    const b = await target(B, port);
    const check = { 'dnsplane/health-check': `http://:${port}/healthz` };
    const c1 = zoneClientFor(server, (await createTenant(server.ctx.pool, { name: 'c1', zones: [ZONE, SCALE] })).token);
    const c2 = zoneClientFor(server, (await createTenant(server.ctx.pool, { name: 'c2', zones: [ZONE] })).token);
    const www = (t: string, labels: Record<string, string>) =>
      create(EndpointSchema, { dnsName: `www.${ZONE}`, recordType: 'A', targets: [t], ttl: 60, labels });
    const desired = (endpoints: ReturnType<typeof www>[], zone = ZONE) => ({
      source: { case: 'plan' as const, value: { policy: Policy.SYNC, input: { case: 'desired' as const, value: { zones: [zone], endpoints } } } },
    });
    await c1.apply(desired([www(A, { 'dnsplane/shared': 'true', ...check })]));
    await c2.apply(desired([www(B, check)]));
    const published = () =>
      sim
        .publishedRecords(ZONE)
        .filter((r) => r.subDomain === 'www')
        .map((r) => r.target);
    const answered = async () =>
      Promise.all(
        sim.dnsServers.map(async (s) =>
          (await query({ host: s.host, port: s.port }, { name: `www.${ZONE}`, type: TYPE.A }, { timeoutMs: 1000 })).answers.map((r) =>
            r.data?.kind === 'A' ? r.data.address : '?',
          ),
        ),
      );
    const toOvh: number[] = [];
    const toDns: number[] = [];
    for (let i = 0; i < N; i++) {
      await waitFor('both targets published and answered', async () => published().length === 2 && (await answered()).every((x) => x.length === 2));
      const died = Date.now();
      await stop(a);
      toOvh.push((await waitFor('withdrawn on OVH', () => !published().includes(A))) - died);
      toDns.push((await waitFor('gone from both name servers', async () => (await answered()).every((x) => !x.includes(A)))) - died);
      a = await target(A, port);
      // Each failure here stands for one of its own: the flap count (which would hold a target that
      // went down 3 times in 10 minutes) is forgotten, so the target comes back for the next one.
      await server.ctx.pool.query(`UPDATE target_health SET flaps = 0, held_until = NULL WHERE zone = $1`, [ZONE]);
      process.stderr.write(`failure ${i + 1}/${N}: withdrawn after ${toOvh.at(-1)} ms, invisible after ${toDns.at(-1)} ms\n`);
    }
    await waitFor('restored', () => published().length === 2);
    await stop(a);
    await stop(b);
    const bound = INTERVAL * FAILURES;
    const row = (what: string, xs: number[]) =>
      `${what.padEnd(34)} median ${String(Math.round(median(xs))).padStart(6)} ms   max ${String(Math.max(...xs)).padStart(6)} ms`;
    const out: string[] = [];
    out.push(`1. failover time over ${N} failures (interval ${INTERVAL} ms x ${FAILURES} failures = ${bound} ms, + one apply; name servers lag 200/500 ms)`);
    out.push(`   ${row('death -> withdrawn on OVH', toOvh)}`);
    out.push(`   ${row('death -> gone from both servers', toDns)}`);

    // --- 2. CPU of checking 1,000 targets -------------------------------------------------------
    await server.health?.stop();
    // Part 1's set leaves the checks (its targets are stopped): only the 1,000 are checked now.
    await c1.apply(desired([www(A, {})]));
    await c2.apply(desired([www(B, {})]));
    const addresses = Array.from({ length: 1000 }, (_, i) => `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    const scale = await scaleTargets(dir, addresses);
    targets = scale.child;
    const sets = Array.from({ length: 50 }, (_, s) =>
      create(EndpointSchema, {
        dnsName: `s${s}.${SCALE}`,
        recordType: 'A',
        targets: addresses.slice(s * 20, s * 20 + 20),
        ttl: 60,
        labels: { 'dnsplane/health-check': `http://:${scale.port}/healthz` },
      }),
    );
    await c1.apply(desired(sets, SCALE));
    const settings = { ...DEFAULT_HEALTH, intervalMs: 10_000, timeoutMs: 2000, leaseMs: 60_000 };
    const checker = new HealthChecker(server.ctx, { settings, withdrawals: coreWithdrawals(server.ctx), timer: false, holder: 'bench' });
    await checker.runRound(); // the first round (leases, rows) not measured
    const cpu: number[] = [];
    const wall: number[] = [];
    for (let i = 0; i < 6; i++) {
      const from = process.cpuUsage();
      const t0 = performance.now();
      const r = await checker.runRound();
      wall.push(performance.now() - t0);
      const used = process.cpuUsage(from);
      cpu.push((used.user + used.system) / 1000);
      if (r.checks !== 1000) throw new Error(`a round checked ${r.checks} targets`);
    }
    out.push(
      `2. 1,000 targets (50 sets x 20, HTTP), one round: CPU median ${median(cpu).toFixed(0)} ms (max ${Math.max(...cpu).toFixed(0)}), wall ${median(wall).toFixed(0)} ms;`,
    );
    out.push(`   every 10 s that is ${((median(cpu) / 10_000) * 100).toFixed(1)}% of one core (this process; Postgres not counted)`);
    await checker.stop();

    // --- 3. false withdrawals under load --------------------------------------------------------
    for (let i = 0; i < 2; i++) burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
    const soak = HealthChecker.start(server.ctx, { settings, withdrawals: coreWithdrawals(server.ctx), holder: 'soak' });
    // prom-client hands out its live values: read them as numbers at once.
    const checksBy = async (result: string) =>
      (await server.metrics.registry.getSingleMetric('dnsplane_health_checks_total')!.get()).values.find((v) => v.labels['result'] === result)?.value ?? 0;
    // Every withdrawal that happened, even one restored before the end: the counter (counted once a
    // target left OVH) as well as the rows left. The 50 sets are exclusive sets of 20: a failing
    // target of theirs is withdrawn like one of a shared set (migrations/0022), so 0 here means 0.
    const withdrawals = async () =>
      (await server.metrics.registry.getSingleMetric('dnsplane_target_withdrawals_total')!.get()).values.find((v) => v.labels['reason'] === 'health')?.value ??
      0;
    const [pass0, fail0, withdrawn0] = [await checksBy('pass'), await checksBy('fail'), await withdrawals()];
    const started = Date.now();
    await sleep(SOAK);
    await soak.stop();
    const withdrawn = (await withdrawals()) - withdrawn0;
    const left = (await store.listWithdrawals(server.ctx.pool, SCALE)).length;
    out.push(
      `3. ${Math.round((Date.now() - started) / 1000)} s, every 10 s, 1,000 healthy targets, 2 busy-looping processes on ${(await import('node:os')).cpus().length} cores:`,
    );
    out.push(
      `   ${soak.rounds} rounds, ${(await checksBy('pass')) - pass0} checks passed, ${(await checksBy('fail')) - fail0} failed, ${withdrawn} false withdrawal(s) (goal 0), ${left} still withdrawn at the end`,
    );
    console.log(out.join('\n'));
  } finally {
    for (const p of burners) p.kill();
    targets?.kill();
    await server.close();
    await sim.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
